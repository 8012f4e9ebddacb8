package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"ftpatch/arch"
	"ftpatch/attach"
	"ftpatch/internal/measure"
	ftrt "ftpatch/runtime"
)

// attachBusyC is the process attached to: 8 threads, each calling the
// program's functions in a loop (attachFuncs of them, each called in
// turn, so that every one is live), until killed. It prints "ready"
// once every thread runs.
func attachBusyC() string {
	var b strings.Builder
	b.WriteString("#include <pthread.h>\n#include <stdio.h>\n#include <unistd.h>\nstatic volatile int up;\nstatic volatile long sink;\n")
	for i := range attachFuncs {
		fmt.Fprintf(&b, "__attribute__((noinline)) long g%d(long x) { return x * %d + 1; }\n", i, i|1)
	}
	b.WriteString("static long (*const fns[])(long) = {\n")
	for i := range attachFuncs {
		fmt.Fprintf(&b, "\tg%d,\n", i)
	}
	b.WriteString("};\nstatic void *spin(void *arg)\n{\n\tlong s = (long)arg;\n\t__atomic_fetch_add(&up, 1, __ATOMIC_RELAXED);\n\tfor (unsigned long i = 0;; i++)\n\t\ts += fns[i % (sizeof fns / sizeof *fns)](s);\n\treturn NULL;\n}\n")
	b.WriteString("int main(void)\n{\n\tpthread_t t;\n\tfor (long i = 0; i < 8; i++)\n\t\tpthread_create(&t, NULL, spin, (void *)i);\n\twhile (__atomic_load_n(&up, __ATOMIC_RELAXED) < 8)\n\t\tusleep(1000);\n\tprintf(\"ready\\n\");\n\tfflush(stdout);\n\tfor (;;)\n\t\tpause();\n}\n")
	return b.String()
}

// attachFuncs is how many functions the attached program has.
const attachFuncs = 10000

// attachBench measures how long attaching stops a process: from the
// first thread's stop to the last one's release, the longest stretch in
// which every thread is held (a call that takes the C library's locks
// lets the others run). The process has 8 threads calling its 10,000
// functions on this machine's processors. Cases: ftpatch ctl's attach to
// a program linked with the runtime (the control server started), and
// to a -pg program linked without it (the runtime loaded by dlopen
// first, then the server). The target (issue: a few milliseconds) is
// the pause; the whole attach is printed beside it.
func attachBench(work, bin string, libs []byte, runs int) error {
	if err := os.WriteFile(filepath.Join(work, "busy.c"), []byte(attachBusyC()), 0o644); err != nil {
		return err
	}
	steps := [][]string{
		{"gcc", "-O2", "-pg", "-mfentry", "-c", "busy.c", "-o", "busy.o"},
		{filepath.Join(bin, "recordmcount"), "busy.o"},
		append([]string{"gcc", "-pthread", "busy.o", "-o", "busy-linked"}, strings.Fields(string(libs))...),
		{"gcc", "-pthread", "busy.o", "-o", "busy-sited"},
	}
	if err := measure.Steps(work, steps...); err != nil {
		return err
	}
	rt, err := ftrt.Find(context.Background(), ftrt.Options{Arch: arch.X86_64, Notes: os.Stderr}, "")
	if err != nil {
		return err
	}
	if rt.Scratch != "" {
		defer os.RemoveAll(rt.Scratch)
	}
	start := func(prog string) (*exec.Cmd, error) {
		cmd := exec.Command(filepath.Join(work, prog))
		cmd.Env = append(os.Environ(), "FTRACE=", "FTRACE_CTL=")
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("%s: %q, %v", prog, line, err)
		}
		return cmd, nil
	}
	type result struct{ pause, whole []time.Duration }
	var linked, injected, loaded result
	for range runs {
		for _, c := range []struct {
			prog   string
			inject bool
		}{{"busy-linked", false}, {"busy-sited", true}} {
			cmd, err := start(c.prog)
			if err != nil {
				return err
			}
			t0 := time.Now()
			var pl time.Duration
			if c.inject {
				if pl, err = attach.Inject(cmd.Process.Pid, rt.Shared); err == nil {
					loaded.pause = append(loaded.pause, pl)
				}
			}
			var pc time.Duration
			if err == nil {
				pc, err = attach.Control(cmd.Process.Pid)
			}
			whole := time.Since(t0)
			cmd.Process.Kill()
			cmd.Wait()
			if err != nil {
				return fmt.Errorf("%s: %w", c.prog, err)
			}
			r := &linked
			if c.inject {
				r = &injected
			}
			r.pause = append(r.pause, max(pl, pc))
			r.whole = append(r.whole, whole)
		}
	}
	ms := func(d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("%6.2f %6.2f %6.2f", float64(d[0])/1e6, float64(d[len(d)/2])/1e6, float64(d[len(d)-1])/1e6)
	}
	fmt.Printf("\nattaching (ftpatch ctl's) to a process of 8 threads calling its %d functions, %d runs; ms min/median/max\n\n", attachFuncs, runs)
	fmt.Printf("%-52s %20s %20s\n", "case", "longest stop", "whole attach")
	fmt.Printf("%-52s %20s %20s\n", "runtime linked: the control server started", ms(linked.pause), ms(linked.whole))
	fmt.Printf("%-52s %20s %20s\n", "no runtime: libftrt.so loaded, then the server", ms(injected.pause), ms(injected.whole))
	fmt.Printf("%-52s %20s\n", "  of which the load's longest stop", ms(loaded.pause))
	worst := max(slices.Max(linked.pause), slices.Max(injected.pause))
	verdict := "met"
	if worst > 5*time.Millisecond {
		verdict = "MISSED"
	}
	fmt.Printf("\ntarget: attaching stops the process for a few milliseconds at most (5 ms): worst %.2f ms: %s\n", float64(worst)/1e6, verdict)
	return nil
}
