package trace

import (
	"fmt"
	"testing"
)

// TestContextExits: a stream whose thread switches between contexts
// (CONTEXT records, which Read gives as an Entry whose IP has ctxMark)
// pairs each exit with the innermost open entry of the context it runs
// in: a coroutine that yields inside co (context 1) while the thread's
// own stack runs sched, and returns there later, closes co and not
// sched. (The model's TestGraphContexts graphs such a thread.)
func TestContextExits(t *testing.T) {
	const sched, co, leaf = 0x1000, 0x2000, 0x3000
	b := stream3(1, 7,
		entryRec(10, sched),
		switchRec(20, 1), // into context 1
		entryRec(30, co),
		entryRec(40, leaf),
		exitRec(50),      // leaf
		switchRec(60, 0), // yield to the thread's own stack
		exitRec(70),      // sched, not co
		switchRec(80, 1),
		exitRec(90), // co
	)
	meta := "format ftrt-trace 3\ntracer function_graph\nclock tsc\nended 1\npid 1\ntsc_start 0\ntsc_end 1000\nmono_start_ns 0\nmono_end_ns 1000\n"
	tr, err := Read(writeTrace(t, meta, map[string][]byte{"1-7.trace": b}))
	if err != nil {
		t.Fatal(err)
	}
	var exits []uint64
	for _, r := range tr.Streams[0].Records {
		if r.Kind() == Exit {
			exits = append(exits, r.IP)
		}
	}
	if fmt.Sprint(exits) != fmt.Sprint([]uint64{leaf, sched, co}) {
		t.Errorf("exits name %#x, want leaf, sched, co", exits)
	}
}
