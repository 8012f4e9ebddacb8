package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ftpatch/runtime/abi"
)

// schedEv is a scheduler event's word: its time and kind.
func schedEv(ts uint64, kind int) uint64 { return ts<<abi.SchedKindBits | uint64(kind) }

// schedChunk is a chunk of the scheduler events' file: thread tid's
// events.
func schedChunkBytes(tid int, evs ...uint64) []byte {
	le := binary.LittleEndian
	b := le.AppendUint64(nil, uint64(tid)|uint64(len(evs))<<32)
	for _, e := range evs {
		b = le.AppendUint64(b, e)
	}
	return b
}

// schedBytes is process pid's scheduler events' file of the chunks.
func schedBytes(pid int, chunks ...[]byte) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(le.AppendUint32([]byte(abi.SchedMagic), uint32(pid)), 0)
	for _, c := range chunks {
		b = append(b, c...)
	}
	return b
}

const graphMeta = "format ftrt-trace 3\nrecords words\nclock tsc\ntracer function_graph\nexe /bin/true\nended 1\npid 7\nbias 0\n" +
	"tsc_start 100\ntsc_end 1100\nmono_start_ns 1000\nmono_end_ns 2000\nsched on\nsched_switches 3\n"

// TestSchedMerge: each time off the CPU comes among the thread's
// records where it happened, from chunks interleaved with another
// thread's, and one still running at the end ends with the trace.
func TestSchedMerge(t *testing.T) {
	f, g := uint64(0x1000), uint64(0x2000)
	dir := writeTrace(t, graphMeta, map[string][]byte{
		"7-1.trace": stream3(7, 1, entryRec(200, f), entryRec(250, g), exitRec(400), exitRec(500)),
		"7-2.trace": stream3(7, 2, entryRec(210, f), exitRec(220)),
		"7.sched": schedBytes(7,
			schedChunkBytes(1, schedEv(300, abi.SchedSleep), schedEv(350, abi.SchedIn)),
			schedChunkBytes(2, schedEv(230, abi.SchedPreempt)),
			schedChunkBytes(1, schedEv(420, abi.SchedPreempt), schedEv(430, abi.SchedIn), schedEv(600, abi.SchedSleep), schedEv(610, abi.SchedSleep), schedEv(700, abi.SchedIn),
				// Past the trace's end (1100): ends there; after it: none.
				schedEv(1050, abi.SchedSleep), schedEv(1150, abi.SchedIn), schedEv(1200, abi.SchedSleep), schedEv(1300, abi.SchedIn))),
	})
	tr, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tr.Streams[0].Records {
		if o, ok := r.OffCPU(); ok {
			got = append(got, fmt.Sprintf("off %d-%d %s", o.Out, o.In, o.Why))
			continue
		}
		got = append(got, fmt.Sprintf("%d@%d", r.Kind(), r.TS))
	}
	want := []string{"1@200", "1@250", "off 300-350 sleeping", "2@400", "off 420-430 pre-empted", "2@500", "off 610-700 sleeping", "off 1050-0 sleeping"}
	if !slices.Equal(got, want) {
		t.Errorf("thread 1's records:\n got %q\nwant %q", got, want)
	}
	last := tr.Streams[1].Records[len(tr.Streams[1].Records)-1]
	if o, ok := last.OffCPU(); !ok || o.Out != 230 || o.In != 0 || o.Why != Preempted {
		t.Errorf("thread 2's last record %+v, want pre-empted at 230 until the end", last)
	}
	if !tr.HasSched() {
		t.Errorf("HasSched false")
	}

	// The walk hands them to the sink between the calls around them.
	var s offSink
	if err := tr.WalkStream(0, fakeNames{}, &Filter{}, func(uint64) Sink { return &s }); err != nil {
		t.Fatal(err)
	}
	wantWalk := []string{"enter 0x1000 1", "enter 0x2000 2", "off sleeping 200-250 depth 2", "close 0x2000", "off pre-empted 320-330 depth 1", "close 0x1000", "off sleeping 510-600 depth 0", "off sleeping 950-1000 depth 0"}
	if !slices.Equal(s.got, wantWalk) {
		t.Errorf("walk:\n got %q\nwant %q", s.got, wantWalk)
	}
	s.got = nil
	if err := tr.WalkStream(1, fakeNames{}, &Filter{}, func(uint64) Sink { return &s }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"enter 0x1000 1", "close 0x1000", "off pre-empted 130-1000 depth 0"}; !slices.Equal(s.got, want) {
		t.Errorf("walk of thread 2: got %q, want %q (off until the trace's end)", s.got, want)
	}

	// Funcs: a time off the CPU outside every chosen call is left out;
	// Hide: one inside a hidden call is its kept caller's.
	s.got = nil
	if err := tr.WalkStream(0, fakeNames{}, &Filter{Hide: []string{"0x2000"}}, func(uint64) Sink { return &s }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"enter 0x1000 1", "off sleeping 200-250 depth 1", "off pre-empted 320-330 depth 1", "close 0x1000", "off sleeping 510-600 depth 0", "off sleeping 950-1000 depth 0"}; !slices.Equal(s.got, want) {
		t.Errorf("walk hiding 0x2000: got %q, want %q", s.got, want)
	}
	s.got = nil
	if err := tr.WalkStream(0, fakeNames{}, &Filter{Funcs: []string{"0x2000"}}, func(uint64) Sink { return &s }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"enter 0x2000 1", "off sleeping 200-250 depth 1", "close 0x2000"}; !slices.Equal(s.got, want) {
		t.Errorf("walk of 0x2000 alone: got %q, want %q", s.got, want)
	}
}

// TestSchedBatches: more times off the CPU between two records than a
// batch holds come out in order over several batches, none lost.
func TestSchedBatches(t *testing.T) {
	n := batchRecords*2 + 17
	evs := make([]uint64, 0, 2*n)
	for i := range n {
		evs = append(evs, schedEv(uint64(1000+3*i), abi.SchedSleep), schedEv(uint64(1001+3*i), abi.SchedIn))
	}
	dir := writeTrace(t, strings.Replace(graphMeta, "tsc_end 1100", "tsc_end 1000000", 1), map[string][]byte{
		"7-1.trace": stream3(7, 1, entryRec(500, 0x1000), exitRec(uint64(1000+3*n))),
		"7.sched":   schedBytes(7, schedChunkBytes(1, evs[:7]...), schedChunkBytes(1, evs[7:]...)),
	})
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	offs, batches := 0, 0
	var kinds []Kind
	err = tr.EachRecord(0, func(recs []Record) {
		batches++
		for _, r := range recs {
			if r.TS < last {
				t.Fatalf("record at %d after one at %d", r.TS, last)
			}
			last = r.TS
			if _, ok := r.OffCPU(); ok {
				offs++
			} else {
				kinds = append(kinds, r.Kind())
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if offs != n || !slices.Equal(kinds, []Kind{Entry, Exit}) || batches < 3 {
		t.Errorf("%d times off the CPU in %d batches, calls %v; want %d, at least 3 batches, an entry and an exit", offs, batches, kinds, n)
	}
}

// TestSchedContexts: a time off the CPU while the thread ran in a
// context goes to that context's calls.
func TestSchedContexts(t *testing.T) {
	meta := graphMeta + "contexts 1\n"
	dir := writeTrace(t, meta, map[string][]byte{
		"7-1.trace": stream3(7, 1, entryRec(200, 0x1000), switchRec(210, 1), entryRec(220, 0x2000), switchRec(300, 0), exitRec(400), switchRec(410, 1), exitRec(420), switchRec(430, 0)),
		"7.sched":   schedBytes(7, schedChunkBytes(1, schedEv(230, abi.SchedSleep), schedEv(240, abi.SchedIn), schedEv(310, abi.SchedSleep), schedEv(320, abi.SchedIn))),
	})
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sinks := map[uint64]*offSink{0: {}, 1: {}}
	if err := tr.WalkContexts(0, fakeNames{}.Namer(), &Filter{}, func(ctx uint64) Sink { return sinks[ctx] }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"enter 0x1000 1", "off sleeping 210-220 depth 1", "close 0x1000"}; !slices.Equal(sinks[0].got, want) {
		t.Errorf("own stack: got %q, want %q", sinks[0].got, want)
	}
	if want := []string{"enter 0x2000 1", "off sleeping 130-140 depth 1", "close 0x2000"}; !slices.Equal(sinks[1].got, want) {
		t.Errorf("context 1: got %q, want %q", sinks[1].got, want)
	}
}

// TestSchedBad: a file cut in a chunk reads up to there and is warned
// of; one that is not a scheduler events file, or holds a chunk of no
// thread, is an error naming it.
func TestSchedBad(t *testing.T) {
	stream := stream3(7, 1, entryRec(200, 0x1000), exitRec(500))
	good := schedBytes(7, schedChunkBytes(1, schedEv(300, abi.SchedSleep), schedEv(350, abi.SchedIn)))
	dir := writeTrace(t, graphMeta, map[string][]byte{"7-1.trace": stream, "7.sched": append(good, schedChunkBytes(1, schedEv(400, abi.SchedSleep), schedEv(410, abi.SchedIn))[:20]...)})
	tr, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	offs := 0
	for _, r := range tr.Streams[0].Records {
		if _, ok := r.OffCPU(); ok {
			offs++
		}
	}
	ws := tr.Warnings()
	if offs != 1 || len(ws) != 1 || !errors.Is(ws[0], ErrIncomplete) || !strings.Contains(ws[0].Error(), "7.sched") {
		t.Errorf("cut file: %d times off the CPU, warnings %v; want 1 and one naming 7.sched", offs, ws)
	}
	for name, b := range map[string][]byte{
		"magic":     append([]byte("ftrtrec4"), good[8:]...),
		"no thread": schedBytes(7, schedChunkBytes(0, schedEv(300, abi.SchedSleep))),
	} {
		dir := writeTrace(t, graphMeta, map[string][]byte{"7-1.trace": stream, "7.sched": b})
		if _, err := Open(dir); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), filepath.Join(dir, "7.sched")) {
			t.Errorf("%s: Open: %v, want ErrFormat naming the file", name, err)
		}
	}
	// A planted link is not followed.
	dir = writeTrace(t, graphMeta, map[string][]byte{"7-1.trace": stream})
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "7.sched")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "7.sched") {
		t.Errorf("a link: Open: %v, want an error naming it", err)
	}
	// The metadata's losses are warned of.
	dir = writeTrace(t, graphMeta+"sched_lost 5\n", map[string][]byte{"7-1.trace": stream})
	tr, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ws := tr.Warnings(); len(ws) != 1 || !errors.Is(ws[0], ErrLost) || !strings.Contains(ws[0].Error(), "5 scheduler events lost") {
		t.Errorf("sched_lost 5: warnings %v", ws)
	}
}

// offSink records what a walk hands it, times in ns.
type offSink struct{ got []string }

func (s *offSink) Enter(fn, src string, ns float64, depth int) {
	s.got = append(s.got, fmt.Sprintf("enter %s %d", fn, depth))
}
func (s *offSink) Close(how EndKind, fn string, start, ns float64) {
	s.got = append(s.got, "close "+fn)
}
func (s *offSink) OffCPU(why OffReason, start, end float64, depth int) {
	s.got = append(s.got, fmt.Sprintf("off %s %.0f-%.0f depth %d", why, start, end, depth))
}

// fakeNames names an address by itself.
type fakeNames struct{}

func (fakeNames) FuncAt(addr, ts uint64) string   { return fmt.Sprintf("%#x", addr) }
func (fakeNames) NameAt(addr, ts uint64) string   { return fmt.Sprintf("%#x", addr) }
func (fakeNames) SourceAt(addr, ts uint64) string { return "" }
func (fakeNames) Namer() Namer                    { return fakeNames{} }
