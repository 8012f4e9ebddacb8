package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeStream writes a stream of Call records at the timestamps ts.
func writeStream(t *testing.T, dir string, pid, tid int, ts ...uint64) {
	t.Helper()
	le := binary.LittleEndian
	b := append([]byte("ftrtrec2"), le.AppendUint32(le.AppendUint32(nil, uint32(pid)), uint32(tid))...)
	for _, x := range ts {
		b = le.AppendUint64(b, x) // kind Call (0) << 62 | ts
		b = le.AppendUint64(b, 0x1000)
		b = le.AppendUint64(b, 0x2000)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%d.trace", pid, tid)), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUnended: a trace whose metadata was written while the program ran
// (`ended 0`: killed) reads, ends at its last record with the clock's
// rate from the metadata's own clock pair, and warns naming the
// directory; `ended 1`, and a metadata with no `ended` line (a runtime
// that wrote it only at exit), read as complete, their end as written.
func TestUnended(t *testing.T) {
	for _, c := range []struct {
		name     string
		lines    string // after the common head
		last     uint64 // the last record's timestamp
		unended  bool
		tscEnd   uint64
		monoEnd  uint64
		errIsFmt bool
	}{
		{name: "no-ended-line", lines: "clock tsc\n", last: 1500, tscEnd: 600, monoEnd: 2000},
		{name: "ended", lines: "clock tsc\nended 1\n", last: 1500, tscEnd: 600, monoEnd: 2000},
		// 500 ticks in 1000 ns at the metadata's writing: 2 ns a tick, so
		// the last record, 1400 ticks in, is 2800 ns in.
		{name: "unended-tsc", lines: "clock tsc\nended 0\n", last: 1500, unended: true, tscEnd: 1500, monoEnd: 3800},
		// Nothing recorded after the metadata was written: its pair stands.
		{name: "unended-before-mark", lines: "clock tsc\nended 0\n", last: 400, unended: true, tscEnd: 600, monoEnd: 2000},
		// On the mono clock records are ns: no rate needed.
		{name: "unended-mono", lines: "clock mono\nended 0\n", last: 1500, unended: true, tscEnd: 1500, monoEnd: 2400},
		{name: "ended-garbage", lines: "clock tsc\nended yes\n", errIsFmt: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			meta := "format ftrt-trace 2\ntracer function\n" + c.lines +
				"pid 7\ntsc_start 100\ntsc_end 600\nmono_start_ns 1000\nmono_end_ns 2000\n"
			if err := os.WriteFile(filepath.Join(dir, "meta"), []byte(meta), 0o644); err != nil {
				t.Fatal(err)
			}
			writeStream(t, dir, 7, 7, 200, c.last)
			writeStream(t, dir, 7, 8, 300, c.last-100)
			tr, err := Read(dir)
			if c.errIsFmt {
				if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "meta:4") {
					t.Fatalf("Read: %v, want ErrFormat naming meta:4", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := tr.Meta
			if m.Unended != c.unended || m.TSCEnd != c.tscEnd || m.MonoEnd != c.monoEnd {
				t.Errorf("unended %v, tsc_end %d, mono_end_ns %d; want %v, %d, %d", m.Unended, m.TSCEnd, m.MonoEnd, c.unended, c.tscEnd, c.monoEnd)
			}
			warns := tr.Warnings()
			switch {
			case !c.unended && len(warns) != 0:
				t.Errorf("warnings %v for a trace that ended", warns)
			case c.unended && (len(warns) != 1 || !errors.Is(warns[0], ErrUnended) || !strings.HasPrefix(warns[0].Error(), dir+": ")):
				t.Errorf("warnings %v, want one ErrUnended naming %s", warns, dir)
			}
		})
	}
}

// TestBeside: the traces named beside one are those in DIR.PID whose run
// started within its own; not another run's, nor a trace moved aside, nor
// a directory without metadata.
func TestBeside(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ftrace.data")
	for name, monoStart := range map[string]int{
		"":         1000, // the trace itself: 1000-2000 ns
		".123":     1500, // started while it ran
		".456":     5000, // another run's
		".old":     1500, // moved aside
		".789.old": 1500,
		".42":      -1, // no metadata
	} {
		d := dir + name
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if monoStart < 0 {
			continue
		}
		meta := fmt.Sprintf("format ftrt-trace 2\ntracer function\nclock tsc\npid 7\ntsc_start 100\ntsc_end 600\nmono_start_ns %d\nmono_end_ns %d\n", monoStart, monoStart+1000)
		if err := os.WriteFile(filepath.Join(d, "meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Beside(); len(got) != 1 || got[0] != dir+".123" {
		t.Errorf("Beside() = %q, want [%s.123]", got, dir)
	}
}
