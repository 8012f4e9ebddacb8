package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/runtime/abi"
)

// stream4 is a format 4 stream file: its header (pid, tid), recs, and
// then, when sum is not nil, its SUMMARY record as the runtime writes it
// (its position word what its place in the stream is, unless pos >= 0
// says otherwise).
func stream4(pid, tid int, sum *Summary, pos int, recs ...Record) []byte {
	le := binary.LittleEndian
	e := &encoder{b: append([]byte(magic4), le.AppendUint32(le.AppendUint32(nil, uint32(pid)), uint32(tid))...)}
	for _, r := range recs {
		e.record(r)
	}
	if sum != nil {
		e.put(summaryWords(sum, (len(e.b)-headerSize)/8, pos)...)
	}
	return e.b
}

// summaryWords are the words of sum's SUMMARY record at word at of its
// stream; pos >= 0 is the position word it says instead.
func summaryWords(sum *Summary, at, pos int) []uint64 {
	w := make([]uint64, abi.SumWords)
	w[0] = abi.RecExt<<abi.RecKindShift | abi.ExtSummary<<abi.RecExtBits | (abi.SumWords - 1)
	w[abi.SumCalls], w[abi.SumEntries], w[abi.SumExits], w[abi.SumUnwound] = sum.Calls, sum.Entries, sum.Exits, sum.Unwound
	w[abi.SumFirst], w[abi.SumLast] = sum.First, sum.Last
	if sum.Counted {
		w[abi.SumFlags] = abi.SumCounted
	}
	var name [abi.SumNameBytes]byte
	copy(name[:], sum.Name)
	w[abi.SumName], w[abi.SumName+1] = binary.LittleEndian.Uint64(name[:8]), binary.LittleEndian.Uint64(name[8:])
	w[abi.SumPos] = uint64(at)
	if pos >= 0 {
		w[abi.SumPos] = uint64(pos)
	}
	w[abi.SumEnd] = w[0]
	return w
}

// TestCounts: each thread's counts come from its stream's SUMMARY where
// the stream ends with one that counts it all, and are then what reading
// its records gives (a thread of a graph trace with a call unwound, one
// still running, and calls of the tracer's fast paths in short and long
// form); elsewhere they are read from the records, the summary's name
// kept: a summary that does not count the stream (the flight
// recorder's), a stream that does not end with one (one in the middle,
// which reads as no event; one whose position word is wrong; none at
// all), a format 3 stream.
func TestCounts(t *testing.T) {
	graphMeta := strings.Replace(strings.Replace(goodMeta, "tracer function", "tracer function_graph", 1), "ftrt-trace 3", "ftrt-trace 4", 1)
	// main [200, 600]: a [210, 300] (b [220, 250]), c [310, ...] unwound at 320, d [330, ...] still running.
	recs := []Record{entryRec(200, 0x1000), entryRec(210, 0x1100), entryRec(220, 0x1200), exitRec(250), exitRec(300),
		entryRec(310, 0x1300), unwoundRec(320), entryRec(330, 1<<50), exitRec(400000)}
	read := ThreadCounts{Pid: 7, Tid: 1, Calls: 5, Unwound: 1, Open: 1}
	whole := &Summary{Entries: 5, Exits: 3, Unwound: 1, First: 200, Last: 400000, Counted: true, Name: "worker-1"}
	uncounted := *whole
	uncounted.Counted = false
	// A summary after some of the records, then the rest (a TIME first).
	middle := append(stream4(7, 1, whole, -1, recs[:5]...), stream4(7, 1, nil, -1, recs[5:]...)[headerSize:]...)
	for _, c := range []struct {
		name   string
		stream []byte
		want   ThreadCounts
	}{
		{"summed", stream4(7, 1, whole, -1, recs...), ThreadCounts{Pid: 7, Tid: 1, Name: "worker-1", Calls: 5, Unwound: 1, Open: 1, Summed: true}},
		{"not counted", stream4(7, 1, &uncounted, -1, recs...), ThreadCounts{Pid: 7, Tid: 1, Name: "worker-1", Calls: 5, Unwound: 1, Open: 1}},
		{"position wrong", stream4(7, 1, whole, 3, recs...), read},
		{"none", stream4(7, 1, nil, -1, recs...), read},
		{"one in the middle", middle, read},
		{"format 3", stream3(7, 1, recs...), read},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := graphMeta
			if c.name == "format 3" {
				meta = strings.Replace(graphMeta, "ftrt-trace 4", "ftrt-trace 3", 1)
			}
			dir := writeTrace(t, meta, map[string][]byte{"7-1.trace": c.stream})
			tr, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []ThreadCounts
			var readErr error
			for tc := range tr.Counts(&readErr) {
				got = append(got, tc)
			}
			if readErr != nil {
				t.Fatal(readErr)
			}
			want := c.want
			want.First, want.Last = tr.Meta.Nanos(200), tr.Meta.Nanos(400000)
			if len(got) != 1 || got[0] != want {
				t.Errorf("counts %+v, want %+v", got, want)
			}
		})
	}
}

// TestSummaryFormat3: a format 3 stream holds no SUMMARY: its sub-kind
// is reserved there.
func TestSummaryFormat3(t *testing.T) {
	b := append(stream3(7, 1, entryRec(200, 0x1000)), words(summaryWords(&Summary{Entries: 1}, 1, -1)...)...)
	dir := writeTrace(t, goodMeta, map[string][]byte{"7-1.trace": b})
	if _, err := Read(dir); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "a record of reserved kind 3.8") {
		t.Errorf("Read: %v, want the reserved kind 3.8", err)
	}
}

// TestUnendedSummary: a trace whose program was killed ends at the last
// record of its streams, the time a stream's summary gives for a thread
// that ended before (its records not read for it).
func TestUnendedSummary(t *testing.T) {
	meta := strings.Replace(strings.Replace(goodMeta, "ended 1", "ended 0", 1), "ftrt-trace 3", "ftrt-trace 4", 1)
	sum := &Summary{Calls: 1, First: 200, Last: 900, Counted: true}
	dir := writeTrace(t, meta, map[string][]byte{
		"7-1.trace": stream4(7, 1, nil, -1, callRec(200, 0x1000, 0x2000), callRec(700, 0x1000, 0x2000)),
		"7-2.trace": stream4(7, 2, sum, -1, callRec(200, 0x1000, 0x2000)), // the summary's last says 900
	})
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Meta.TSCEnd != 900 {
		t.Errorf("the trace ends at %d, want 900", tr.Meta.TSCEnd)
	}
}

// TestMetaEnd: the metadata's lines of how the program ended and what
// it used read into Meta; a bad exit code is an error naming its line.
func TestMetaEnd(t *testing.T) {
	meta := goodMeta + "exit_code 3\ncomm my prog\nru_utime_us 1500\nru_stime_us 20\nru_maxrss_kb 4096\nru_minflt 7\nru_majflt 1\n" +
		"ru_inblock 8\nru_oublock 9\nru_nvcsw 10\nru_nivcsw 11\n"
	tr, err := Open(writeTrace(t, meta, nil))
	if err != nil {
		t.Fatal(err)
	}
	m := &tr.Meta
	want := Usage{UserUs: 1500, SysUs: 20, MaxRSSKB: 4096, MinorFaults: 7, MajorFaults: 1, InBlocks: 8, OutBlocks: 9, Voluntary: 10, Involuntary: 11}
	if !m.Exited || m.ExitCode != 3 || m.Comm != "my prog" || m.Usage == nil || *m.Usage != want {
		t.Errorf("exited %v code %d comm %q usage %+v", m.Exited, m.ExitCode, m.Comm, m.Usage)
	}
	if tr, err := Open(writeTrace(t, goodMeta, nil)); err != nil || tr.Meta.Exited || tr.Meta.Usage != nil {
		t.Errorf("without those lines: %v, exited %v, usage %+v", err, tr.Meta.Exited, tr.Meta.Usage)
	}
	dir := writeTrace(t, goodMeta+"exit_code 256\n", nil)
	if _, err := Open(dir); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "meta:13: malformed trace: exit_code \"256\"") {
		t.Errorf("exit_code 256: %v", err)
	}
}

// TestExitFile: what ftpatch record writes of the program's end reads
// back as it was, with the metadata's permissions; it is never written
// over a file there; one not as record writes it is an error naming it.
func TestExitFile(t *testing.T) {
	u := Usage{UserUs: 1, SysUs: 2, MaxRSSKB: 3, MinorFaults: 4, MajorFaults: 5, InBlocks: 6, OutBlocks: 7, Voluntary: 8, Involuntary: 9}
	for _, e := range []ExitStatus{{Code: 3, Usage: u}, {Signal: 9}, {Signal: 11, Core: true, Usage: u}, {Code: 0}} {
		t.Run(fmt.Sprintf("%+v", e), func(t *testing.T) {
			dir := writeTrace(t, goodMeta, nil)
			if err := os.Chmod(filepath.Join(dir, "meta"), 0o640); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadExitStatus(dir); got != nil || err != nil {
				t.Fatalf("before: %+v, %v; want none", got, err)
			}
			if err := WriteExitStatus(dir, e); err != nil {
				t.Fatal(err)
			}
			got, err := ReadExitStatus(dir)
			if err != nil || got == nil || *got != e {
				t.Errorf("read back %+v, %v; want %+v", got, err, e)
			}
			if fi, err := os.Stat(filepath.Join(dir, ExitFile)); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, %v; want the metadata's, 0640", fi.Mode(), err)
			}
			if err := WriteExitStatus(dir, ExitStatus{Code: 1}); err == nil {
				t.Error("written over the file there")
			}
			if got, _ := ReadExitStatus(dir); got == nil || *got != e {
				t.Errorf("after a second write, %+v; want %+v", got, e)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 2 {
				t.Errorf("the directory holds %d files, want meta and exit", len(ents))
			}
		})
	}
	for _, c := range []struct{ name, text, err string }{
		{"neither", "ru_utime_us 1\n", "want one of exit_code and signal"},
		{"both", "exit_code 1\nsignal 9\n", "want one of exit_code and signal"},
		{"code too big", "exit_code 256\n", "exit:1: malformed exit file: exit code 256"},
		{"signal 0", "signal 0\n", "exit:1: malformed exit file: signal 0"},
		{"not a number", "exit_code x\n", "exit:1: malformed exit file: want `key number`"},
		{"too big", strings.Repeat("ru_nvcsw 1\n", 1000), "malformed exit file: 11000 bytes, more than 4096"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeTrace(t, goodMeta, map[string][]byte{ExitFile: []byte(c.text)})
			if _, err := ReadExitStatus(dir); !errors.Is(err, ErrExitFile) || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), filepath.Join(dir, ExitFile)) {
				t.Errorf("%v, want an error naming %s with %q", err, ExitFile, c.err)
			}
		})
	}
	dir := writeTrace(t, goodMeta, nil)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, ExitFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadExitStatus(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a symbolic link: %v", err)
	}
}

// TestCountsSeeds: on the real traces under testdata/traces (seed.c,
// each tracer, a longjmp among its calls), each thread's counts are the
// same from its stream's summary as from its records; every stream of
// the format 4 traces has a summary that counts it, none of format 3's.
func TestCountsSeeds(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "traces", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no traces under testdata/traces (%v): make -C trace/testdata", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tr, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var readErr error
			var summed, read []ThreadCounts
			for c := range tr.Counts(&readErr) {
				summed = append(summed, c)
			}
			for th := range tr.Threads(noNames{}, &Filter{}, &readErr) {
				read = append(read, CountEvents(th))
			}
			if readErr != nil {
				t.Fatal(readErr)
			}
			if len(summed) != len(read) || len(read) < 2 {
				t.Fatalf("%d threads counted, %d read; want the same, at least 2", len(summed), len(read))
			}
			for i, c := range summed {
				if c.Summed != (tr.Meta.Format == abi.MetaFormat) {
					t.Errorf("thread %d: counted from a summary %v, in a trace of %s", c.Tid, c.Summed, tr.Meta.Format)
				}
				if c.Summed && c.Name != "seed" {
					t.Errorf("thread %d: named %q, want seed", c.Tid, c.Name)
				}
				c.Name, c.Summed = "", false
				if c != read[i] {
					t.Errorf("thread %d: %+v from its summary, %+v from its records", c.Tid, c, read[i])
				}
			}
		})
	}
}
