// Command trace-bench measures reading a big trace (`make bench`): a
// generated multi-threaded C program (program.go: a few hundred functions
// of every shape calling each other in a pseudo-random tree, each count
// of calls known from the source) makes -calls calls in all (default
// 100 M), built twice from one source:
//
//	ftpatch   gcc -O2 $(ftpatch flags --cflags), recordmcount, the runtime
//	          linked; run with FTRACE=function_graph
//	uftrace   gcc -O2 -pg, run under `uftrace record --no-libcall
//	          --no-sched --buffer=4M` (nothing but the program's own calls,
//	          and buffers big enough that the writer keeps up: a lost
//	          record shows as fewer calls in its report)
//
// It reports each recording's wall time and the trace's bytes per call,
// then, for every view of the trace (the views table: replay, report,
// graph and the dumps, ftpatch's and uftrace's where it has one), the
// wall time, calls per second, cores used ((user+sys)/wall) and peak RSS
// of the command writing its output to a file, with the ratio of
// ftpatch's to uftrace's, and the targets: at most 16 bytes per call;
// replay at least 2 M calls/s and twice uftrace's; report at least
// 5 M calls/s and twice uftrace's; at most 150 MB peak RSS for every
// ftpatch command. A view the ftpatch binary does not have reads "not
// built".
//
// Each reading command is stopped once its resident memory passes a
// limit (-memlimit, watched every 20 ms), so one that would take the
// machine's memory fails instead, reported with the RSS it reached, and
// the benchmark goes on; and it runs under a file-size limit of the
// disk's free space less a reserve, so its output cannot fill the disk. Everything
// is written to a temporary directory, removed at the end unless -keep.
// A quick run:
//
//	go run ./bench/trace -calls 2000000
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ftpatch/internal/machine"
	"ftpatch/internal/measure"
)

// A view is one command that reads the whole trace and writes what it
// shows to its standard output, as ftpatch and (where it has one)
// uftrace spell it: the trace directory goes after ftpatch's arguments,
// and after uftrace's as -d DIR. Adding a view is one line here.
type view struct {
	name    string
	ftpatch []string
	uftrace []string // nil: uftrace has no such view
	rate    float64  // ftpatch's target, calls/s; 0: none
	ratio   float64  // ftpatch's target, its calls/s over uftrace's; 0: none
}

var views = []view{
	{"replay", []string{"replay"}, []string{"replay"}, 2e6, 2},
	{"report", []string{"report"}, []string{"report"}, 5e6, 2},
	{"graph", []string{"graph"}, []string{"graph"}, 0, 0},
	{"dump --chrome", []string{"dump", "--chrome"}, []string{"dump", "--chrome"}, 0, 0},
	{"dump --perfetto", []string{"dump", "--perfetto"}, nil, 0, 0},
	{"dump --flame-graph", []string{"dump", "--flame-graph"}, []string{"dump", "--flame-graph"}, 0, 0},
	{"dump --svg", []string{"dump", "--svg"}, nil, 0, 0},
}

// The targets every run is held to.
const (
	maxBytesPerCall = 16  // the trace, function_graph
	maxRSSMB        = 150 // every ftpatch command's peak RSS
	// traceAllowance is what a trace adds to its calls' 16 bytes, in
	// bytes a call at the bench's sizes (a million calls or more): its
	// metadata, a stream header per thread, and the full timestamps
	// where a delta does not fit.
	traceAllowance = 0.02
)

// Disk: what recording needs, per call, before anything is written (the
// trace today is 24 bytes a call, uftrace's about 33; both with room to
// spare), and the space every command leaves free.
const (
	ftpatchBytesEstimate = 32
	uftraceBytesEstimate = 48
	diskReserve          = 1 << 30
)

// uftraceRecord is how uftrace records the program: only the program's
// own functions (not the C library's), no scheduling events (ftpatch
// records none), and 4 MB buffers rather than 128 KB, so that its writer
// keeps up with four threads on two cores and drops nothing.
var uftraceRecord = []string{"record", "--no-libcall", "--no-sched", "--buffer=4M"}

func main() {
	calls := flag.Int64("calls", 100_000_000, "calls the program makes in all, about")
	threads := flag.Int("threads", 4, "the program's worker threads")
	funcs := flag.Int("funcs", 300, "functions generated")
	seed := flag.Uint64("seed", 1, "the generator's seed")
	only := flag.String("only", "", "run only these views, by name, comma-separated (replay,report,...); the recordings are always made")
	keep := flag.Bool("keep", false, "keep the work directory (programs, traces) and say where it is")
	bin := flag.String("bin", "bin", "directory holding ftpatch and recordmcount")
	dir := flag.String("dir", "", "where to make the work directory (default: the system's temporary directory)")
	memLimit := flag.Int64("memlimit", 4096, "resident memory at which a reading command is stopped, MB (0: none)")
	flag.Parse()
	want := map[string]bool{}
	for _, name := range strings.Split(*only, ",") {
		if name == "" {
			continue
		}
		if !slices.ContainsFunc(views, func(v view) bool { return v.name == name }) {
			fmt.Fprintf(os.Stderr, "trace-bench: -only %q: no such view; the views: %s\n", name, viewNames())
			os.Exit(2)
		}
		want[name] = true
	}
	var chosen []view
	for _, v := range views {
		if len(want) == 0 || want[v.name] {
			chosen = append(chosen, v)
		}
	}
	// Stopped, or its output closed (| head), it stops its command and
	// removes its work directory: a recording is gigabytes.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer stop()
	b := &bench{views: chosen, memLimit: *memLimit << 20}
	if err := b.run(ctx, *bin, *dir, *funcs, *threads, *calls, *seed, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "trace-bench:", err)
		os.Exit(1)
	}
}

func viewNames() string {
	names := make([]string, len(views))
	for i, v := range views {
		names[i] = v.name
	}
	return strings.Join(names, ", ")
}

// A bench is one run of the benchmark.
type bench struct {
	views    []view
	memLimit int64 // bytes; 0: none
	work     string
	prog     *program
	ftpatch  string // the binary
	uftrace  bool   // uftrace is installed
	targets  []string
}

// A result is what one command cost, or why it has no figures.
type result struct {
	wall     time.Duration
	cpu      time.Duration
	rss      int64 // KB
	out      int64 // bytes written to its standard output
	notBuilt bool  // the ftpatch binary has no such command
	failed   string
	counted  int64 // a report's calls, added up; 0: not a report, or none parsed
}

// run generates the program into a new directory in parent (the
// system's temporary directory if ""), builds it with the tools in bin,
// records it and times every view; keep leaves the directory behind.
func (b *bench) run(ctx context.Context, bin, parent string, funcs, threads int, calls int64, seed uint64, keep bool) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	b.ftpatch = filepath.Join(bin, "ftpatch")
	_, err = exec.LookPath("uftrace")
	b.uftrace = err == nil
	fmt.Printf("machine: %s; load average at start %s\n", machine.Name(), machine.LoadAvg())
	if b.work, err = os.MkdirTemp(parent, "ftpatch-trace-bench-"); err != nil {
		return err
	}
	if keep {
		defer fmt.Printf("work directory kept: %s\n", b.work)
	} else {
		defer os.RemoveAll(b.work)
	}
	if b.prog, err = generate(funcs, threads, calls, seed); err != nil {
		return err
	}
	p := b.prog
	fmt.Printf("program: %d functions, calls nested up to %d deep; %d threads, each calling the root (which calls %d functions) %d times: %d calls\n",
		p.funcs, p.depth, p.threads, p.tops, p.rootRep, p.calls)
	if err := b.build(bin); err != nil {
		return err
	}
	if free, need := freeSpace(b.work), p.calls*(ftpatchBytesEstimate+uftraceBytesEstimate)+diskReserve; free < need {
		return fmt.Errorf("not enough disk space in %s: recording %d calls needs about %.1f GB (%d bytes a call for ftpatch's trace, %d for uftrace's, and %.1f GB to spare), %.1f GB is free; give -dir elsewhere or fewer -calls",
			b.work, p.calls, gb(need), ftpatchBytesEstimate, uftraceBytesEstimate, gb(diskReserve), gb(free))
	}
	fmt.Printf("\n%-20s %-8s %10s %10s %6s %10s %10s   %s\n", "command", "tool", "wall", "calls/s", "cores", "peak RSS", "output", "ftpatch/uftrace: calls/s, RSS")
	fmt.Printf("(cores: (user+sys)/wall; output: a recording's trace, a view's standard output)\n")
	out := filepath.Join(b.work, "out")
	plain := b.measure(ctx, []string{filepath.Join(b.work, "plain")}, nil, out, false)
	want, err := os.ReadFile(out)
	if err != nil || plain.failed != "" {
		return fmt.Errorf("the untraced program: %s%w", plain.failed, err)
	}
	b.print("untraced", "", plain, result{})
	rec := b.record(ctx, "ftpatch", []string{filepath.Join(b.work, "prog-ftpatch")}, []string{"FTRACE=function_graph", "FTRACE_OUT=" + b.dir("ftpatch")}, want)
	var urec result
	if b.uftrace {
		urec = b.record(ctx, "uftrace", append(append([]string{"uftrace"}, uftraceRecord...), "-d", b.dir("uftrace"), filepath.Join(b.work, "prog-pg")), nil, want)
	}
	b.print("record", "ftpatch", rec, urec)
	if b.uftrace {
		b.print("", "uftrace", urec, result{})
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if rec.failed != "" {
		return fmt.Errorf("ftpatch's recording failed: %s", rec.failed)
	}
	// A call's records are 16 bytes; the trace adds, once, its metadata
	// (16 KiB set aside) and a header per stream, and a full timestamp
	// wherever a delta does not fit (a preemption, a flush): together
	// well under a hundredth of a byte a call at this size.
	per := float64(rec.out) / float64(p.calls)
	b.target(fmt.Sprintf("trace at most %d bytes per call (and its fixed part, and the full timestamps where a delta does not fit: %.2f in all): %.3f", maxBytesPerCall, traceAllowance, per), per <= maxBytesPerCall+traceAllowance)
	if b.uftrace && urec.failed == "" {
		fmt.Printf("%29s trace: ftpatch %.3f bytes/call, uftrace %.3f\n", "", per, float64(urec.out)/float64(p.calls))
	}
	fmt.Println()

	for _, v := range b.views {
		ours := b.read(ctx, v.ftpatch, "ftpatch")
		theirs := result{notBuilt: true}
		if v.uftrace != nil && b.uftrace {
			theirs = b.read(ctx, v.uftrace, "uftrace")
		}
		b.print(v.name, "ftpatch", ours, theirs)
		if v.uftrace != nil {
			if !b.uftrace {
				fmt.Printf("%-20s %-8s uftrace not installed (scripts/deps.sh bench)\n", "", "uftrace")
			} else {
				b.print("", "uftrace", theirs, result{})
			}
		}
		if ours.counted != 0 || theirs.counted != 0 {
			fmt.Printf("%29s calls the reports count: ftpatch's %s, uftrace's %s; the program made %d\n", "", counted(ours), counted(theirs), p.calls)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		b.viewTargets(v, ours, theirs)
	}
	fmt.Printf("\nthis process's own peak RSS, the floor under every figure above: %.1f MB\n", float64(measure.SelfHWM())/1024)
	fmt.Printf("load average at end: %s\n\ntargets:\n", machine.LoadAvg())
	for _, t := range b.targets {
		fmt.Println("  " + t)
	}
	return nil
}

// dir is where tool's trace is recorded.
func (b *bench) dir(tool string) string { return filepath.Join(b.work, "t-"+tool) }

// build writes the program and builds it three ways: untraced (its
// output is the traced runs' reference), for ftpatch and for uftrace.
func (b *bench) build(bin string) error {
	if err := os.WriteFile(filepath.Join(b.work, "prog.c"), []byte(b.prog.src), 0o644); err != nil {
		return err
	}
	flags := map[string][]string{}
	for _, f := range []string{"--cflags", "--libs"} {
		out, err := exec.Command(b.ftpatch, "flags", f).Output()
		if err != nil {
			return fmt.Errorf("ftpatch flags %s: %w", f, err)
		}
		flags[f] = strings.Fields(string(out))
	}
	steps := [][]string{
		{"gcc", "-O2", "prog.c", "-o", "plain", "-lpthread"},
		append(append([]string{"gcc", "-O2"}, flags["--cflags"]...), "-c", "prog.c", "-o", "prog-ftpatch.o"),
		{filepath.Join(bin, "recordmcount"), "prog-ftpatch.o"},
		append(append([]string{"gcc", "prog-ftpatch.o", "-o", "prog-ftpatch"}, flags["--libs"]...), "-lpthread"),
	}
	if b.uftrace {
		steps = append(steps, []string{"gcc", "-O2", "-pg", "prog.c", "-o", "prog-pg", "-lpthread"})
	}
	if err := measure.Steps(b.work, steps...); err != nil {
		return err
	}
	return nil
}

// record runs the traced program (argv, with env added) and checks it
// printed what the untraced one did; the result's output is the trace's
// size.
func (b *bench) record(ctx context.Context, tool string, argv, env []string, want []byte) result {
	out := filepath.Join(b.work, "out")
	r := b.measure(ctx, argv, env, out, false)
	if r.failed == "" {
		if got, _ := os.ReadFile(out); string(got) != string(want) {
			r.failed = fmt.Sprintf("printed %q, the untraced program %q", got, want)
		}
	}
	os.Remove(out)
	r.out = measure.DirSize(b.dir(tool))
	return r
}

// read runs one view's command of tool on tool's trace, its output to a
// file, under the limits. The output is removed afterwards; a report's
// calls are added up first, to check the trace holds every call.
func (b *bench) read(ctx context.Context, args []string, tool string) result {
	var argv []string
	if tool == "ftpatch" {
		argv = append(append([]string{b.ftpatch}, args...), b.dir(tool))
	} else {
		argv = append(append([]string{"uftrace"}, args...), "--no-pager", "-d", b.dir(tool))
	}
	out := filepath.Join(b.work, "out")
	r := b.measure(ctx, argv, nil, out, true)
	if r.failed == "" && args[0] == "report" {
		r.counted = reportCalls(out)
	}
	os.Remove(out)
	return r
}

// measure runs argv with its standard output to the file out, timing it
// from start to exit. Limited, it runs under a file-size limit of the
// disk's free space less diskReserve (prlimit sets it, then execs argv:
// its rusage is argv's), and is killed once its resident memory passes
// the memory limit. That is watched, not an RLIMIT_AS: a Go program
// reserves far more address space than it uses (ftpatch does not start
// under a 600 MB RLIMIT_AS), so an address-space limit would stop it at
// some unknown fraction of its real use.
func (b *bench) measure(ctx context.Context, argv, env []string, out string, limited bool) result {
	if limited {
		argv = append([]string{"prlimit", fmt.Sprintf("--fsize=%d", max(0, freeSpace(b.work)-diskReserve)), "--"}, argv...)
	}
	f, err := os.Create(out)
	if err != nil {
		return result{failed: err.Error()}
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = f
	stderr := &headWriter{max: 4096}
	cmd.Stderr = stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{failed: err.Error()}
	}
	var over chan int64 // the RSS, in KB, at which the watch killed it
	if limited && b.memLimit > 0 {
		over = make(chan int64, 1)
		done := make(chan struct{})
		defer close(done)
		go watch(cmd.Process, b.memLimit>>10, done, over)
	}
	err = cmd.Wait()
	r := result{wall: time.Since(start)}
	r.cpu, r.rss = measure.CPU(cmd.ProcessState), measure.MaxRSS(cmd.ProcessState)
	if fi, err := f.Stat(); err == nil {
		r.out = fi.Size()
	}
	if err == nil {
		return r
	}
	msg := stderr.String()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	killed := int64(-1)
	select {
	case killed = <-over:
	default:
	}
	switch {
	case ctx.Err() != nil:
		r.failed = "interrupted"
	case killed >= 0:
		r.failed = fmt.Sprintf("stopped after %.1f s at %.0f MB resident, past the %d MB limit (-memlimit)", r.wall.Seconds(), mb(killed), b.memLimit>>20)
	case strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown flag") || strings.Contains(msg, "unknown shorthand flag"):
		r.notBuilt = true
	case ws.Signaled() && ws.Signal() == syscall.SIGXFSZ:
		r.failed = fmt.Sprintf("its output reached the disk's free space less %.0f GB (%s written)", gb(diskReserve), size(r.out))
	case ws.Signaled():
		r.failed = fmt.Sprintf("killed by %v after %.1f s", ws.Signal(), r.wall.Seconds())
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory"):
		r.failed = fmt.Sprintf("out of memory after %.1f s", r.wall.Seconds())
	default:
		first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
		r.failed = fmt.Sprintf("%v: %s", err, first)
	}
	return r
}

// watch reads p's resident memory every 20 ms until done is closed; once
// it passes limit (KB), it kills p and sends what it read on over.
func watch(p *os.Process, limit int64, done <-chan struct{}, over chan<- int64) {
	statm := fmt.Sprintf("/proc/%d/statm", p.Pid)
	page := int64(os.Getpagesize()) >> 10
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		b, err := os.ReadFile(statm)
		if err != nil {
			continue
		}
		var size, resident int64
		fmt.Sscan(string(b), &size, &resident)
		if rss := resident * page; rss > limit {
			over <- rss // before the kill, so it is there when Wait returns
			p.Kill()
			return
		}
	}
}

// print prints one row: the command's figures, or why it has none; with
// other (uftrace's result for the same view), the ratios.
func (b *bench) print(name, tool string, r, other result) {
	lead := fmt.Sprintf("%-20s %-8s", name, tool)
	switch {
	case r.notBuilt:
		fmt.Printf("%s not built\n", lead)
		return
	case r.failed != "":
		fmt.Printf("%s FAILED: %s; peak RSS %.0f MB\n", lead, r.failed, mb(r.rss))
		return
	}
	rate := float64(b.prog.calls) / r.wall.Seconds()
	fmt.Printf("%s %9.2fs %8.2f M %6.2f %7.0f MB %10s", lead, r.wall.Seconds(), rate/1e6, r.cpu.Seconds()/r.wall.Seconds(), mb(r.rss), size(r.out))
	if !other.notBuilt && other.failed == "" && other.wall > 0 {
		fmt.Printf("   %.2fx, %.2fx", other.wall.Seconds()/r.wall.Seconds(), float64(r.rss)/float64(other.rss))
	}
	fmt.Println()
}

// viewTargets checks ftpatch's figures for view v against its targets.
func (b *bench) viewTargets(v view, ours, theirs result) {
	if ours.notBuilt {
		b.targets = append(b.targets, fmt.Sprintf("%s: not built", v.name))
		return
	}
	if ours.failed != "" {
		b.targets = append(b.targets, fmt.Sprintf("%s: FAILED (%s): NOT MET", v.name, ours.failed))
		return
	}
	rate := float64(b.prog.calls) / ours.wall.Seconds()
	if v.rate > 0 {
		b.target(fmt.Sprintf("%s at least %.0f M calls/s: %.2f M", v.name, v.rate/1e6, rate/1e6), rate >= v.rate)
	}
	if v.ratio > 0 {
		if theirs.notBuilt || theirs.failed != "" {
			b.targets = append(b.targets, fmt.Sprintf("%s at least %.0fx uftrace's calls/s: uftrace has no figure", v.name, v.ratio))
		} else {
			x := theirs.wall.Seconds() / ours.wall.Seconds()
			b.target(fmt.Sprintf("%s at least %.0fx uftrace's calls/s: %.2fx", v.name, v.ratio, x), x >= v.ratio)
		}
	}
	b.target(fmt.Sprintf("%s peak RSS at most %d MB: %.0f MB", v.name, maxRSSMB, mb(ours.rss)), ours.rss <= maxRSSMB*1024)
}

// target records one target's verdict, printed at the end.
func (b *bench) target(what string, met bool) {
	verdict := "met"
	if !met {
		verdict = "NOT MET"
	}
	b.targets = append(b.targets, what+": "+verdict)
}

// reportCalls adds up the calls column of a report (ftpatch's or
// uftrace's: a function's row ends "... CALLS NAME"), read line by line;
// 0 if no row parses.
func reportCalls(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var n int64
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 6 {
			continue
		}
		if c, err := strconv.ParseInt(fields[len(fields)-2], 10, 64); err == nil {
			n += c
		}
	}
	if s.Err() != nil {
		return 0
	}
	return n
}

// counted is the calls r's report counts, or why there is no count.
func counted(r result) string {
	if r.counted == 0 {
		return "none"
	}
	return strconv.FormatInt(r.counted, 10)
}

// freeSpace is the bytes an unprivileged user may still write on dir's
// file system (0 if unknown).
func freeSpace(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0
	}
	return int64(st.Bavail) * st.Bsize
}

// A headWriter keeps the first max bytes written to it: the start of a
// command's standard error, where the reason it failed is, without
// holding a runtime's whole dump of goroutines.
type headWriter struct {
	b   []byte
	max int
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p[:min(len(p), w.max-len(w.b))]...)
	return len(p), nil
}

func (w *headWriter) String() string { return string(w.b) }

func gb(n int64) float64  { return float64(n) / (1 << 30) }
func mb(kb int64) float64 { return float64(kb) / 1024 }

// size prints a byte count in the unit that suits it.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", gb(n))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%d B", n)
}
