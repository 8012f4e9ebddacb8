package tests

import (
	"fmt"
	"strings"
	"testing"
)

// stackTopOut is what progs/stacktop.c prints, traced or not.
const stackTopOut = "context: top ran\nclone: top ran\nnine: a callback read its stack arguments right in 256 calls\ncallbacks at the tops: 2\n"

// TestStackTop: functions at the very top of a stack with an unreadable
// page above it, a makecontext context's first and a clone()'d thread's
// (progs/stacktop.c), are asked for stack arguments they do not have,
// and nothing faults, where a plain load killed the program by SIGSEGV:
// an ops callback's ftrace_regs_get_argument for every argument number
// up to 80, 1000 and 2^32-1, with FTRACE unset too, reading a function's
// real stack arguments right wherever they start on a page (under qemu,
// where the never-faulting reader needs its pipe, made when a callback
// is registered); FTRACE_ARGS's items past the registers (argN up to the
// last the grammar takes: arg70 on x86-64, arg72 on arm64), at stack+OFF
// up to the 512th byte, a string and a struct behind a stack word, all
// recorded as not read (?), under both tracers, and the same function's
// real ones in every call. The next argN (arg71, arg73) is refused with
// one warning that names the entry and gives the registers' and the
// stack's ranges. On x86-64 (entry and -pg sites) and arm64 under qemu
// (patchable areas, and -pg, where a callback reads the stack's
// arguments as 0 and FTRACE_ARGS finds them from the prologue's frame).
func TestStackTop(t *testing.T) {
	t.Parallel()
	for _, c := range []ccBuild{
		{x86GCC, "-O2 -pg -mfentry"},
		{x86GCC, "-O2 -pg"},
		{x86Clang, "-O2 -fpatchable-function-entry=5"},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"},
		{a64Clang, "-O2 -fpatchable-function-entry=2 -mbranch-protection=standard"},
		{a64GCC, "-O2 -pg"},
	} {
		t.Run(c.tg.arch+"/"+c.tg.name+"/"+slug(c.flags), func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			prog := traced(t, c.tg, dir, c.flags+apiFlags(t, c.tg), true, "stacktop.c")
			argv := c.tg.on(prog)
			if c.tg.arch == "arm64" && strings.Contains(c.flags, "-pg") {
				argv = append(argv, "mcount")
			}
			out, stderr, code, err := runStatus(dir, argv...)
			if err != nil || code != 0 || out != stackTopOut {
				t.Fatalf("FTRACE unset: exit %d, %v, output\n%s\nwant\n%s\nstderr:\n%s", code, err, out, stackTopOut, stderr)
			}
			// nine's stack arguments (its call i passes i+1 to i+12),
			// the last argN the grammar takes and the next.
			ints, last := 6, 70
			if c.tg.arch == "arm64" {
				ints, last = 8, 72
			}
			var nineArgs []string
			for n := ints + 1; n <= 12; n++ {
				nineArgs = append(nineArgs, fmt.Sprintf("arg%d", n))
			}
			items := fmt.Sprintf("@arg9,arg%d,arg9/s,*arg9/{d,d},stack+16,stack+496/{d,d},stack+504,stack+496/f128,stack+504/s", last)
			refused := fmt.Sprintf("nine@arg%d", last+1)
			env := []string{"FTRACE_ARGS=ctx_top" + items + ";clone_top" + items + ";nine@" + strings.Join(nineArgs, ",") + ";" + refused}
			wantErr := fmt.Sprintf("ftrt: FTRACE_ARGS entry 4 skipped (argN: arg1-arg%d are registers, arg%d-arg%d the stack's words after them, in its arguments' first 512 bytes): %s\n",
				ints, ints+1, last, refused)
			for _, tracer := range []string{"function_graph", "function"} {
				stderr, tdir := runTracedArgv(t, dir, argv, tracer, tracer, env, stackTopOut, 0)
				if stderr != wantErr {
					t.Errorf("%s: stderr\n%s\nwant\n%s", tracer, stderr, wantErr)
				}
				replay, _ := run(t, dir, tool("ftpatch"), "replay", tdir)
				unread := "(" + strings.Repeat("?, ", 8) + "?)" // the 9 items, none read
				for _, want := range []string{"ctx_top" + unread, "clone_top" + unread} {
					if !strings.Contains(replay, want) {
						t.Errorf("%s: replay lacks %q:\n%s", tracer, want, replay)
					}
				}
				for i := range 256 {
					var vals []string
					for n := ints + 1; n <= 12; n++ {
						vals = append(vals, fmt.Sprint(i+n))
					}
					if want := "nine(" + strings.Join(vals, ", ") + ")"; !strings.Contains(replay, want) {
						t.Errorf("%s: replay lacks %q", tracer, want)
					}
				}
			}
		})
	}
}
