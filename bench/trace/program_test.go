package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ftpatch/arch"
	ftrt "ftpatch/runtime"
)

// countS counts the calls of the instrumented functions: the hook each
// one calls on entry (__fentry__ for -pg -mfentry, mcount for -pg alone)
// adds one, and a destructor prints the count to stderr.
const countS = `	.text
	.globl __fentry__, mcount
__fentry__:
mcount:
	lock incq calls(%rip)
	ret
	.bss
	.p2align 3
	.globl calls
calls:	.quad 0
	.section .note.GNU-stack, "", @progbits
`

const countC = `#include <stdio.h>
extern unsigned long calls;
__attribute__((destructor)) static void count(void) { fprintf(stderr, "%lu\n", calls); }
`

// TestGeneratedCallCount builds generated programs as the benchmark
// does, with ftpatch's compile flags and with uftrace's -pg, each
// calling a counting hook instead of a tracer, and checks that every
// call the program makes is one the generator counted: the benchmark's
// calls per second and bytes per call rest on that count. The output
// must be the uninstrumented build's.
func TestGeneratedCallCount(t *testing.T) {
	for _, tc := range []struct {
		name           string
		funcs, threads int
		calls          int64
		seed           uint64
	}{
		{"default-shape", 300, 4, 1_000_000, 1},
		{"few-funcs-one-thread", 16, 1, 1_000, 2},
		{"other-seed", 500, 3, 3_000_000, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := generate(tc.funcs, tc.threads, tc.calls, tc.seed)
			if err != nil {
				t.Fatal(err)
			}
			if p.calls < tc.calls/2 || p.calls > 2*tc.calls {
				t.Errorf("program makes %d calls, asked for about %d", p.calls, tc.calls)
			}
			dir := t.TempDir()
			for name, text := range map[string]string{"prog.c": p.src, "count.S": countS, "count.c": countC} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gcc := func(args ...string) {
				t.Helper()
				cmd := exec.Command("gcc", args...)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			gcc("-O2", "prog.c", "-o", "plain", "-lpthread")
			want, err := exec.Command(filepath.Join(dir, "plain")).Output()
			if err != nil {
				t.Fatalf("plain: %v", err)
			}
			for _, build := range []struct {
				name  string
				flags []string
			}{
				{"ftpatch", ftrt.CFlags(arch.X86_64)},
				{"uftrace", []string{"-pg"}},
			} {
				gcc(append(append([]string{"-O2"}, build.flags...), "-c", "prog.c", "-o", build.name+".o")...)
				gcc(build.name+".o", "count.S", "count.c", "-o", build.name, "-lpthread")
				cmd := exec.Command(filepath.Join(dir, build.name))
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s: %v\n%s", build.name, err, stderr.String())
				}
				if string(out) != string(want) {
					t.Errorf("%s build printed %q, the plain build %q", build.name, out, want)
				}
				got, err := strconv.ParseInt(strings.TrimSpace(stderr.String()), 10, 64)
				if err != nil {
					t.Fatalf("%s: count %q: %v", build.name, stderr.String(), err)
				}
				if got != p.calls {
					t.Errorf("%s build made %d calls, the generator counted %d", build.name, got, p.calls)
				}
			}
		})
	}
}
