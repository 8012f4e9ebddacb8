package views_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"ftpatch/internal/tracetest"
	"ftpatch/symbols"
	"ftpatch/trace"
	"ftpatch/views"
)

// Hostile names: one clears the screen (ESC [2J), one writes the
// terminal's clipboard (OSC 52, ended by BEL), one holds a C1 CSI and a
// newline, one a byte that is not UTF-8.
const (
	clearScreen = "evil\x1b[2J"
	clipboard   = "clip\x1b]52;c;ZXZpbA==\a"
	c1Newline   = "c1\u009b2J\nline"
	notUTF8     = "bad\xff"
)

// TestNamesEscaped: every view of a trace whose names are hostile (the
// binary's symbols, the program's path, name, modules, command line,
// build-id and config as the trace's metadata holds them, a warning)
// writes no control character: each shows escaped (package escape), in
// every text view, and in the JSON and SVG too, where DEL and C1
// controls would pass.
func TestNamesEscaped(t *testing.T) {
	syms := symbols.New([]symbols.Func{
		{Start: tracetest.FuncAddr("f0"), End: tracetest.FuncAddr("f0") + 0x100, Name: "main"},
		{Start: tracetest.FuncAddr("f1"), End: tracetest.FuncAddr("f1") + 0x100, Name: clearScreen},
		{Start: tracetest.FuncAddr("f2"), End: tracetest.FuncAddr("f2") + 0x100, Name: clipboard},
		{Start: tracetest.FuncAddr("f3"), End: tracetest.FuncAddr("f3") + 0x100, Name: c1Newline},
		{Start: tracetest.FuncAddr("f4"), End: tracetest.FuncAddr("f4") + 0x100, Name: notUTF8},
	})
	hostileMeta := "exe /tmp/" + clearScreen + "\n" +
		"comm " + clipboard + "\n" +
		"build_id " + clearScreen + "\n" +
		"config " + clipboard + "\n" +
		`cmdline ./prog \x1b[2J` + "\n" +
		"module 0 0 0 0 0 1 1 patched " + clearScreen + " /lib/" + clipboard + ".so\n"
	for _, tracer := range []string{"function_graph", "function"} {
		var steps []tracetest.Step
		ts := uint64(10)
		add := func(k trace.Kind, fn string) {
			steps = append(steps, tracetest.Step{K: k, Fn: fn, TS: ts})
			ts += 10
		}
		if tracer == "function" {
			for _, fn := range []string{"f0", "f1", "f2", "f3", "f4"} {
				add(trace.Call, fn)
			}
		} else {
			add(trace.Entry, "f0")
			for _, fn := range []string{"f1", "f2", "f3", "f4"} {
				add(trace.Entry, fn)
				add(trace.Exit, "")
			}
			add(trace.Exit, "")
		}
		dir := tracetest.WriteDir(t, tracer, map[int][]tracetest.Step{1: steps})
		meta, err := os.ReadFile(filepath.Join(dir, "meta"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "meta"), append(meta, hostileMeta...), 0o600); err != nil {
			t.Fatal(err)
		}
		open := func(t *testing.T) views.Input {
			tr, err := trace.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			f := &trace.Filter{}
			var readErr error
			return views.Input{Meta: &tr.Meta, Trace: tr, Names: syms, Filter: f, Threads: tr.Threads(syms, f, &readErr), Counts: tr.Counts(&readErr)}
		}
		for _, view := range []string{"replay", "report", "diff", "chrome", "flame-graph", "svg", "graph", "info"} {
			t.Run(tracer+"/"+view, func(t *testing.T) {
				opt := views.Options{SampleCount: tracer == "function", Warnings: func() []error { return []error{errors.New("a warning naming " + clipboard)} }}
				if view == "diff" {
					base := open(t)
					opt.Against = &base
				}
				var out bytes.Buffer
				err := views.Write(&out, view, open(t), opt)
				if errors.Is(err, views.ErrNoGraph) || errors.Is(err, views.ErrNoDurations) {
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if bad := controlIn(out.String()); bad != "" {
					t.Errorf("%s in the output:\n%s", bad, out.String())
				}
				if !strings.Contains(out.String(), `\x1b[2J`) {
					t.Errorf("no escaped name in the output:\n%s", out.String())
				}
			})
		}
	}
}

// controlIn names the first control character in s other than a newline
// or a tab (C0, DEL, C1), or byte that is not UTF-8; or says "".
func controlIn(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return "a byte that is not UTF-8"
		case r == '\n' || r == '\t':
		case r < 0x20 || r >= 0x7f && r < 0xa0:
			return fmt.Sprintf("control character %U", r)
		}
	}
	return ""
}
