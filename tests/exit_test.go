package tests

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ftpatch/model"
	"ftpatch/trace"
)

// reportCounts runs ftpatch report on the trace in dir, which must exit 0,
// and returns its calls per function and its stderr.
func reportCounts(t *testing.T, dir string, args ...string) (map[string]int, string) {
	t.Helper()
	out, errOut := run(t, filepath.Dir(dir), append(append([]string{tool("ftpatch"), "report"}, args...), dir)...)
	counts := map[string]int{}
	for _, line := range strings.Split(out, "\n")[1:] {
		// CALLS FUNCTION (function), TOTAL SELF CALLS FUNCTION
		// (function_graph): the calls are the next-to-last field.
		f := strings.Fields(line)
		if len(f) < 2 || f[0] == "#" {
			continue
		}
		if f[len(f)-1] == "[lib]" { // a library function's row (views.LibraryMark)
			f = f[:len(f)-1]
		}
		n, err := strconv.Atoi(f[len(f)-2])
		if err != nil {
			t.Fatalf("report line %q: %v", line, err)
		}
		counts[f[len(f)-1]] = n
	}
	return counts, errOut
}

// eventsByThread reads the trace in dir and names its calls (function)
// or entries (function_graph), per thread id; every record's time must
// lie within the run (checkClock).
func eventsByThread(t *testing.T, dir string) (*trace.Trace, map[int][]model.Event) {
	t.Helper()
	tr, syms := readTrace(t, dir)
	checkClock(t, tr)
	by := map[int][]model.Event{}
	for _, e := range model.Events(tr, syms) {
		by[e.Tid] = append(by[e.Tid], e)
	}
	if tr.Meta.Tracer == "function_graph" {
		checkNesting(t, model.Graph(tr, syms))
	}
	return tr, by
}

func tally(events []model.Event) map[string]int {
	n := map[string]int{}
	for _, e := range events {
		n[e.Func]++
	}
	return n
}

// exitsBuilds builds progs/exits.c traced, with flags and the runtime as
// mode says, into a new directory (dir), and untraced into another (the
// untraced build made once per test run, and linked); runOn is the
// target to run prog on (runner).
func exitsBuilds(t *testing.T, tg target, flags string, mode runtimeMode) (dir, prog, plain string, runOn target) {
	t.Helper()
	dir, plainDir := t.TempDir(), t.TempDir()
	prog, runOn = tracedAs(t, tg, dir, flags, true, mode, "exits.c")
	built := once(t, sharedKey("exits.c untraced", tg.id()), func(dir string) string {
		plain, _ := link(t, tg, dir, "plain", buildSrc(t, tg, dir, "-O2", true, "exits.c"), true, "bfd", false)
		return plain
	})
	plain = filepath.Join(plainDir, "plain")
	sharedProgram(t, built, plain)
	return dir, prog, plain, runOn
}

var countsLine = regexp.MustCompile(`counts: main=(\d+) spin=(\d+) spin=(\d+)`)

// workedThousand checks the trace of a run that called work(1000) and
// ended without exit: every call is there, and the run ended.
func workedThousand(t *testing.T, out, _ string) {
	counts, errOut := reportCounts(t, out)
	want := map[string]int{"work": 1, "twice": 1000, "leaf": 2000}
	for f, n := range want {
		if counts[f] != n {
			t.Errorf("report: %s called %d times, want %d", f, counts[f], n)
		}
	}
	if errOut != "" {
		t.Errorf("report warned:\n%s", errOut)
	}
	if tr, _ := eventsByThread(t, out); tr.Meta.Unended {
		t.Error("the metadata left says the run did not end")
	}
}

// TestExitWays: a traced program that ends other than through exit
// (progs/exits.c) keeps its output and exit status under both tracers,
// and its trace holds what it recorded: _exit flushes every buffer and
// writes the final metadata, in the main thread, in a forked child (which
// writes its own stream only), and from a signal handler while other
// threads run (their buffers flushed whole, the interrupted thread's up to
// its last whole record, nothing twice); a vfork child's _exit and
// posix_spawn's leave the parent's buffers alone; a program killed by
// SIGKILL leaves a trace replay and report read, warning once. On x86-64
// and on arm64 (under qemu), the runtime linked and preloaded.
func TestExitWays(t *testing.T) {
	t.Parallel()
	cases := []exitCase{
		{"_exit", 5, workedThousand},
		{"quick_exit", 4, workedThousand},
		{"fork", 0, func(t *testing.T, out, _ string) {
			tr, by := eventsByThread(t, out)
			if tr.Meta.Unended || tr.Meta.Dropped != 0 {
				t.Errorf("meta: unended %v, dropped %d", tr.Meta.Unended, tr.Meta.Dropped)
			}
			// One thread each: the parent (its vfork and posix_spawn
			// children made none) and the forked child.
			want := map[bool]map[string]int{
				true:  {"work": 2, "twice": 30, "leaf": 60},
				false: {"work": 1, "twice": 1000, "leaf": 2000},
			}
			if len(by) != 2 {
				t.Fatalf("%d threads traced, want the parent and its forked child", len(by))
			}
			for _, s := range tr.Streams {
				got := tally(by[s.Tid])
				parent := s.Pid == tr.Meta.Pid
				for f, n := range want[parent] {
					if got[f] != n {
						t.Errorf("pid %d (parent %v): %s called %d times, want %d", s.Pid, parent, f, got[f], n)
					}
				}
			}
		}},
		{"kill", -1, func(t *testing.T, out, _ string) {
			counts, errOut := reportCounts(t, out)
			replay, replayErr := run(t, filepath.Dir(out), tool("ftpatch"), "replay", "--depth", "1", out)
			if strings.HasSuffix(out, "function_graph") && !strings.Contains(replay, "} /* main: did not return (still running at the trace's last event) */") {
				t.Errorf("replay does not say main was still running at the trace's last event:\n%.2000s", replay)
			}
			for cmd, e := range map[string]string{"report": errOut, "replay": replayErr} {
				if strings.Count(e, trace.ErrUnended.Error()) != 1 || !namesTrace(e, out) {
					t.Errorf("%s: stderr\n%s\nwant one warning naming %s: %v", cmd, e, out, trace.ErrUnended)
				}
			}
			// What was flushed before the kill: whole buffers, some.
			if counts["twice"] == 0 || counts["twice"] > 200000 || counts["leaf"] > 400000 {
				t.Errorf("report: %v; want some of the 200000 calls of twice and 400000 of leaf", counts)
			}
			tr, err := trace.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if !tr.Meta.Unended || tr.Meta.Nanos(tr.Meta.TSCEnd) <= 0 {
				t.Errorf("meta: unended %v, last record %.0f ns in; want unended, a time after the start", tr.Meta.Unended, tr.Meta.Nanos(tr.Meta.TSCEnd))
			}
		}},
		{"signal", 7, func(t *testing.T, out, stderr string) {
			m := countsLine.FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("no counts on stderr:\n%s", stderr)
			}
			var seen [3]int // calls of twice that had returned when the handler ran: main, spin, spin
			for i := range seen {
				seen[i], _ = strconv.Atoi(m[i+1])
			}
			tr, by := eventsByThread(t, out)
			if tr.Meta.Unended || tr.Meta.Dropped != 0 {
				t.Errorf("meta: unended %v, dropped %d", tr.Meta.Unended, tr.Meta.Dropped)
			}
			known := []string{"main", "by_signal", "idle", "spin", "work", "twice", "leaf"}
			var idle, spin int
			var spun []int
			for tid, events := range by {
				got := tally(events)
				for f := range got {
					if !slices.Contains(known, f) {
						t.Errorf("thread %d: %d calls of %s: garbage in its stream", tid, got[f], f)
					}
				}
				switch {
				case tid == tr.Meta.Pid:
					// Interrupted anywhere: the call of twice in flight is
					// recorded whole or not at all, and nothing twice.
					if n := got["twice"]; n != seen[0] && n != seen[0]+1 {
						t.Errorf("main thread: %d calls of twice traced, %d returned when the handler ran: want that, or one more", n, seen[0])
					}
				case got["idle"] == 1:
					idle++
					want := map[string]int{"idle": 1, "work": 1, "twice": 100, "leaf": 200}
					if !maps.Equal(got, want) {
						t.Errorf("idle thread %d: %v, want %v", tid, got, want)
					}
				case got["spin"] == 1:
					spin++
					spun = append(spun, got["twice"])
				default:
					t.Errorf("thread %d: %v, neither main, idle nor spinning", tid, got)
				}
			}
			if idle != 2 || spin != 2 {
				t.Fatalf("%d idle and %d spinning threads traced, want 2 and 2", idle, spin)
			}
			// Each spinning thread's calls that had returned were flushed.
			slices.Sort(spun)
			want := []int{seen[1], seen[2]}
			slices.Sort(want)
			if spun[0] < want[0] || spun[1] < want[1] {
				t.Errorf("spinning threads traced %v calls of twice, had made at least %v", spun, want)
			}
		}},
	}
	// Preloaded: the sites that call a hook through the PLT or the GOT
	// (x86-64 PIE -mfentry's call *__fentry__@GOTPCREL, arm64 -pg's bl
	// _mcount), one per architecture.
	sites := map[runtimeMode]map[string][]string{
		linkedMode: {
			"x86_64": {"-pg -mfentry", "-fpatchable-function-entry=5"},
			"arm64":  {"-fpatchable-function-entry=2", "-pg -mbranch-protection=standard"},
		},
		preloadedMode: {
			"x86_64": {"-pg -mfentry"},
			"arm64":  {"-pg -mbranch-protection=standard"},
		},
	}
	for _, mode := range runtimeModes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			forSites(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, sites[mode], func(t *testing.T, tg target, flags string) {
				testExitWays(t, tg, flags, mode, cases)
			})
		})
	}
}

// An exitCase is a way of TestExitWays's to end progs/exits.c.
type exitCase struct {
	how   string
	code  int // the untraced run's exit status; -1: killed
	check func(t *testing.T, out, stderr string)
}

// testExitWays runs TestExitWays's cases on progs/exits.c built by tg
// with flags, the runtime as mode says.
func testExitWays(t *testing.T, tg target, flags string, mode runtimeMode, cases []exitCase) {
	dir, prog, plain, runOn := exitsBuilds(t, tg, "-O2 "+flags, mode)
	if mode == linkedMode {
		// The program's _exit is the runtime's, exported for shared
		// objects to bind to (preloaded, the runtime's shared object
		// exports it: TestPreloadExports).
		syms, _ := run(t, dir, "readelf", "-W", "--dyn-syms", prog)
		if !regexp.MustCompile(`FUNC +WEAK +DEFAULT +[0-9]+ _exit\n`).MatchString(syms) {
			t.Errorf("the program exports no _exit of its own:\n%s", syms)
		}
	}
	for _, c := range cases {
		t.Run(c.how, func(t *testing.T) {
			// The same for every site flag and mode: run once.
			r := once(t, sharedKey("exits.c untraced run", tg.id(), c.how), func(string) ran {
				out, _, code, err := runStatus(filepath.Dir(plain), tg.on(plain, c.how)...)
				return ran{out, code, err}
			})
			wantOut, wantCode, err := r.out, r.code, r.err
			if err != nil || wantCode != c.code {
				t.Fatalf("untraced: exit %d, %v, want exit %d", wantCode, err, c.code)
			}
			for _, tracer := range []string{"function", "function_graph"} {
				out := filepath.Join(dir, c.how+"-"+tracer)
				got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_OUT=" + out}, runOn.on(prog, c.how)...)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, tracer, got, code, wantOut, wantCode)
				t.Run(tracer, func(t *testing.T) { c.check(t, out, errOut) })
			}
		})
	}
}

// TestExecChild: a traced program whose forked child execs a traced
// program (progs/exits.c exec) and the child record into one session,
// FTRACE_OUT: an image for the parent, and two for the child (its
// calls before its exec, then its new program's), and nothing beside
// it. A trace directory left by a
// finished run is still moved aside to .old. A program that execs in
// place records both its images there, the first ended at the exec. On
// x86-64 and on arm64 (under qemu, the program execing itself through
// qemu again: onSelf).
func TestExecChild(t *testing.T) {
	t.Parallel()
	forModes(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, func(t *testing.T, tg target, rt runtimeMode) {
		dir, prog, plain, runOn := exitsBuilds(t, tg, "-O2 "+preferred[tg.arch], rt)
		wantOut, _, wantCode, err := runStatus(filepath.Dir(plain), tg.onSelf(t, plain, "exec")...)
		if err != nil || wantCode != 0 || !strings.HasPrefix(wantOut, "child worked") {
			t.Fatalf("untraced: exit %d, %v, output %q", wantCode, err, wantOut)
		}
		for _, mode := range []string{"function", "function_graph"} {
			t.Run(mode, func(t *testing.T) {
				out := filepath.Join(dir, "t-"+mode)
				// A finished run's trace, to be moved aside.
				if err := os.MkdirAll(out, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(out, "keep"), []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
				got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}, runOn.onSelf(t, prog, "exec")...)
				if err != nil || code != 0 || got != wantOut {
					t.Fatalf("exit %d, %v, output %q; want exit 0, output %q\n%s", code, err, got, wantOut, errOut)
				}
				if b, err := os.ReadFile(filepath.Join(out+".old", "keep")); err != nil || string(b) != "mine" {
					t.Errorf("the earlier trace was not moved aside whole: %q, %v", b, err)
				}
				children, _ := filepath.Glob(out + ".[0-9]*")
				if olds, _ := filepath.Glob(out + ".old.*"); len(olds) != 0 || len(children) != 0 {
					t.Fatalf("beside the trace: %v and %v; want nothing", children, olds)
				}
				// The parent's image, the forked child's (its calls
				// before its exec, around a failed one) and the child's
				// exec'd program's, its second.
				im := images(t, out)
				execd := slices.IndexFunc(im, func(d string) bool { return strings.HasSuffix(d, ".2") })
				if len(im) != 3 || execd < 0 {
					t.Fatalf("the session holds %v; want the parent's image, and the child's two", im)
				}
				forked := slices.Index(im, strings.TrimSuffix(im[execd], ".2"))
				parent := 3 - execd - forked
				if forked < 0 {
					t.Fatalf("the session holds %v; want the child's first image beside its second", im)
				}
				for d, want := range map[string]map[string]int{
					im[parent]: {"main": 1, "work": 2, "twice": 5, "leaf": 10},
					im[forked]: {"work": 2, "twice": 5, "leaf": 10},
					im[execd]:  {"main": 1, "work": 1, "twice": 7, "leaf": 14},
					out:        {"main": 2, "work": 5, "twice": 17, "leaf": 34},
				} {
					counts, errOut := reportCounts(t, d)
					if !maps.Equal(counts, want) || errOut != "" {
						t.Errorf("%s: report %v, stderr %q; want %v", d, counts, errOut, want)
					}
				}
				// FTRACE_OUT with a trailing slash names the same
				// directory: made, then moved aside beside it.
				slash := filepath.Join(dir, "slash-"+mode)
				for i := 0; i < 2; i++ {
					if _, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + slash + "/"}, runOn.onSelf(t, prog, "exec-child")...); err != nil || code != 0 {
						t.Fatalf("FTRACE_OUT=%s/: exit %d, %v\n%s", slash, code, err, errOut)
					}
				}
				for _, d := range []string{slash, slash + ".old"} {
					if counts, errOut := reportCounts(t, d); counts["twice"] != 7 || errOut != "" {
						t.Errorf("%s: report %v\n%s", d, counts, errOut)
					}
				}
				if inside, _ := filepath.Glob(filepath.Join(image(t, slash), "*")); len(inside) != 2 {
					t.Errorf("%s holds %v; want its meta and one stream", slash, inside)
				}
				// A program that execs in place, from its main
				// thread or another: its calls before the exec end
				// its first image (ended, no warning); the exec'd
				// program's is its second, in the same session.
				// Nothing is beside it. The main thread's buffer,
				// which an exec from another thread discards, is
				// counted.
				for _, how := range []string{"exec-self", "exec-thread"} {
					self := filepath.Join(dir, how+"-"+mode)
					got, errOut, code, err = runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + self}, runOn.onSelf(t, prog, how)...)
					if err != nil || code != 0 || !strings.HasPrefix(got, "child worked") {
						t.Fatalf("%s: exit %d, %v, output %q\n%s", how, code, err, got, errOut)
					}
					beside, _ := filepath.Glob(self + ".*")
					im := images(t, self)
					if len(beside) != 0 || len(im) != 2 || im[1] != im[0]+".2" {
						t.Fatalf("%s: beside the session %v, in it %v; want nothing beside, the process's two images in it", how, beside, im)
					}
					tr, err := trace.Read(im[0])
					if err != nil {
						t.Fatal(err)
					}
					next := im[1:]
					before := map[string]int{"main": 1, "work": 1, "twice": 1, "leaf": 2}
					lost, warning := uint64(0), ""
					if how == "exec-thread" { // main's calls are lost with its thread
						before = map[string]int{"on_thread": 1, "work": 1, "twice": 1, "leaf": 2}
						lost, warning = 1, "ftpatch: warning: "+im[0]+": events lost: 1 thread's records were not written: its calls are missing\n"
					}
					for d, c := range map[string]struct {
						want map[string]int
						note string
					}{
						im[0]:   {before, warning},
						next[0]: {map[string]int{"main": 1, "work": 1, "twice": 7, "leaf": 14}, ""},
					} {
						if counts, errOut := reportCounts(t, d); !maps.Equal(counts, c.want) || errOut != c.note {
							t.Errorf("%s: report %v, stderr %q; want %v, %q", d, counts, errOut, c.want, c.note)
						}
					}
					if tr.Meta.Unended || tr.Meta.LostThreads != lost {
						t.Errorf("%s: meta: unended %v, lost_threads %d; want an ended trace, %d", how, tr.Meta.Unended, tr.Meta.LostThreads, lost)
					}
				}
			})
		}
	})
}

// TestSpawnChild: the children a traced program starts with an
// environment of its own that holds no FTRACE* variable (progs/exits.c
// spawn: by posix_spawn, posix_spawnp, and execve and execle in a forked
// child) are traced as a forked-and-exec'd child is, each an image of
// the parent's session, which report sums; what they print (their
// tag from that environment) is what they print untraced. A child given
// an FTRACE* variable of its own keeps its environment as given
// (FTRACE_FILTER alone traces nothing there), and FTRACE_INHERIT=0 passes
// nothing on.
func TestSpawnChild(t *testing.T) {
	t.Parallel()
	forModes(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, func(t *testing.T, tg target, rt runtimeMode) {
		dir, prog, plain, runOn := exitsBuilds(t, tg, "-O2 "+preferred[tg.arch], rt)
		wantOut, _, wantCode, err := runStatus(filepath.Dir(plain), tg.onSelf(t, plain, "spawn")...)
		if err != nil || wantCode != 0 || strings.Count(wantOut, "child worked") != 5 {
			t.Fatalf("untraced: exit %d, %v, output %q", wantCode, err, wantOut)
		}
		for _, inherit := range []bool{true, false} {
			out := filepath.Join(dir, fmt.Sprintf("inherit-%v", inherit))
			env := []string{"FTRACE=function", "FTRACE_OUT=" + out}
			if !inherit {
				env = append(env, "FTRACE_INHERIT=0")
			}
			got, errOut, code := runNoFtrace(t, dir, env, runOn.onSelf(t, prog, "spawn")...)
			if got != wantOut || code != 0 {
				t.Fatalf("inherit %v: exit %d, output\n%s\nwant exit 0, output\n%s\n%s", inherit, code, got, wantOut, errOut)
			}
			im := images(t, out)
			parent := ""
			for _, c := range im {
				tr, err := trace.Open(c)
				if err != nil {
					t.Fatal(err)
				}
				if tr.Meta.Image == 1 && len(tr.Meta.Cmdline) > 1 && tr.Meta.Cmdline[1] == "spawn" {
					parent = c
					continue
				}
				if counts, errOut := reportCounts(t, c); !maps.Equal(counts, map[string]int{"main": 1, "work": 1, "twice": 7, "leaf": 14}) || errOut != "" {
					t.Errorf("%s: report %v, stderr %q", c, counts, errOut)
				}
			}
			if want := map[bool]int{true: 5, false: 1}[inherit]; len(im) != want || parent == "" {
				t.Errorf("inherit %v: %d images in the session (%v), want %d, the parent's among them", inherit, len(im), im, want)
			}
			if counts, errOut := reportCounts(t, parent); !maps.Equal(counts, map[string]int{"main": 1, "work": 1, "twice": 2, "leaf": 4}) || errOut != "" {
				t.Errorf("%s: report %v, stderr %q; want the parent's calls", parent, counts, errOut)
			}
		}
	})
}
