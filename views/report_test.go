package views_test

import (
	"bytes"
	"strings"
	"testing"

	"ftpatch/internal/tracetest"
	"ftpatch/trace"
	"ftpatch/views"
)

// TestDiff: report NEW --diff BASE's view, of two traces whose times
// are known (1 tick = 1 ns): headed with the base trace's name and the
// new one's; each function's total time, self time and calls in the
// base, in the new trace, and the change from base to new, negative for
// the function the new trace runs faster (f0: 1000 ns in the base, 400
// in the new) and for the calls it makes fewer of (f1); a function only
// one trace called is "new" or "gone". A function trace's diff has the
// calls only.
func TestDiff(t *testing.T) {
	entry := func(fn string, ts uint64) tracetest.Step { return tracetest.Step{K: trace.Entry, Fn: fn, TS: ts} }
	exit := func(ts uint64) tracetest.Step { return tracetest.Step{K: trace.Exit, TS: ts} }
	call := func(fn string, ts uint64) tracetest.Step { return tracetest.Step{K: trace.Call, Fn: fn, TS: ts} }
	for _, c := range []struct {
		name      string
		tracer    string
		base, new []tracetest.Step
		want      string
	}{
		{
			name:   "function_graph",
			tracer: "function_graph",
			// f0 (1000 ns) calls f1 twice (100 ns each) and f2 (200 ns).
			base: []tracetest.Step{entry("f0", 1000), entry("f1", 1100), exit(1200), entry("f1", 1300), exit(1400), entry("f2", 1500), exit(1700), exit(2000)},
			// f0 (400 ns) calls f1 once (100 ns) and f3 (50 ns).
			new: []tracetest.Step{entry("f0", 1000), entry("f1", 1100), exit(1200), entry("f3", 1300), exit(1350), exit(1400)},
			want: `# base: BASE
# new:  NEW
# CHANGE is new - base: negative where the new trace took less time or made fewer calls
TOTAL BASE   TOTAL NEW       CHANGE             SELF BASE    SELF NEW       CHANGE  CALLS BASE   CALLS NEW    CHANGE  FUNCTION
  1.000 us    0.400 us    -0.600 us    -60.0%    0.600 us    0.250 us    -0.350 us           1           1        +0  f0
  0.200 us    0.000 us    -0.200 us      gone    0.200 us    0.000 us    -0.200 us           1           0        -1  f2
  0.200 us    0.100 us    -0.100 us    -50.0%    0.200 us    0.100 us    -0.100 us           2           1        -1  f1
  0.000 us    0.050 us    +0.050 us       new    0.000 us    0.050 us    +0.050 us           0           1        +1  f3
`,
		},
		{
			name:   "function",
			tracer: "function",
			base:   []tracetest.Step{call("f0", 100), call("f1", 200), call("f1", 300)},
			new:    []tracetest.Step{call("f0", 100), call("f0", 150), call("f1", 200), call("f2", 250), call("f2", 300), call("f2", 350)},
			want: `# base: BASE
# new:  NEW
# CHANGE is new - base: negative where the new trace took less time or made fewer calls
CALLS BASE   CALLS NEW    CHANGE  FUNCTION
         0           3        +3  f2
         1           2        +1  f0
         2           1        -1  f1
`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			names := tracetest.Names(4)
			open := func(steps []tracetest.Step) views.Input {
				tr, err := trace.Open(tracetest.WriteDir(t, c.tracer, map[int][]tracetest.Step{1: steps}))
				if err != nil {
					t.Fatal(err)
				}
				return views.Input{Meta: &tr.Meta, Trace: tr, Names: names, Filter: &trace.Filter{}}
			}
			base, new := open(c.base), open(c.new)
			var out bytes.Buffer
			if err := views.Write(&out, "diff", new, views.Options{Against: &base}); err != nil {
				t.Fatal(err)
			}
			// The directories by the names the test gives them.
			got := strings.NewReplacer(base.Trace.Dir, "BASE", new.Trace.Dir, "NEW").Replace(out.String())
			if got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
