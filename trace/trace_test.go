package trace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// writeStream writes a stream of Call records at the timestamps ts.
func writeStream(t *testing.T, dir string, pid, tid int, ts ...uint64) {
	t.Helper()
	var recs []Record
	for _, x := range ts {
		recs = append(recs, callRec(x, 0x1000, 0x2000))
	}
	b := stream3(pid, tid, recs...)
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
		nanos    float64 // Nanos(last), when not 0
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
		// A rate the architecture gave (arm64): 250 MHz, 4 ns a tick, so
		// 1400 ticks in is 5600 ns in, whatever the pair says.
		{name: "unended-hz", lines: "clock tsc\nended 0\ntsc_hz 250000000\n", last: 1500, unended: true, tscEnd: 1500, monoEnd: 6600, nanos: 5600},
		{name: "ended-garbage", lines: "clock tsc\nended yes\n", errIsFmt: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			meta := "format ftrt-trace 3\ntracer function\n" + c.lines +
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
			if got := m.Nanos(c.last); c.nanos != 0 && got != c.nanos {
				t.Errorf("Nanos(%d) = %v, want %v", c.last, got, c.nanos)
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
// started within its own, and the one of its own process after an exec
// in place (DIR.PID of its pid); not another run's, nor a trace moved
// aside, nor a directory without metadata.
func TestBeside(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ftrace.data")
	for name, run := range map[string]struct{ monoStart, pid int }{
		"":         {1000, 7},   // the trace itself: 1000-2000 ns
		".123":     {1500, 123}, // started while it ran
		".7":       {5000, 7},   // its process, exec'd in place after it ended
		".456":     {5000, 456}, // another run's
		".8":       {5000, 7},   // another run's, by a process of the same pid
		".9":       {500, 9},    // another run's, before
		".old":     {1500, 7},   // moved aside
		".789.old": {1500, 789},
		".42":      {-1, 0}, // no metadata
	} {
		d := dir + name
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if run.monoStart < 0 {
			continue
		}
		meta := fmt.Sprintf("format ftrt-trace 3\ntracer function\nclock tsc\npid %d\ntsc_start 100\ntsc_end 600\nmono_start_ns %d\nmono_end_ns %d\n", run.pid, run.monoStart, run.monoStart+1000)
		if err := os.WriteFile(filepath.Join(d, "meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.Beside(), []string{dir + ".123", dir + ".7"}; !slices.Equal(got, want) {
		t.Errorf("Beside() = %q, want %q", got, want)
	}
}

// goodMeta is the metadata of a finished function trace: every line the
// reader needs.
const goodMeta = "format ftrt-trace 3\nrecords words\nclock tsc\ntracer function\nexe /bin/true\nended 1\npid 7\nbias 0\n" +
	"tsc_start 100\ntsc_end 600\nmono_start_ns 1000\nmono_end_ns 2000\n"

// streamBytes is a stream's header for pid 7, thread tid, and Call
// records at the timestamps ts: a TIME, then 16 bytes a call.
func streamBytes(tid int, ts ...uint64) []byte {
	var recs []Record
	for _, x := range ts {
		recs = append(recs, callRec(x, 0x1000, 0x2000))
	}
	return stream3(7, tid, recs...)
}

// TestIncomplete: a trace whose files a full disk (or a program that died
// while writing them) left empty or cut short reads as far as they go,
// and Warnings says once each, naming the directory, what is missing;
// so do the runtime's counts of what it lost. Metadata that is empty, or
// cut before what the records need, is an error that says so, never
// "another version of the runtime".
func TestIncomplete(t *testing.T) {
	whole := streamBytes(1, 200, 300)
	for _, c := range []struct {
		name    string
		meta    string
		streams map[string][]byte
		err     string   // the error, when Read must fail
		records int      // records read
		warns   []string // one warning holding each, in order
	}{
		{name: "whole", meta: goodMeta, streams: map[string][]byte{"7-1.trace": whole}, records: 2},
		{name: "empty meta", meta: "", err: "meta: incomplete trace: the metadata is empty: the disk was full, or the program died while writing it"},
		{name: "meta cut in its first line", meta: "format ftrt-tr", err: "meta: incomplete trace: the metadata is cut short in its first line"},
		{name: "meta cut before the clock", meta: goodMeta[:strings.Index(goodMeta, "tsc_start")+5],
			err: "meta: incomplete trace: the metadata ends after line 8 without its tsc_start line: cut short"},
		{name: "meta of zeros", meta: "\x00\x00\x00\x00\x00\x00\x00\x00\n", err: "meta:1: incomplete trace: NUL bytes where text was expected"},
		{name: "meta of another version", meta: "format ftrt-trace 5\n", err: "another version of the runtime"},
		{name: "meta with no format", meta: "tracer function\n", err: "meta: malformed trace: no format line"},
		{name: "meta with a bad tracer", meta: strings.Replace(goodMeta, "tracer function", "tracer nop", 1), err: `meta:4: malformed trace: tracer "nop"`},
		// A partial last line is left out, not misread as dropped 1.
		{name: "meta cut after the clock", meta: goodMeta + "dropped 1", streams: map[string][]byte{"7-1.trace": whole}, records: 2,
			warns: []string{"incomplete trace: the metadata is cut short after line 12"}},
		{name: "empty stream", meta: goodMeta, streams: map[string][]byte{"7-1.trace": whole, "7-2.trace": nil, "7-3.trace": []byte("ftrtre")}, records: 2,
			warns: []string{"incomplete trace: 7-2.trace, 7-3.trace empty or shorter than a stream's header"}},
		{name: "stream cut in a record", meta: goodMeta, streams: map[string][]byte{"7-1.trace": whole[:len(whole)-5], "7-2.trace": streamBytes(2, 400)[:16+8]}, records: 1,
			warns: []string{"incomplete trace: 7-1.trace, 7-2.trace cut short: a partial last record"}},
		{name: "stream ending in zeros", meta: goodMeta, streams: map[string][]byte{"7-1.trace": append(whole, make([]byte, 4096)...)}, records: 2,
			warns: []string{"incomplete trace: 7-1.trace cut short"}},
		{name: "not a stream", meta: goodMeta, streams: map[string][]byte{"7-1.trace": []byte("ELF\x02")}, err: "7-1.trace: malformed trace: no stream header"},
		{name: "losses counted", meta: goodMeta + "dropped 3\noverflow 40\nstopped 2\nlost_bytes 4096\nlost_threads 1\n",
			streams: map[string][]byte{"7-1.trace": whole}, records: 2,
			warns: []string{
				"events lost: 3 calls dropped",
				"events lost: 4096 bytes of records could not be written",
				"events lost: 1 thread's records were not written",
				"events lost: 40 calls not graphed: 2 threads nested calls deeper than the shadow stack holds",
			}},
		{name: "killed, cut and lost", meta: strings.Replace(goodMeta, "ended 1", "ended 0", 1) + "lost_bytes 8\n",
			streams: map[string][]byte{"7-1.trace": whole[:len(whole)-1]}, records: 1,
			warns: []string{ErrUnended.Error(), "7-1.trace cut short", "8 bytes of records"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeTrace(t, c.meta, c.streams)
			tr, err := Read(dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), dir+"/") || strings.Contains(err.Error(), "another version") != strings.Contains(c.err, "another version") {
					t.Fatalf("Read: %v, want an error naming %s/... with %q", err, dir, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range tr.Streams {
				n += len(s.Records)
			}
			if n != c.records {
				t.Errorf("%d records read, want %d", n, c.records)
			}
			if tr.Meta.Dropped != 0 && c.name == "meta cut after the clock" {
				t.Errorf("dropped %d read from a partial line", tr.Meta.Dropped)
			}
			warns := tr.Warnings()
			if len(warns) != len(c.warns) {
				t.Fatalf("warnings %q, want %d: %q", warns, len(c.warns), c.warns)
			}
			for i, w := range warns {
				if !strings.Contains(w.Error(), c.warns[i]) || !strings.HasPrefix(w.Error(), dir+": ") {
					t.Errorf("warning %q, want one naming %s with %q", w, dir, c.warns[i])
				}
			}
		})
	}
}

// TestNotRegular: a trace directory holding something other than a
// regular file where a file of the trace goes (a FIFO stream, which
// would block a read for ever, a directory or a symbolic link as the
// metadata or a stream) gets one error naming it, read or not; and a
// trace that is not a directory says so.
func TestNotRegular(t *testing.T) {
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	dir := func(p string) error { return os.Mkdir(p, 0o755) }
	link := func(to string) func(p string) error { return func(p string) error { return os.Symlink(to, p) } }
	for _, c := range []struct {
		name string // of the file planted in the trace directory; "" the directory itself
		make func(path string) error
		want string
	}{
		{"7-1.trace", fifo, "a FIFO, not a regular file"},
		{"7-1.trace", dir, "a directory, not a regular file"},
		{"7-1.trace", link("meta"), "a symbolic link, not a regular file"},
		{"meta", dir, "a directory, not a regular file"},
		{"meta", link("/dev/zero"), "a symbolic link, not a regular file"},
		{"meta", fifo, "a FIFO, not a regular file"},
		{"", func(p string) error { return os.WriteFile(p, []byte(goodMeta), 0o644) }, "not a directory"},
	} {
		t.Run(c.name+" "+c.want, func(t *testing.T) {
			trace := filepath.Join(t.TempDir(), "ftrace.data")
			if err := os.Mkdir(trace, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(trace, "meta"), []byte(goodMeta), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(trace, c.name)
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			_, err := Read(trace)
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read: %v, want an error naming %s: %s", err, path, c.want)
			}
		})
	}
}

// TestCmdline: the metadata's command line reads back argument by
// argument: spaces, backslashes and unprintable bytes escaped, empty
// arguments kept; a bad escape is an error naming the argument.
func TestCmdline(t *testing.T) {
	for _, c := range []struct {
		val  string
		want []string
		err  string
	}{
		{val: "prog -x 1", want: []string{"prog", "-x", "1"}},
		{val: `prog a\x20b \x5c\x0a`, want: []string{"prog", "a b", "\\\n"}},
		{val: "prog  last", want: []string{"prog", "", "last"}},
		{val: `prog \xc3\xa9`, want: []string{"prog", "é"}},
		{val: `prog \xZZ`, err: `argument 2: "\\xZZ" is not \xHH`},
		{val: `prog a\x`, err: `argument 2: "\\x" is not \xHH`},
	} {
		got, err := unescapeArgs(c.val)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%q: %v, want error %q", c.val, err, c.err)
		case c.err == "" && (err != nil || !slices.Equal(got, c.want)):
			t.Errorf("%q: %q, %v; want %q", c.val, got, err, c.want)
		}
	}
}
