package testfmt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/golden"
)

// The streams in testdata were recorded from the module in testdata/src,
// one package (or a few) at a time and then all of it at once:
//
//	cd testdata/src
//	go test -json -count=1 -timeout 2s ./pass >../pass.json
//	go test -json -count=1 ./uses1 ./uses2 >../depfail.json
//	go test -json -count=1 -timeout 2s ./... >../all.json
//
// cut.json is timeout.json's first lines: a stream that stops with a
// package's tests under way, as when go test itself is killed.

// replay feeds the stream in file to a Report whose clock is the time of
// the last event read, ticking once halfway through a minute later (and
// the clock stays a minute later), and returns what it wrote and End's
// answer.
func replay(t *testing.T, file string, exitErr error) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	var now time.Time
	var skew time.Duration
	for _, l := range lines { // the clock starts at the first event's time
		var e Event
		if json.Unmarshal(l, &e) == nil && !e.Time.IsZero() {
			now = e.Time
			break
		}
	}
	var out strings.Builder
	r := New(&out, func() time.Time { return now })
	for i, l := range lines {
		var e Event
		if json.Unmarshal(l, &e) == nil && !e.Time.IsZero() {
			now = e.Time.Add(skew)
		}
		r.Line(l)
		if i == len(lines)/2 {
			skew = time.Minute
			now = now.Add(skew)
			r.Tick()
		}
	}
	ok := r.End(exitErr)
	return out.String(), ok
}

// TestReport: each recorded stream reports as its golden says (a
// package's start and end lines, the output of what failed as go test
// prints it, a tick naming what runs), and End says whether the run
// passed.
func TestReport(t *testing.T) {
	for _, c := range []struct {
		name    string
		exitErr error // go test's, as the command reports it
		ok      bool
	}{
		{"pass", nil, true},
		{"notests", nil, true},
		{"fail", errors.New("exit status 1"), false},
		{"buildfail", errors.New("exit status 1"), false},
		{"depfail", errors.New("exit status 1"), false},
		{"vetfail", errors.New("exit status 1"), false},
		{"panics", errors.New("exit status 1"), false},
		{"timeout", errors.New("exit status 1"), false},
		{"cut", errors.New("signal: killed"), false},
		{"all", errors.New("exit status 1"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := replay(t, filepath.Join("testdata", c.name+".json"), c.exitErr)
			golden.Check(t, filepath.Join("testdata", c.name+".golden"), []byte(got))
			if ok != c.ok {
				t.Errorf("End: %v, want %v", ok, c.ok)
			}
		})
	}
}

// TestExitStatus: a stream of passing packages still fails the run when
// go test did not exit 0, and a run that tested nothing fails.
func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		name, file string
		exitErr    error
		want       string // End's last line
		ok         bool
	}{
		{"passed", "pass.json", nil, "ok: 1 package passed (0 without tests)", true},
		{"go test failed", "pass.json", errors.New("exit status 2"), "FAIL: go test: exit status 2", false},
		{"nothing tested", "", errors.New("exit status 1"), "FAIL: go test: exit status 1", false},
		{"empty stream", "", nil, "FAIL: no package was tested", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out string
			var ok bool
			if c.file != "" {
				out, ok = replay(t, filepath.Join("testdata", c.file), c.exitErr)
			} else {
				var b strings.Builder
				ok = New(&b, time.Now).End(c.exitErr)
				out = b.String()
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if last := strings.TrimSpace(lines[len(lines)-1]); !strings.HasSuffix(last, c.want) || ok != c.ok {
				t.Errorf("End: %v, last line %q; want %v, %q", ok, last, c.ok, c.want)
			}
		})
	}
}

// TestFailedOutputWhole: a failed package's report holds every output
// line of its failed tests as the stream gave it (what go test -v
// prints), and none of its passing tests'.
func TestFailedOutputWhole(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "fail.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r := New(&out, time.Now)
	var want, never []string
	result := map[string]string{}
	var events []Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
		if e.Test != "" && (e.Action == "pass" || e.Action == "fail") {
			result[e.Test] = e.Action
		}
		r.Line(sc.Bytes())
	}
	r.End(nil)
	for _, e := range events {
		if e.Action != "output" || e.Test == "" || framing(e.Output) {
			continue
		}
		if result[e.Test] == "fail" {
			want = append(want, e.Output)
		} else {
			never = append(never, e.Output)
		}
	}
	if len(want) == 0 || len(never) == 0 {
		t.Fatalf("fail.json has %d lines of failed tests and %d of passing ones: want some of each", len(want), len(never))
	}
	got := out.String()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("the report lacks the failed test's line %q:\n%s", w, got)
		}
	}
	for _, n := range never {
		if strings.Contains(got, n) {
			t.Errorf("the report has the passing test's line %q:\n%s", n, got)
		}
	}
}

// TestTickBuilding: a tick before any package's tests started, or
// between packages, says go test is still building, not that nothing
// happens.
func TestTickBuilding(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out strings.Builder
	r := New(&out, func() time.Time { return now })
	now = now.Add(time.Minute)
	r.Tick()
	r.Event(Event{Action: "start", Package: "p"})
	r.Event(Event{Action: "pass", Package: "p", Elapsed: 1})
	now = now.Add(time.Minute)
	r.Tick()
	want := "  1:00 still building: no package's tests have started\n" +
		"  1:00 ok    p 1.000s\n" +
		"  2:00 still building: 1 package done, none running\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestTickRunning: a tick names the tests whose code runs: not one
// waiting for a parallel slot, nor a parent whose function is done and
// that waits for its subtests, but a subtest once it runs.
func TestTickRunning(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out strings.Builder
	r := New(&out, func() time.Time { return now })
	for _, e := range []Event{
		{Action: "start", Package: "p"},
		{Action: "run", Package: "p", Test: "TestA"},
		{Action: "run", Package: "p", Test: "TestA/one"},
		{Action: "pause", Package: "p", Test: "TestA/one"},
		{Action: "run", Package: "p", Test: "TestA/two"},
		{Action: "pause", Package: "p", Test: "TestA/two"},
		{Action: "run", Package: "p", Test: "TestB"},
		{Action: "pause", Package: "p", Test: "TestB"},
	} {
		r.Event(e)
	}
	r.Tick()
	r.Event(Event{Action: "cont", Package: "p", Test: "TestA/two"})
	r.Tick()
	want := "  0:00 run   p\n" +
		"  0:00 still running: p (0:00)\n" +
		"  0:00 still running: p (0:00: TestA/two)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
