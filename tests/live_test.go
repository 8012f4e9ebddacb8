package tests

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/internal/sitetest"
	ftrt "ftpatch/runtime"
)

// apiFlags are the compile flags of a program that includes ftrace.h:
// the include directory beside tg's runtime.
func apiFlags(t *testing.T, tg target) string {
	t.Helper()
	return " -I" + ftrt.IncludeDir(filepath.Dir(runtimeArchiveFor(t, tg.arch)))
}

// TestLiveStress: eight threads call traced functions while a timer of
// their own sends each SIGPROF at 20 kHz, whose handler makes traced
// calls, and a ninth thread disables and enables two of those functions
// through ftrace.h's API, 10,000 times each way, and one of the eight
// forks children now and then (progs/livestress.c), in which no site
// keeps an int3 a batch under way left and the API works.
// Ten runs, five with each tracer, of a gcc -mfentry build with
// endbr64 and of a clang -pg one (the other site kinds change alike): the
// output and exit status are the untraced program's every time; the
// function whose site never changes has every call in the trace, the
// toggled ones at most as many as were made and some; the handlers'
// calls are there but for those the trace counts as dropped; and every
// graphed call is whole: no call open at the end, none left without its
// return, each within its caller. One more run with each tracer on
// x86-64 traces library calls too: output and exit status as untraced.
//
// On arm64 (qemu-user 10, which drops what it translated at the
// program's ic ivau), one run with each tracer of three builds: a
// patchable area with the pre-function literal (sites enabled at load
// call ftrace_ops_caller; enabled live, ftrace_caller), one without,
// with bti, and -pg.
func TestLiveStress(t *testing.T) {
	t.Parallel()
	builds := []struct {
		ccBuild
		runs int // per tracer
	}{
		{ccBuild{x86GCC, "-O2 -pg -mfentry -fcf-protection"}, 5},
		{ccBuild{x86Clang, "-O2 -pg"}, 5},
		{ccBuild{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"}, 1},
		{ccBuild{a64Clang, "-O2 -fpatchable-function-entry=2 -mbranch-protection=standard"}, 1},
		{ccBuild{a64GCC, "-O2 -pg"}, 1},
	}
	for _, c := range builds {
		runs := c.runs
		t.Run(c.tg.arch+"/"+c.tg.name+"/"+slug(c.flags), func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			wantOut, wantCode := untraced(t, c.tg, dir, "livestress.c", "-DUNTRACED")
			prog := traced(t, c.tg, dir, c.flags+apiFlags(t, c.tg), true, "livestress.c")
			for _, tracer := range []string{"function", "function_graph"} {
				for i := range runs {
					out := filepath.Join(dir, fmt.Sprintf("%s-%d", tracer, i))
					got, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_OUT=" + out}, c.tg.on(prog)...)
					if err != nil {
						t.Fatal(err)
					}
					if got != wantOut || code != wantCode {
						t.Fatalf("%s run %d: exit %d, output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", tracer, i, code, got, wantCode, wantOut, stderr)
					}
					checkLive(t, out, tracer, countLine(t, stderr, "made"), countLine(t, stderr, "handler"), countLine(t, stderr, "flipped"))
				}
				// With library calls on, each live call changes slots
				// too: a child forked meanwhile must find the API
				// working (it once waited forever for a lock of the
				// loader's the parent's live call held at the fork).
				if runs > 1 {
					out := filepath.Join(dir, tracer+"-libcall")
					got, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_LIBCALL=1", "FTRACE_OUT=" + out}, c.tg.on(prog)...)
					if err != nil {
						t.Fatal(err)
					}
					if got != wantOut || code != wantCode {
						t.Fatalf("%s with library calls: exit %d, output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", tracer, code, got, wantCode, wantOut, stderr)
					}
				}
			}
		})
	}
}

// checkLive checks a trace of progs/livestress.c against the calls the
// run says it made.
func checkLive(t *testing.T, dir, tracer string, made, handler, flipped map[string]int) {
	t.Helper()
	tr, syms := readWhole(t, dir, tracer)
	got, stats := tracedCalls(t, tr, syms, tracer)
	for _, s := range stats {
		if s.Func == "work" || s.Func == "child" {
			continue // a forked child's, open when it calls _exit
		}
		if s.Unwound != 0 || s.Open != 0 || s.Untimed != 0 {
			t.Errorf("%s: %s: %d calls unwound, %d open at the end, %d without their return; want every call whole",
				dir, s.Func, s.Unwound, s.Open, s.Untimed)
		}
	}
	if got["steady"] != made["steady"] {
		t.Errorf("%s: steady, whose site never changes, traced %d times; the program made %d calls", dir, got["steady"], made["steady"])
	}
	for _, f := range []string{"mid", "leaf"} {
		if got[f] > made[f] || got[f] == 0 || got[f] == made[f] {
			t.Errorf("%s: %s traced %d times of %d calls made; want some, not all", dir, f, got[f], made[f])
		}
	}
	if got["hflip"] > flipped["hflip"] || got["hflip"] == 0 {
		t.Errorf("%s: hflip traced %d times of %d calls made; want some", dir, got["hflip"], flipped["hflip"])
	}
	missing := 0
	for f, n := range handler {
		if got[f] > n {
			t.Errorf("%s: %s traced %d times, more than the %d calls the handlers made", dir, f, got[f], n)
		}
		missing += n - got[f]
	}
	// hflip's calls not traced were dropped or made while it was off.
	if maybe := flipped["hflip"] - got["hflip"]; uint64(missing) > tr.Meta.Dropped || tr.Meta.Dropped > uint64(missing+maybe) {
		t.Errorf("%s: the handlers' calls missing from the trace: %d, and hflip's %d; the trace says it dropped %d",
			dir, missing, maybe, tr.Meta.Dropped)
	}
	if handler["hwork"] < 100 {
		t.Errorf("%s: the handlers ran %d times: too few to test anything", dir, handler["hwork"])
	}
}

// TestLiveTraps: the program's own SIGTRAP handler, installed before the
// runtime took SIGTRAP and after, receives every trap it raises and every
// int3 it runs while a thread toggles a function through the API and
// threads that block every signal call it; the handler runs with the
// mask it asked for, on the alternate signal stack only with SA_ONSTACK,
// and calls the toggled function itself without being killed (SIGTRAP
// stays unblocked in it); SIGTRAP's action reads back as the program's;
// a child with the default action dies of SIGTRAP
// (progs/livetrap.c). Without FTRACE (the first enable opens the trace)
// and under both tracers, the output is the untraced program's. On
// arm64 the program's breakpoint is brk, where no site ever is.
func TestLiveTraps(t *testing.T) {
	t.Parallel()
	builds := []ccBuild{
		{x86GCC, "-O2 -pg -mfentry"},
		{x86Clang, "-O0 -fpatchable-function-entry=5"},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"},
	}
	for _, c := range builds {
		t.Run(c.tg.arch+"/"+c.tg.name+"/"+slug(c.flags), func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			wantOut, wantCode := untraced(t, c.tg, dir, "livetrap.c", "-DUNTRACED")
			if !strings.Contains(wantOut, "killed by signal 5") {
				t.Fatalf("the untraced program's child did not die of SIGTRAP:\n%s", wantOut)
			}
			prog := traced(t, c.tg, dir, c.flags+apiFlags(t, c.tg), true, "livetrap.c")
			for _, tracer := range []string{"", "function", "function_graph"} {
				out := filepath.Join(dir, "trace-"+tracer)
				env := []string{"FTRACE_OUT=" + out}
				if tracer != "" {
					env = append(env, "FTRACE="+tracer)
				}
				got, stderr, code, err := runStatusEnv(dir, env, c.tg.on(prog)...)
				if err != nil {
					t.Fatal(err)
				}
				if got != wantOut || code != wantCode {
					t.Fatalf("FTRACE=%s: exit %d, output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", tracer, code, got, wantCode, wantOut, stderr)
				}
				if m := regexp.MustCompile(`(?m)^toggles (\d+)$`).FindStringSubmatch(stderr); m == nil {
					t.Fatalf("FTRACE=%s: no toggles line in stderr:\n%s", tracer, stderr)
				} else if n, _ := strconv.Atoi(m[1]); n < 10 {
					t.Errorf("FTRACE=%s: busy toggled %d times while the traps were taken: too few to test anything", tracer, n)
				}
				tr, syms := readTrace(t, out)
				calls, _ := tracedCalls(t, tr, syms, tr.Meta.Tracer)
				if calls["busy"] == 0 {
					t.Errorf("FTRACE=%s: busy never traced", tracer)
				}
			}
		})
	}
}

// TestFlightRecorder: a program that makes 400,000 traced calls (more
// than a ring of 1 MiB a thread holds) while a second thread spins on
// traced calls, then dies of SIGABRT (abort), of SIGSEGV, or exits,
// under FTRACE_BUFFER=ring:1m (progs/crash.c), on x86-64 and on arm64
// (under qemu, whose own death by a guest's signal is compared alike). Under both tracers it
// ends as the untraced program does: the same output, killed by the
// same signal, with a core dump where the untraced one dumps core (the
// runs allow core files). Its trace is ended, says the ring wrapped
// (replay warns so), and holds the last calls before the death, and the
// spinning thread's calls; its metadata, and ftpatch info, name the
// signal that ended it.
func TestFlightRecorder(t *testing.T) {
	t.Parallel()
	forProgram(t, "crash.c", []ccBuild{{x86GCC, "-O2 -pg -mfentry"}, {x86Clang, "-O2 -fpatchable-function-entry=5"},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"}},
		func(t *testing.T, tg target, dir, prog, _ string, _ int) {
			plain := filepath.Join(dir, "plain")
			for _, how := range []string{"abort", "segv", "exit"} {
				want := dies(t, tg, dir, nil, plain, how)
				for _, tracer := range []string{"function", "function_graph"} {
					out := filepath.Join(dir, how+"-"+tracer)
					got := dies(t, tg, dir, []string{"FTRACE=" + tracer, "FTRACE_BUFFER=ring:1m", "FTRACE_OUT=" + out}, prog, how)
					if got != want {
						t.Errorf("%s under %s: %s; untraced: %s", how, tracer, got, want)
					}
					tr, syms := readTrace(t, out)
					if tr.Meta.Unended || tr.Meta.Buffer != "ring" || tr.Meta.Overwritten == 0 {
						t.Errorf("%s under %s: unended %v, buffer %q, %d bytes overwritten; want an ended trace of a ring that wrapped",
							how, tracer, tr.Meta.Unended, tr.Meta.Buffer, tr.Meta.Overwritten)
					}
					wantSig := map[string]uint64{"abort": uint64(syscall.SIGABRT), "segv": uint64(syscall.SIGSEGV)}[how]
					if tr.Meta.Signal != wantSig {
						t.Errorf("%s under %s: the metadata says signal %d ended the trace; want %d", how, tracer, tr.Meta.Signal, wantSig)
					}
					if info, _ := run(t, dir, tool("ftpatch"), "info", out); wantSig != 0 && !regexp.MustCompile(`ended:\s+by signal `+strconv.FormatUint(wantSig, 10)+` `).MatchString(info) {
						t.Errorf("%s under %s: ftpatch info does not say a signal ended it:\n%s", how, tracer, info)
					}
					calls, _ := tracedCalls(t, tr, syms, tracer)
					for _, f := range []string{"dying", "last_words", "spin", "leaf"} {
						if calls[f] == 0 {
							t.Errorf("%s under %s: no call of %s in the trace; want the last calls before the end", how, tracer, f)
						}
					}
					if calls["leaf"] >= 400000 {
						t.Errorf("%s under %s: %d calls of leaf kept by a ring of 1 MiB", how, tracer, calls["leaf"])
					}
					stdout, stderr := run(t, dir, tool("ftpatch"), "replay", out)
					if !strings.Contains(stderr, "ring wrapped") || !strings.Contains(stdout, "last_words") {
						t.Errorf("%s under %s: replay says nothing of the ring's wrap, or shows no last_words:\n%s", how, tracer, stderr)
					}
				}
			}
		})
}

// dies runs prog how (progs/crash.c) in dir with env and core files
// allowed (ulimit -c unlimited), and says how it ended: its output, and
// its exit status or the signal that killed it and whether it dumped
// core.
func dies(t *testing.T, tg target, dir string, env []string, prog, how string) string {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `ulimit -c unlimited; exec "$@"`, "sh"}, tg.on(prog, how)...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, _ := cmd.Output()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		t.Fatalf("%s %s: no wait status", prog, how)
	}
	if ws.Signaled() {
		return fmt.Sprintf("output %q, killed by %v, core dumped %v", out, ws.Signal(), ws.CoreDump())
	}
	return fmt.Sprintf("output %q, exit %d", out, ws.ExitStatus())
}

// TestWriterThread: four threads making 4.6 million calls (progs/
// bigtrace.c), each filling its buffer a dozen times, under
// FTRACE_BUFFER=writer: the full buffers are handed to the runtime's
// writer thread (or written by their own thread when the writer is
// behind), and the trace holds every call the program counted, under
// both tracers, with nothing lost.
func TestWriterThread(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tg     target
		flags  string
		rounds string
	}{
		{x86GCC, "-O2 -fno-optimize-sibling-calls -pg -mfentry", "1000"},
		// Under qemu: 1.4 million calls, each thread's buffer filling
		// three or four times.
		{a64GCC, "-O2 -fno-optimize-sibling-calls -fpatchable-function-entry=4,2 -falign-functions=8", "300"},
	}
	for _, c := range cases {
		for _, tracer := range []string{"function_graph", "function"} {
			t.Run(c.tg.arch+"/"+tracer, func(t *testing.T) {
				t.Parallel()
				need(t, c.tg.tools...)
				writerRun(t, c.tg, c.flags, tracer, c.rounds)
			})
		}
	}
}

// writerRun runs progs/bigtrace.c for rounds under FTRACE_BUFFER=writer
// and checks its trace (TestWriterThread).
func writerRun(t *testing.T, tg target, flags, tracer, rounds string) {
	dir := t.TempDir()
	prog := traced(t, tg, dir, flags, true, "bigtrace.c")
	trace := filepath.Join(dir, "t")
	out, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_OUT=" + trace, "FTRACE_BUFFER=writer"}, tg.on(prog, rounds)...)
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
	tr, syms := readTrace(t, trace)
	if tr.Meta.Buffer != "writer" || tr.Meta.Unended || tr.Meta.LostBytes != 0 || tr.Meta.Dropped != 0 {
		t.Errorf("buffer %q, unended %v, %d bytes lost, %d dropped; want the writer's whole trace",
			tr.Meta.Buffer, tr.Meta.Unended, tr.Meta.LostBytes, tr.Meta.Dropped)
	}
	calls, _ := tracedCalls(t, tr, syms, tracer)
	n := 0
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) == 2 {
			n++
			if fmt.Sprint(calls[f[0]]) != f[1] {
				t.Errorf("%s traced %d times; the program counted %s calls", f[0], calls[f[0]], f[1])
			}
		}
	}
	if n == 0 {
		t.Fatalf("no counts in the program's output:\n%s", out)
	}
}

// TestLiveBytes: what the live API writes into each site, decoded with
// golang.org/x/arch (progs/livebytes.c dumps the sites after each step):
// under function_graph the load-time pass gave the entry sites jumps to
// trampolines of their own; a change of tracer to function makes each a
// call of its caller trampoline (ftrace_caller5: a PIE's 6-byte sites
// become that 5-byte call and a NOP); disabling
// every function makes each call a compare with the call's own rel32
// (cmp $rel32, %eax: only the opcode changes, both ways), enabling them
// again the call; no mapping is ever writable and executable.
func TestLiveBytes(t *testing.T) {
	t.Parallel()
	for _, pie := range []bool{false, true} {
		t.Run(picFlag(pie), func(t *testing.T) {
			t.Parallel()
			need(t, x86GCC.tools...)
			dir := t.TempDir()
			prog := traced(t, x86GCC, dir, "-O2 -pg -mfentry"+apiFlags(t, x86GCC), pie, "livebytes.c")
			out, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_OUT=" + filepath.Join(dir, "t")}, prog)
			if err != nil || code != 0 {
				t.Fatalf("exit %d, %v\n%s", code, err, stderr)
			}
			addr, bias, steps := liveDump(t, prog, out)
			// Every site changed live is a 5-byte instruction calling
			// ftrace_caller5 (or its compare), a PIE's 6-byte sites with a
			// NOP after it.
			n, caller := 5, "ftrace_caller5"
			for _, step := range []string{"start", "function", "off", "on"} {
				if len(steps[step]) < 3 {
					t.Fatalf("%s: %d sites dumped, want f1's, f2's and main's", step, len(steps[step]))
				}
				for at, b := range steps[step] {
					in, err := x86asm.Decode(b, 64)
					if err != nil {
						t.Errorf("%s: site %#x holds % x: %v", step, at, b, err)
						continue
					}
					switch step {
					case "start":
						if in.Op != x86asm.JMP && in.Op != x86asm.CALL {
							t.Errorf("%s: site %#x holds %v; want function_graph's jump or call", step, at, in)
						}
					case "off":
						// The call's first byte alone changed: cmp $rel32, %eax,
						// its immediate the call's rel32.
						imm, ok := in.Args[1].(x86asm.Imm)
						if in.Op != x86asm.CMP || in.Args[0] != x86asm.EAX || in.Len != n || !ok ||
							at+uint64(in.Len)+uint64(int64(int32(imm))) != addr[caller]+bias {
							t.Errorf("%s: site %#x holds %v (%d bytes); want a cmp of %%eax with the rel32 of the call of %s", step, at, in, in.Len, caller)
						}
					default:
						rel, ok := in.Args[0].(x86asm.Rel)
						if in.Op != x86asm.CALL || in.Len != n || !ok || at+uint64(in.Len)+uint64(int64(rel)) != addr[caller]+bias {
							t.Errorf("%s: site %#x holds %v (%d bytes); want a call of %s", step, at, in, in.Len, caller)
						}
					}
					if nop, err := x86asm.Decode(b[5:], 64); pie && step != "start" && (err != nil || nop.Op != x86asm.NOP || nop.Len != 1) {
						t.Errorf("%s: site %#x holds % x: want a one-byte NOP after its first 5 bytes (a 6-byte site)", step, at, b)
					}
				}
			}
		})
	}
}

// TestLiveBytesARM64: what the live API writes into arm64 sites
// (progs/livebytes.c), read back and decoded with golang.org/x/arch:
// each change is one word, a NOP or a bl, so a thread running the site
// meanwhile runs the old word or the new. A patchable area keeps its
// `mov x9, x30` throughout, written by the load-time pass in a process
// that may patch itself even when it starts untraced; enabled live, a
// site calls the shared trampoline (ftrace_caller, ftrace_mcount_caller),
// not its literal's ftrace_ops_caller, and a change of tracer moves the
// literal's calls there. qemu-user runs the program: it does not run
// code written through /proc/self/mem (TestLiveARM64 runs that under
// a kernel), but it shows the bytes.
func TestLiveBytesARM64(t *testing.T) {
	t.Parallel()
	builds := []ccBuild{
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"},
		{a64GCC, "-O2 -pg"},
		{a64Clang, "-O2 -fpatchable-function-entry=2 -mbranch-protection=standard"},
	}
	for _, c := range builds {
		for _, traced0 := range []bool{true, false} {
			name := c.tg.name + "/" + slug(c.flags) + "/untraced"
			if traced0 {
				name = c.tg.name + "/" + slug(c.flags) + "/function_graph"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				need(t, c.tg.tools...)
				dir := t.TempDir()
				prog := traced(t, c.tg, dir, c.flags+apiFlags(t, c.tg), true, "livebytes.c")
				env := []string{"FTRACE_OUT=" + filepath.Join(dir, "t")}
				if traced0 {
					env = append(env, "FTRACE=function_graph")
				}
				out, stderr, code, err := runStatusEnv(dir, env, c.tg.on(prog)...)
				if err != nil || code != 0 {
					t.Fatalf("exit %d, %v\n%s", code, err, stderr)
				}
				checkLiveBytesARM64(t, prog, out, traced0, strings.Contains(c.flags, "patchable"))
			})
		}
	}
}

// checkLiveBytesARM64 checks livebytes.c's output: traced0 when it ran
// traced from the start, areas when its sites are patchable areas.
func checkLiveBytesARM64(t *testing.T, prog, out string, traced0, areas bool) {
	t.Helper()
	addr, bias, steps := liveDump(t, prog, out)
	name := map[uint64]string{}
	for _, s := range []string{"ftrace_caller", "ftrace_mcount_caller", "ftrace_ops_caller"} {
		if addr[s] == 0 {
			t.Fatalf("no symbol %s in %s", s, prog)
		}
		name[addr[s]+bias] = s
	}
	// Each site's words as text: "mov x9, x30; bl ftrace_caller", "nop".
	show := func(at uint64, b []byte) string {
		var words []string
		for i := 0; i < 8; i += 4 {
			in, err := arm64asm.Decode(b[i : i+4])
			switch {
			case err != nil:
				words = append(words, fmt.Sprintf("?%x", b[i:i+4]))
			case in.Op == arm64asm.BL:
				to := at + uint64(i) + uint64(int64(in.Args[0].(arm64asm.PCRel)))
				words = append(words, "bl "+cmp.Or(name[to], fmt.Sprintf("%#x", to)))
			case in.Op == arm64asm.MOV && in.String() == "MOV X9, X30":
				words = append(words, "mov x9, x30")
			case in.Op == arm64asm.NOP:
				words = append(words, "nop")
			default:
				words = append(words, in.String())
			}
			if i == 0 && words[0] != "mov x9, x30" {
				break // a -pg site: one word
			}
		}
		return strings.Join(words, "; ")
	}
	for _, step := range []string{"start", "function", "off", "on"} {
		if len(steps[step]) < 3 {
			t.Fatalf("%s: %d sites dumped, want f1's, f2's and main's", step, len(steps[step]))
		}
		for at, b := range steps[step] {
			got := show(at, b)
			area := strings.HasPrefix(got, "mov x9, x30")
			var want []string
			switch {
			case step == "off" || !traced0 && step != "on":
				want = []string{"nop", "mov x9, x30; nop"}
			case step == "start":
				want = []string{"bl ftrace_mcount_caller", "mov x9, x30; bl ftrace_caller", "mov x9, x30; bl ftrace_ops_caller"}
			default:
				want = []string{"bl ftrace_mcount_caller", "mov x9, x30; bl ftrace_caller"}
			}
			if !slices.Contains(want, got) {
				t.Errorf("%s: site %#x holds %s; want one of %q", step, at, got, want)
			}
			if area != areas {
				t.Errorf("%s: site %#x holds %s; want a %s", step, at, got, map[bool]string{true: "patchable area, mov x9, x30 first", false: "-pg site"}[areas])
			}
		}
	}
}

// liveDump reads progs/livebytes.c's output: prog's symbols, its load
// bias, and each step's sites (address to 8 bytes); a mapping writable
// and executable after a step is an error.
func liveDump(t *testing.T, prog, out string) (addr map[string]uint64, bias uint64, steps map[string]map[uint64][]byte) {
	t.Helper()
	addr = sitetest.Symbols(t, sitetest.Open(t, prog))
	steps = map[string]map[uint64][]byte{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "f1":
			a, _ := strconv.ParseUint(f[1], 0, 64)
			bias = a - addr["f1"]
		case len(f) == 3 && f[0] == "wx" && f[2] != "0":
			t.Errorf("after %s: %s mappings writable and executable", f[1], f[2])
		case len(f) == 3 && f[0] != "wx":
			a, err := strconv.ParseUint(f[1], 0, 64)
			b, err2 := hex.DecodeString(f[2])
			if err != nil || err2 != nil || len(b) != 8 {
				t.Fatalf("%q", line)
			}
			if steps[f[0]] == nil {
				steps[f[0]] = map[uint64][]byte{}
			}
			steps[f[0]][a] = b
		}
	}
	return addr, bias, steps
}

// TestLiveCc: a program that uses ftrace.h builds with ftpatch cc alone
// (it names the header's directory, after the program's own), and its
// API calls work: livebytes.c toggles every function and exits 0.
func TestLiveCc(t *testing.T) {
	t.Parallel()
	need(t, x86GCC.tools...)
	dir := t.TempDir()
	prog := filepath.Join(dir, "livebytes")
	run(t, dir, tool("ftpatch"), "cc", "gcc", "-O2", "-I"+filepath.Dir(progPath(t, "livebytes.c")), progPath(t, "livebytes.c"), "-o", prog)
	if _, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_OUT=" + filepath.Join(dir, "t")}, prog); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
}

// TestLiveLoadedLater: live filter calls made before a shared object
// was loaded apply to it at its load, in order, each function as the
// latest call that chose it says, and again when it is loaded anew
// (progs/livedl.c): plug_a traced at both loads, other at the second
// alone, plug_off never. On x86-64 and arm64, started untraced (the first
// enable opens the trace) and under function.
func TestLiveLoadedLater(t *testing.T) {
	t.Parallel()
	for _, c := range []ccBuild{
		{x86GCC, "-O2 -pg -mfentry"},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"},
	} {
		t.Run(c.tg.arch, func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			plug := livePlugin(t, c.tg, dir, c.flags)
			prog := traced(t, c.tg, dir, c.flags+apiFlags(t, c.tg), true, "livedl.c")
			for _, tracer := range []string{"", "function"} {
				out := filepath.Join(dir, "t-"+tracer)
				env := []string{"FTRACE_OUT=" + out, "FTRACE_FILTER=main"}
				if tracer != "" {
					env = append(env, "FTRACE="+tracer)
				}
				got, stderr, code, err := runStatusEnv(dir, env, c.tg.on(prog, plug)...)
				if err != nil || code != 0 {
					t.Fatalf("FTRACE=%s: exit %d, %v\n%s", tracer, code, err, stderr)
				}
				if want := "enable plug_* 0\ndisable plug_off 0\nenable other 0\nsum 16\n"; got != want {
					t.Errorf("FTRACE=%s: output\n%s\nwant\n%s", tracer, got, want)
				}
				tr, syms := readTrace(t, out)
				calls, _ := tracedCalls(t, tr, syms, tr.Meta.Tracer)
				want := map[string]int{"plug_a": 2, "other": 1}
				if tracer != "" {
					want["main"] = 1 // FTRACE_FILTER's, at start
				}
				if !maps.Equal(calls, want) {
					t.Errorf("FTRACE=%s: traced %v, want %v", tracer, calls, want)
				}
			}
		})
	}
}

// livePlugin builds progs/livedlplug.c with flags into dir/libplug.so,
// a shared object with sites, for programs that load it later.
func livePlugin(t *testing.T, tg target, dir, flags string) string {
	t.Helper()
	return linkShared(t, tg, dir, "libplug.so", buildSrc(t, tg, dir, flags+" -fPIC", true, "livedlplug.c"))
}
