package funclist_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"ftpatch/funclist"
	"ftpatch/model"
	"ftpatch/trace"
	"ftpatch/views"
)

// TestParseReport reads the reports `ftpatch report` writes, for both
// tracers, made by the writers the command uses.
func TestParseReport(t *testing.T) {
	tr := &trace.Trace{Meta: trace.Meta{Tracer: "function", Sites: 9, Enabled: 3}}
	var fn bytes.Buffer
	if err := views.WriteCounts(&fn, tr, []model.Count{{Func: "fib", Calls: 21891}, {Func: "main", Calls: 1}, {Func: "0x1234", Calls: 2}, {Func: "strlen" + views.LibraryMark, Calls: 3}}, 21897); err != nil {
		t.Fatal(err)
	}
	var graph bytes.Buffer
	tr.Meta.Tracer = "function_graph"
	if err := views.WriteStats(&graph, tr, []model.Stat{{Func: "main", Calls: 1, Total: 2.5e6, Self: 1e3}, {Func: "helper", Calls: 7, Total: 900, Self: 900}, {Func: "malloc@libc.so.6" + views.LibraryMark, Calls: 2, Total: 80, Self: 80}}, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"function", fn.String(), []string{"fib", "main", "strlen"}},
		{"function_graph", graph.String(), []string{"main", "helper", "malloc@libc.so.6"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := funclist.ParseReport("r", strings.NewReader(c.text))
			if err != nil {
				t.Fatalf("%v\n%s", err, c.text)
			}
			var got []string
			for _, g := range l.Globs {
				got = append(got, g.String())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("functions %q, want %q from\n%s", got, c.want, c.text)
			}
		})
	}
	for _, c := range []struct{ name, text, want string }{
		{"a list, not a report", "parse_*\n", "r:1: not an `ftpatch report` output"},
		{"no rows, no header", "", "r: not an `ftpatch report` output"},
		{"bad count", "CALLS  FUNCTION\nmany  fib\n", `r:2: want a call count before the function, found "many"`},
		{"NUL", "CALLS  FUNCTION\n1 f\x00\n", "r:2: NUL byte"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := funclist.ParseReport("r", strings.NewReader(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
