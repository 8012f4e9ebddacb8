package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/viewcheck"
	"ftpatch/runtime/abi"
	"ftpatch/symbols"
	"ftpatch/trace"
)

// sleptDemo is the demo's function_graph trace with scheduler events
// added: its thread asleep for most of the longest time eval ran with
// no callee (between two records, a tick after the one and before the
// other). It returns the directory and the ns asleep.
func sleptDemo(t *testing.T) (string, float64) {
	dir := t.TempDir()
	ents, err := os.ReadDir(demoGraph)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(demoGraph, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "meta" {
			b = append(b, "sched on\n"...)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	syms, _, err := symbols.LoadProcess(&tr.Meta, demoExe)
	if err != nil {
		t.Fatal(err)
	}
	nm := syms.Namer()
	// The longest time between two records with eval the innermost call.
	var out, in uint64
	var stack []string
	var prev uint64
	if err := tr.EachRecord(0, func(recs []trace.Record) {
		for _, r := range recs {
			if len(stack) > 0 && stack[len(stack)-1] == "eval" && r.TS-prev > in-out+2 {
				out, in = prev+1, r.TS-1
			}
			switch r.Kind() {
			case trace.Entry:
				stack = append(stack, nm.FuncAt(r.IP, r.TS))
			case trace.Exit:
				stack = stack[:max(len(stack)-1, 0)]
			}
			prev = r.TS
		}
	}); err != nil {
		t.Fatal(err)
	}
	if out == 0 || in <= out {
		t.Fatalf("no time in eval after its entry: %d, %d", out, in)
	}
	s := &tr.Streams[0]
	le := binary.LittleEndian
	b := le.AppendUint32(le.AppendUint32([]byte(abi.SchedMagic), uint32(s.Pid)), 0)
	b = le.AppendUint64(b, uint64(s.Tid)|2<<32)
	b = le.AppendUint64(b, out<<abi.SchedKindBits|abi.SchedSleep)
	b = le.AppendUint64(b, in<<abi.SchedKindBits|abi.SchedIn)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d%s", s.Pid, abi.SchedSuffix)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, math.Round(tr.Meta.Nanos(in) - tr.Meta.Nanos(out))
}

// TestDumpOffCPU: a trace's scheduler events, read from its files, reach
// the views through the commands: the off-CPU flame graph has the time
// asleep under eval, the on-CPU one has eval's self time less it, the
// graph an OFF-CPU column, and the timelines the thread's states.
func TestDumpOffCPU(t *testing.T) {
	dir, asleep := sleptDemo(t)
	t.Logf("asleep %.0f ns of eval's 10876 of its own", asleep)
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if stderr, err := traceCmd(&out, append(args, "--exe", demoExe, dir)...); err != nil {
			t.Fatalf("ftpatch %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return out.String()
	}
	if got, want := run("dump", "--flame-graph", "--offcpu"), fmt.Sprintf("main;eval;[sleeping] %.0f\n", asleep); got != want {
		t.Errorf("off-CPU folded stacks %q, want %q", got, want)
	}
	golden, err := os.ReadFile(filepath.Join(demoDir, "golden", "folded.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(golden), "main;eval 10876\n", fmt.Sprintf("main;eval %.0f\n", 10876-asleep), 1)
	if got := run("dump", "--flame-graph"); got != want {
		t.Errorf("on-CPU folded stacks\n%s\nwant\n%s", got, want)
	}
	if got := run("graph", "--no-pager"); !strings.Contains(got, "# TOTAL TIME     OFF-CPU   FUNCTION\n") || !strings.Contains(got, fmt.Sprintf(" %s : (1) eval\n", strings.TrimSpace(fmtUs(asleep)))) {
		t.Errorf("graph without eval's time off the CPU:\n%s", got)
	}
	states, err := viewcheck.PerfettoStates([]byte(run("dump", "--perfetto")))
	if err != nil {
		t.Fatal(err)
	}
	names := ""
	for _, s := range states {
		names += s.State + ";"
	}
	if names != "running;sleeping;running;" {
		t.Errorf("thread states %v, want running, sleeping, running", states)
	}
}

// fmtUs is ns as the views write µs.
func fmtUs(ns float64) string { return fmt.Sprintf("%.3f us", ns/1000) }
