// Package testfmt reports a `go test -json` run while it goes: a line
// when a package's tests start and one when it ends, with its time; the
// whole output of what failed (a test, a build, a panic, a timeout), as
// go test prints it; and, at every tick, a line naming the packages and
// tests still running, so that a long quiet stretch (the end-to-end
// package runs for minutes) never looks like a hang.
//
// A Report is fed the stream line by line (Line) and ticked by its
// caller (Tick); End closes it and says whether the run passed. It does
// no I/O but writing its lines, and reads the time only through the
// clock it is given, so recorded streams replay to fixed text.
package testfmt

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// An Event is one line of `go test -json` (cmd/test2json's TestEvent,
// with the build events go test adds).
type Event struct {
	Time    time.Time
	Action  string // start, run, pause, cont, output, pass, fail, skip; build-output, build-fail
	Package string
	Test    string
	Elapsed float64 // seconds, on pass, fail and skip
	Output  string
	// ImportPath names the package a build-output or build-fail event
	// is about ("pkg [pkg.test]"); a package whose test binary did not
	// build ends failed with FailedBuild naming it.
	ImportPath  string
	FailedBuild string
}

// A Report turns a stream of events into the lines a person follows.
type Report struct {
	w     io.Writer
	now   func() time.Time
	begin time.Time

	pkgs   map[string]*pkg
	builds map[string]*strings.Builder // build output by ImportPath
	shown  map[string]bool             // build outputs already printed

	failed          []string // packages failed, in the order they ended
	passed, skipped int
	odd             []string // stdout lines that were not events
}

// A pkg is a package whose test binary has started and not ended.
type pkg struct {
	name    string
	started time.Time // by the report's clock
	told    bool      // its start line is printed
	tests   map[string]*testState
	out     []chunk // every output, in order
}

// A testState is where one test (or subtest) is.
type testState struct {
	started time.Time // when it began, or went on after waiting to run in parallel
	paused  bool      // waiting to run in parallel
	result  string    // "", pass, fail or skip
}

// A chunk is one output event: the test that wrote it ("" for the
// package's own) and its text.
type chunk struct {
	test, text string
}

// New returns a Report writing to w, reading the time from now (which
// stamps every line with the time since New).
func New(w io.Writer, now func() time.Time) *Report {
	return &Report{w: w, now: now, begin: now(), pkgs: map[string]*pkg{}, builds: map[string]*strings.Builder{}, shown: map[string]bool{}}
}

// Line takes one line of the stream. A line that is not an event (a test
// binary can write to stdout before the testing package frames its
// output) is kept and printed at the end.
func (r *Report) Line(line []byte) {
	s := strings.TrimRight(string(line), "\n")
	if strings.TrimSpace(s) == "" {
		return
	}
	var e Event
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &e) != nil || e.Action == "" {
		r.odd = append(r.odd, s)
		return
	}
	r.Event(e)
}

// Event takes one event.
func (r *Report) Event(e Event) {
	switch e.Action {
	case "build-output":
		b := r.builds[e.ImportPath]
		if b == nil {
			b = &strings.Builder{}
			r.builds[e.ImportPath] = b
		}
		b.WriteString(e.Output)
		return
	case "build-fail":
		return // printed under the package it failed (FailedBuild)
	}
	if e.Package == "" {
		return
	}
	p := r.pkgs[e.Package]
	if p == nil {
		p = &pkg{name: e.Package, started: r.now(), tests: map[string]*testState{}}
		r.pkgs[e.Package] = p
	}
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.out = append(p.out, chunk{"", e.Output})
		case "pass", "fail", "skip":
			r.end(p, e)
		}
		return
	}
	ts := p.tests[e.Test]
	if ts == nil {
		ts = &testState{started: r.now()}
		p.tests[e.Test] = ts
	}
	switch e.Action {
	case "run":
		if !p.told {
			p.told = true
			r.printf("run   %s", p.name)
		}
	case "pause":
		ts.paused = true
	case "cont":
		ts.paused, ts.started = false, r.now()
	case "output":
		p.out = append(p.out, chunk{e.Test, e.Output})
	case "pass", "fail", "skip":
		ts.result = e.Action
	}
}

// end reports a package's end: its line, and for a failure every output
// of the tests that failed or never ended (a panic or a timeout ends the
// binary with tests still running) and the package's own.
func (r *Report) end(p *pkg, e Event) {
	delete(r.pkgs, p.name)
	switch {
	case e.Action == "skip":
		r.skipped++
		r.printf("?     %s [no test files]", p.name)
	case e.Action == "pass" && p.cached():
		r.passed++
		r.printf("ok    %s (cached)", p.name)
	case e.Action == "pass":
		r.passed++
		r.printf("ok    %s %s", p.name, seconds(e.Elapsed))
	case e.FailedBuild != "":
		r.failed = append(r.failed, p.name)
		r.printf("FAIL  %s [build failed]", p.name)
		r.printBuild(e.FailedBuild)
	default:
		r.failed = append(r.failed, p.name)
		r.printf("FAIL  %s %s", p.name, seconds(e.Elapsed))
		r.printFailed(p)
	}
}

// cached reports whether go test took p's result from its cache.
func (p *pkg) cached() bool {
	for _, c := range p.out {
		if c.test == "" && strings.HasSuffix(c.text, "(cached)\n") {
			return true
		}
	}
	return false
}

// printFailed writes the output of p's failed and unfinished tests and
// p's own, in the order it came, without the lines by which go test -json
// frames each test (=== RUN, PAUSE, CONT, NAME): what `go test -v`
// prints for them.
func (r *Report) printFailed(p *pkg) {
	var b strings.Builder
	for _, c := range p.out {
		if c.test != "" {
			if ts := p.tests[c.test]; ts != nil && (ts.result == "pass" || ts.result == "skip") {
				continue
			}
			if framing(c.text) {
				continue
			}
		}
		b.WriteString(c.text)
	}
	text := b.String()
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	io.WriteString(r.w, text)
}

// framing reports whether s is one of the lines by which a verbose test
// binary says which test runs next.
func framing(s string) bool {
	for _, f := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(s, f) {
			return true
		}
	}
	return false
}

// printBuild writes the compiler's output for the build path once.
func (r *Report) printBuild(path string) {
	if r.shown[path] {
		return
	}
	r.shown[path] = true
	if b := r.builds[path]; b != nil {
		io.WriteString(r.w, b.String())
	}
}

// Tick writes a line naming every package still running, for how long,
// and the tests running in each (the innermost; not those waiting to run
// in parallel).
func (r *Report) Tick() {
	if len(r.pkgs) == 0 {
		if done := r.passed + r.skipped + len(r.failed); done > 0 {
			r.printf("still building: %s done, none running", packages(done))
		} else {
			r.printf("still building: no package's tests have started")
		}
		return
	}
	now := r.now()
	var parts []string
	for _, name := range sortedKeys(r.pkgs) {
		p := r.pkgs[name]
		part := fmt.Sprintf("%s (%s", name, clock(now.Sub(p.started)))
		if running := p.running(); len(running) > 0 {
			const most = 4
			if len(running) > most {
				running = append(running[:most], fmt.Sprintf("%d more", len(running)-most))
			}
			part += ": " + strings.Join(running, ", ")
		}
		parts = append(parts, part+")")
	}
	r.printf("still running: %s", strings.Join(parts, "; "))
}

// running names p's tests under way, the longest running first: not
// those waiting for a parallel slot, nor a test whose own function is done
// and that waits for its subtests.
func (p *pkg) running() []string {
	var names []string
	parent := map[string]bool{}
	for name, ts := range p.tests {
		if ts.result != "" {
			continue
		}
		if !ts.paused {
			names = append(names, name)
		}
		for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
			parent[name[:i]] = true
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return parent[n] })
	slices.SortFunc(names, func(a, b string) int {
		if c := p.tests[a].started.Compare(p.tests[b].started); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return names
}

// End closes the report: a package the stream left unfinished (its
// test binary killed, or go test itself) is reported as failed with its
// output, then a summary line. It returns whether every package passed
// (or had no tests); exitErr, the error go test ended with (nil if it
// exited 0 or the stream was read from elsewhere), fails the run too.
func (r *Report) End(exitErr error) bool {
	for _, name := range sortedKeys(r.pkgs) {
		p := r.pkgs[name]
		r.failed = append(r.failed, p.name)
		r.printf("FAIL  %s: ended without a result after %s", p.name, clock(r.now().Sub(p.started)))
		r.printFailed(p)
	}
	r.pkgs = map[string]*pkg{}
	for _, path := range sortedKeys(r.builds) {
		r.printBuild(path) // a build's warnings, or a failure no package named
	}
	for _, s := range r.odd {
		fmt.Fprintln(r.w, s)
	}
	total := r.passed + r.skipped + len(r.failed)
	switch {
	case len(r.failed) > 0:
		r.printf("FAIL: %d of %s failed: %s", len(r.failed), packages(total), strings.Join(r.failed, ", "))
	case exitErr != nil:
		r.printf("FAIL: go test: %v", exitErr)
	case total == 0:
		r.printf("FAIL: no package was tested")
		return false
	default:
		r.printf("ok: %s passed (%d without tests)", packages(r.passed), r.skipped)
	}
	return len(r.failed) == 0 && exitErr == nil
}

// printf writes one line stamped with the time since the report began.
func (r *Report) printf(format string, args ...any) {
	fmt.Fprintf(r.w, "%6s %s\n", clock(r.now().Sub(r.begin)), fmt.Sprintf(format, args...))
}

// clock writes d as minutes and seconds, m:ss.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// packages says how many packages n is.
func packages(n int) string {
	if n == 1 {
		return "1 package"
	}
	return fmt.Sprintf("%d packages", n)
}

// seconds writes an elapsed time in seconds as go test does.
func seconds(s float64) string { return fmt.Sprintf("%.3fs", s) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
