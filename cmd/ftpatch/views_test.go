package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ftpatch/internal/golden"
	"ftpatch/internal/viewcheck"
	"ftpatch/symbols"
	"ftpatch/trace"
	"ftpatch/views"
)

// The demo's traces (testdata/demo, rebuilt by its Makefile) and the
// program that recorded them.
var (
	demoDir   = filepath.Join("testdata", "demo")
	demoExe   = filepath.Join(demoDir, "calc")
	demoGraph = filepath.Join(demoDir, "function_graph")
	demoCalls = filepath.Join(demoDir, "function")
)

// demoInput is the Input of one of the demo's traces, as the commands
// make it.
func demoInput(t *testing.T, dir string) views.Input {
	t.Helper()
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	syms, _, err := symbols.LoadProcess(&tr.Meta, demoExe)
	if err != nil {
		t.Fatal(err)
	}
	var readErr error
	t.Cleanup(func() {
		if readErr != nil {
			t.Error(readErr)
		}
	})
	return input(tr, syms, &trace.Filter{}, &readErr)
}

// TestViewsDemo: every view of the demo's traces, as the commands write
// them, against its golden file (testdata/demo/golden; -update rewrites
// them: review them); the timelines read back, each call where the trace
// has it; the flame graph drawn, its frames where they belong.
func TestViewsDemo(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
		check  func(t *testing.T, out []byte) []byte // checks the output, returns what the golden holds
	}{
		{"chrome.json", []string{"dump", "--chrome", "--exe", demoExe, demoGraph}, timeline(demoGraph, viewcheck.Chrome)},
		{"perfetto.txt", []string{"dump", "--perfetto", "--exe", demoExe, demoGraph}, perfetto(demoGraph)},
		{"folded.txt", []string{"dump", "--flame-graph", "--exe", demoExe, demoGraph}, nil},
		{"folded-calls.txt", []string{"dump", "--flame-graph", "--sample-count", "--exe", demoExe, demoGraph}, nil},
		{"folded-per-thread.txt", []string{"dump", "--flame-graph", "--per-thread", "--exe", demoExe, demoGraph}, nil},
		{"flame.svg", []string{"dump", "--svg", "--exe", demoExe, demoGraph}, flame},
		{"graph.txt", []string{"graph", "--exe", demoExe, demoGraph}, nil},
		{"graph-parse_factor.txt", []string{"graph", "--exe", demoExe, demoGraph, "parse_factor"}, nil},
		{"info.txt", []string{"info", demoGraph}, nil},
		{"function-chrome.json", []string{"dump", "--chrome", "--exe", demoExe, demoCalls}, timeline(demoCalls, viewcheck.Chrome)},
		{"function-perfetto.txt", []string{"dump", "--perfetto", "--exe", demoExe, demoCalls}, perfetto(demoCalls)},
		{"function-folded-calls.txt", []string{"dump", "--flame-graph", "--sample-count", "--exe", demoExe, demoCalls}, nil},
		{"function-flame-calls.svg", []string{"dump", "--svg", "--sample-count", "--exe", demoExe, demoCalls}, flame},
		{"function-info.txt", []string{"info", demoCalls}, nil},
	} {
		t.Run(c.golden, func(t *testing.T) {
			var out bytes.Buffer
			errOut, err := traceCmd(&out, c.args...)
			if err != nil || errOut != "" {
				t.Fatalf("ftpatch %s: %v\n%s", strings.Join(c.args, " "), err, errOut)
			}
			got := out.Bytes()
			if c.check != nil {
				got = c.check(t, got)
			}
			golden.Check(t, filepath.Join(demoDir, "golden", c.golden), got)
		})
	}
}

// timeline checks a timeline view against the trace: read back by read,
// it holds every call of the trace (names, threads, times, nesting).
func timeline(dir string, read func([]byte) ([]viewcheck.Call, error)) func(*testing.T, []byte) []byte {
	return func(t *testing.T, out []byte) []byte {
		got, err := read(out)
		if err != nil {
			t.Fatal(err)
		}
		if d := viewcheck.Diff(viewcheck.Expected(demoInput(t, dir)), got); d != "" {
			t.Errorf("the view's calls differ from the trace's: %s", d)
		}
		return out
	}
}

// perfetto checks the Perfetto view as a timeline and gives its golden,
// the packets as text.
func perfetto(dir string) func(*testing.T, []byte) []byte {
	return func(t *testing.T, out []byte) []byte {
		timeline(dir, viewcheck.Perfetto)(t, out)
		text, err := viewcheck.Dump(out)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(text)
	}
}

// flame checks a flame graph drawn: the bottom frame spans the graph,
// main stands on it and has its colour at its centre, and above the
// highest frame is background.
func flame(t *testing.T, out []byte) []byte {
	svg, err := viewcheck.ParseSVG(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := viewcheck.Render(out)
	if err != nil {
		t.Fatal(err)
	}
	var all, main *viewcheck.Frame
	top := float64(svg.Height)
	for i, f := range svg.Frames {
		switch {
		case strings.HasPrefix(f.Title, "all:"):
			all = &svg.Frames[i]
		case strings.HasPrefix(f.Title, "main:"):
			main = &svg.Frames[i]
		}
		top = min(top, f.Y)
	}
	if all == nil || main == nil {
		t.Fatalf("no frame for all or main: %+v", svg.Frames)
	}
	if all.X != 10 || all.W != float64(svg.Width-20) || main.Y != all.Y-16 || main.X < all.X || main.X+main.W > all.X+all.W {
		t.Errorf("all %+v, main %+v: want all across the graph, main on it", *all, *main)
	}
	for _, f := range []*viewcheck.Frame{all, main} {
		if got := viewcheck.At(img, int(f.X+f.W/2), int(f.Y+f.H/2)); got != f.Fill {
			t.Errorf("%s: the centre of its frame is %v, want %v", f.Title, got, f.Fill)
		}
	}
	if got := viewcheck.At(img, svg.Width/2, int(top)-3); got != svg.Background {
		t.Errorf("above the highest frame: %v, want the background %v", got, svg.Background)
	}
	return out
}

// TestViewsUsage: a view asked wrongly is a usage error (exit status 2)
// that says what to do; a function with no call is a problem (1) with
// the names closest to it.
func TestViewsUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"dump", demoGraph}, exitUsage, "give one of --chrome"},
		{[]string{"dump", "--chrome", "--svg", demoGraph}, exitUsage, "give one of --chrome"},
		{[]string{"dump", "--flame-graph", "--exe", demoExe, demoCalls}, exitUsage, "--sample-count"},
		{[]string{"dump", "--svg", "--exe", demoExe, demoCalls}, exitUsage, "--sample-count"},
		{[]string{"dump", "--flame-graph", "--offcpu", "--exe", demoExe, demoGraph}, exitUsage, "the trace has no scheduler events"},
		{[]string{"dump", "--svg", "--offcpu", "--exe", demoExe, demoGraph}, exitUsage, "unless given --no-sched"},
		{[]string{"dump", "--chrome", "--offcpu", "--exe", demoExe, demoGraph}, exitUsage, "give it with --flame-graph or --svg"},
		{[]string{"graph", "--exe", demoExe, demoCalls}, exitUsage, "FTRACE=function_graph"},
		{[]string{"graph", "--exe", demoExe, demoGraph, "parse_facter"}, exitProblem, "did you mean parse_factor?"},
		{[]string{"graph", "--exe", demoExe, demoGraph, "main", "extra"}, exitUsage, "accepts at most 2 arg"},
		{[]string{"graph", "--sort", "self", "--exe", demoExe, demoGraph}, exitUsage, `--sort: unknown sort key "self" (want total, calls or first)`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			_, err := traceCmd(&out, c.args...)
			if err == nil || exitCode(err) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %v (exit %d), want exit %d saying %q", err, exitCode(err), c.code, c.msg)
			}
			if errors.Is(err, views.ErrNoFunc) && out.Len() != 0 {
				t.Errorf("wrote %q before failing", out.String())
			}
		})
	}
}

// TestPerfettoNotToTerminal: the binary protobuf is not written to a
// terminal (a pseudo-terminal's master here), which it would garble.
func TestPerfettoNotToTerminal(t *testing.T) {
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal to write to: %v", err)
	}
	defer tty.Close()
	_, err = traceCmd(tty, "dump", "--perfetto", "--exe", demoExe, demoGraph)
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "redirect it to a file") {
		t.Errorf("error %v, want a usage error saying to redirect it", err)
	}
}

// TestCallsOneWord: replay's and report's footers count the trace's
// calls in the word info uses, and the same number: "# 27 calls in"
// where info says "27 calls in all", "1 call" where it says "1 call".
func TestCallsOneWord(t *testing.T) {
	footer := regexp.MustCompile(`(?m)^# (\d+) (\w+) in \d+ threads?;`)
	total := regexp.MustCompile(`(?m)^threads: +\d+, (\d+) (\w+) in all`)
	one := craftTrace(t, "function", "", map[string][]uint64{"7-1.trace": {
		3<<62 | 1<<58, 200, // TIME: the clock at 200
		0x10, 0x20, // a call of 0x10 from 0x20
	}})
	for _, dir := range []string{demoGraph, demoCalls, one} {
		var info bytes.Buffer
		if errOut, err := traceCmd(&info, "info", dir); err != nil {
			t.Fatalf("info %s: %v\n%s", dir, err, errOut)
		}
		want := total.FindStringSubmatch(info.String())
		if want == nil || want[2] != map[bool]string{true: "call", false: "calls"}[want[1] == "1"] {
			t.Fatalf("info %s: no line counting its calls:\n%s", dir, info.String())
		}
		for _, cmd := range []string{"replay", "report"} {
			var out bytes.Buffer
			args := []string{cmd, dir}
			if dir != one {
				args = append(args, "--exe", demoExe)
			}
			if errOut, err := traceCmd(&out, args...); err != nil {
				t.Fatalf("%s %s: %v\n%s", cmd, dir, err, errOut)
			}
			got := footer.FindStringSubmatch(out.String())
			if got == nil || got[1] != want[1] || got[2] != want[2] {
				t.Errorf("%s %s: footer %q, want \"# %s %s in ...\" as info counts them", cmd, dir, got, want[1], want[2])
			}
		}
	}
}

// TestViewsHelp: the help of the commands that read traces says what
// they do now: report's --diff reading (report NEW --diff BASE, the
// change from BASE), graph's --sort, and the pager each pages through.
func TestViewsHelp(t *testing.T) {
	pager := []string{"--no-pager", "$FTPATCH_PAGER, else $PAGER, else less -FRX"}
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{"replay", append([]string{"On a terminal the output goes through a pager: $FTPATCH_PAGER, else\n$PAGER, else less -FRX"}, pager...)},
		{"report", append([]string{"report DIR --diff BASE compares DIR, the new trace, with BASE, the base\none",
			"change\nfrom BASE to DIR (DIR's less BASE's), so a function that runs faster in\nDIR shows a negative change",
			"ftpatch report after.data --diff before.data   # the change from before.data to after.data",
			"--diff BASE            compare DIR (the new trace) with the base trace directory BASE: per function, BASE's figures, DIR's and the change from BASE to DIR",
			"through a pager"}, pager...)},
		{"graph", append([]string{"--sort orders a path's callees and FUNC's backtraces alike: by total\ntime (the default), the most first, or with --sort calls by calls",
			"order of callees and backtraces: total (time) or calls, the most first", "through a pager"}, pager...)},
		{"info", append([]string{"through a pager"}, pager...)},
	} {
		out, err := ftpatch(c.cmd, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", c.cmd, err)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("ftpatch %s --help does not say %q", c.cmd, w)
			}
		}
	}
}
