package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"ftpatch/internal/escape"
	"ftpatch/model"
	"ftpatch/progress"
	"ftpatch/symbols"
	"ftpatch/trace"
	"ftpatch/views"
)

// A loaded trace: the session opened (every process image chosen of the
// directories given), the symbols of each, and the warnings already said
// about them. t and syms are the first process's: what a command about
// one trace (report --diff) reads.
type loaded struct {
	s      *trace.Session
	procs  []proc
	t      *trace.Trace
	syms   *symbols.Table
	warned map[string]bool
	stderr io.Writer
	// The progress bar's goroutine: stop tells it to end, it closes
	// stopped when it has (endProgress, once).
	stop, stopped chan struct{}
	ended         sync.Once
	libname       bool // names library calls name@library (--libname): a --diff base's too
}

// A proc is one process image of a loaded session: its trace and the
// symbols that name its addresses.
type proc struct {
	t    *trace.Trace
	syms *symbols.Table
}

// load opens the trace directories args name (default ftrace.data) as
// one session (trace.OpenSession: a session's every process image, a
// trace directory's one process), keeps the processes sel chooses, and
// reads the symbols of each (exe, for those running an executable of
// its name, or the path each recorded, and their shared objects); what
// a trace lacks (a program that did not end through exit or _exit,
// files cut short, events the runtime lost) and a shared object it
// cannot name are warnings on stderr, and the traces beside a trace
// directory of processes that started while it ran (DIR.PID) are named
// there too. The streams are read by the command, as it goes.
func load(args []string, exe string, sel selection, libname bool, stderr io.Writer) (*loaded, error) {
	s, err := trace.OpenSession(traceDirs(args)...)
	if err != nil {
		return nil, err
	}
	if s, err = sel.choose(s); err != nil {
		return nil, err
	}
	l := &loaded{s: s, warned: map[string]bool{}, stderr: stderr, stop: make(chan struct{}), stopped: make(chan struct{}), libname: libname}
	l.warn(false)
	cache := symbols.NewCache() // a program's symbols once for all its processes
	for _, t := range s.Procs {
		e := ""
		if exe != "" && (len(s.Procs) == 1 || filepath.Base(exe) == filepath.Base(t.Meta.Exe)) {
			e = exe
		}
		syms, warns, err := cache.LoadProcess(&t.Meta, e)
		if err != nil {
			return nil, err
		}
		if libname {
			syms.WithLibNames()
		}
		l.procs = append(l.procs, proc{t, syms})
		for _, w := range warns {
			fmt.Fprintf(stderr, "ftpatch: warning: %s\n", escape.Lines(w.Error()))
		}
	}
	l.t, l.syms = l.procs[0].t, l.procs[0].syms
	for _, p := range l.procs {
		if !slices.Contains(s.Dirs, p.t.Dir) {
			continue // a session's image: a session has nothing beside it of its own
		}
		for _, b := range p.t.Beside() {
			fmt.Fprintf(stderr, "ftpatch: note: %s holds the trace of a process that started while this one ran (one it exec'd?)\n", b)
		}
	}
	for _, d := range s.Skipped {
		fmt.Fprintf(stderr, "ftpatch: note: %s has no metadata yet (a process that was starting): left out\n", d)
	}
	go l.progress()
	return l, nil
}

// traceDirs are the trace directories a command's arguments name: those
// given, or ftrace.data.
func traceDirs(args []string) []string {
	if len(args) > 0 {
		return args
	}
	return []string{"ftrace.data"}
}

// selection is the choice of a session's processes the reading commands
// share: --pid and --comm.
type selection struct {
	pids []int
	comm string
}

// register adds --pid and --comm to cmd.
func (s *selection) register(cmd *cobra.Command) {
	cmd.Flags().IntSliceVar(&s.pids, "pid", nil, "only these processes of a session (a list, or repeat the flag)")
	cmd.Flags().StringVar(&s.comm, "comm", "", "only the processes of a session whose name (comm, else executable) matches `GLOB`")
}

// choose keeps the processes of s the flags ask for.
func (sel selection) choose(s *trace.Session) (*trace.Session, error) {
	out, err := s.Select(sel.pids, sel.comm)
	if errors.Is(err, trace.ErrNoProcess) {
		var have []string
		for _, t := range s.Procs {
			have = append(have, fmt.Sprintf("%d (%s)", t.Meta.Pid, escape.Text(t.Meta.Name())))
		}
		return nil, usage(fmt.Errorf("%w by --pid %v --comm %q; it has %s", err, sel.pids, sel.comm, strings.Join(have, ", ")))
	}
	return out, err
}

// exeFlag registers --exe, the traced executable, into exe.
func exeFlag(cmd *cobra.Command, exe *string) {
	cmd.Flags().StringVar(exe, "exe", "", "the traced executable (default: the path recorded in the trace)")
}

// progressAfter is how long a read goes on before it shows a progress
// bar (on a terminal).
var progressAfter = 2 * time.Second

// progress draws the share of the trace read so far on stderr, when it
// is a terminal and the read takes more than progressAfter, until
// finish.
func (l *loaded) progress() {
	defer close(l.stopped)
	f, ok := l.stderr.(*os.File)
	if !ok {
		return
	}
	bar := progress.ForTerminal(f, 0)
	if bar == nil {
		return
	}
	for _, p := range l.procs {
		p.t.BytesRead.Store(0)
	}
	total := int(max(1, l.s.Size()>>20))
	if progressAfter > 0 {
		delay := time.NewTimer(progressAfter)
		defer delay.Stop()
		select {
		case <-l.stop:
			return
		case <-delay.C:
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var read int64
		for _, p := range l.procs {
			read += p.t.BytesRead.Load()
		}
		bar.Update(int(read>>20), total)
		select {
		case <-l.stop:
			bar.Done()
			return
		case <-tick.C:
		}
	}
}

// warn says on stderr the trace's warnings not said yet. Until its
// streams are read (read false) it keeps back the flight recorder's
// (trace.ErrWrapped), which names the streams that begin where a ring
// wrapped: only reading them finds those, and said before, it would be
// said again, worded otherwise, once they were found.
func (l *loaded) warn(read bool) {
	var warns []error
	for _, p := range l.procs {
		warns = append(warns, p.t.Warnings()...)
	}
	for _, w := range warns {
		if !read && errors.Is(w, trace.ErrWrapped) {
			continue
		}
		if !l.warned[w.Error()] {
			fmt.Fprintf(l.stderr, "ftpatch: warning: %s\n", escape.Lines(w.Error()))
			l.warned[w.Error()] = true
		}
	}
}

// endProgress ends the progress bar (clearing it, if drawn): at the
// command's end, or before a pager takes the terminal.
func (l *loaded) endProgress() {
	l.ended.Do(func() {
		close(l.stop)
		<-l.stopped
	})
}

// finish ends a command that read the trace: the warnings reading its
// streams found (a stream cut short, those a flight recorder's ring
// wrapped in), which load could not know yet, on stderr; then err.
func (l *loaded) finish(err error) error {
	l.endProgress()
	l.warn(true)
	return err
}

// graphFlags are the filters replay and report share.
type graphFlags struct {
	tids      []int
	depth     int
	threshold time.Duration
	funcs     []string
	hide      []string
	timeRange string
	sel       selection
	libname   bool
}

// register adds the filters' flags to cmd; views do without the
// threshold, which decides a call only at its end.
func (g *graphFlags) register(cmd *cobra.Command, threshold bool) {
	fl := cmd.Flags()
	fl.IntSliceVar(&g.tids, "tid", nil, "only these threads (a list, or repeat the flag)")
	fl.IntVarP(&g.depth, "depth", "D", 0, "only calls at most this deep (function_graph; with -F, counted from the chosen function)")
	if threshold {
		fl.DurationVarP(&g.threshold, "threshold", "t", 0, "only calls that took at least this long, e.g. 2us (function_graph)")
	}
	fl.StringSliceVarP(&g.funcs, "funcs", "F", nil, "only calls of functions matching GLOB and what they call (function_graph; a list, or repeat the flag; the function tracer: only those functions)")
	fl.StringSliceVarP(&g.hide, "hide", "N", nil, "no calls of functions matching GLOB nor what they call (function_graph; the function tracer: not those functions)")
	g.sel.register(cmd)
	fl.StringVar(&g.timeRange, "time-range", "", "only calls that began in FROM~TO, times since tracing began (e.g. 10ms~25ms, ~1s, 2.5s~)")
	fl.BoolVar(&g.libname, "libname", false, "name each call into a shared library name@library (strlen@libc.so.6: the library its symbol's version names)")
}

// filter is the trace.Filter the flags ask for.
func (g *graphFlags) filter() (trace.Filter, error) {
	f := trace.Filter{Tids: g.tids, Depth: g.depth, Threshold: float64(g.threshold.Nanoseconds())}
	var err error
	if f.Funcs, err = trace.ParseGlobs(g.funcs); err != nil {
		return f, usage(fmt.Errorf("-F: %w", err))
	}
	if f.Hide, err = trace.ParseGlobs(g.hide); err != nil {
		return f, usage(fmt.Errorf("-N: %w", err))
	}
	if g.timeRange != "" {
		from, to, ok := strings.Cut(g.timeRange, "~")
		if !ok {
			return f, usage(fmt.Errorf("--time-range %q: want FROM~TO (either may be empty), e.g. 10ms~25ms", g.timeRange))
		}
		for _, p := range []struct {
			s  string
			ns *float64
		}{{from, &f.TimeFrom}, {to, &f.TimeTo}} {
			if p.s == "" {
				continue
			}
			d, err := time.ParseDuration(p.s)
			if err != nil || d < 0 {
				return f, usage(fmt.Errorf("--time-range %q: %q is not a duration since tracing began (e.g. 1.5ms, 2s)", g.timeRange, p.s))
			}
			*p.ns = float64(d.Nanoseconds())
		}
		f.Until = to != ""
		if f.Until && f.TimeTo < f.TimeFrom {
			return f, usage(fmt.Errorf("--time-range %q: ends before it begins", g.timeRange))
		}
	}
	return f, nil
}

func newReplay(stdout io.Writer) *cobra.Command {
	var exe string
	var gf graphFlags
	var srcline, noPager bool
	cmd := &cobra.Command{
		Use:   "replay [DIR...]",
		Short: "Print a recorded trace: the call graph, or every call in time order",
		Long: `replay reads the trace directory DIR (default ftrace.data) and names each
address from the traced executable's symbol table (the path recorded in
the trace, or --exe) and those of the shared objects it loaded (the paths
the trace records). Of a session, each process prints in turn under a
"# process PID (NAME): COMMAND LINE" heading; --pid and --comm choose
processes. A function_graph trace prints as each thread's call
graph with durations (# DURATION TID FUNCTION; a leaf is "f();", an inner
call "f() {" ... "} /* f */"); a function trace prints one line per call:
time since tracing started, thread, function and its caller.

The trace is read as it is printed, a piece of each thread's stream at a
time: a trace larger than memory replays.

Filters (as uftrace's replay has them): -F GLOB shows only calls of
matching functions and everything they call; -N GLOB hides matching
functions and everything they call; -D/--depth N, -t/--threshold TIME,
--tid TID, --time-range FROM~TO (times since tracing began). A call a
filter leaves out takes what it calls with it, except for --time-range,
which keeps the calls inside a call that began outside the range.
--srcline adds each function's source file and line (from the DWARF line
table: build with -g).

On a terminal the output goes through a pager: $FTPATCH_PAGER, else
$PAGER, else less -FRX; --no-pager (or a pager of "" or cat) prints it
straight. Quitting the pager early ends replay, with exit status 0.

A program that ended through exit, quick_exit or _exit (from any thread,
a signal handler or a forked child), or exec'd from the thread that
recorded, left every event it recorded. One killed by a
signal left what its threads had written when it died: that is read, with
a warning on stderr, and the exit status is still 0.`,
		Example: `  ftpatch replay                        # ftrace.data
  ftpatch replay -F parse -D 3 trace    # parse and two levels of what it calls
  ftpatch replay -N 'std::*' -t 10us    # no std:: calls, nothing under 10 us
  ftpatch replay --time-range 1s~1.5s --srcline`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := gf.filter()
			if err != nil {
				return err
			}
			f.Source = srcline
			l, err := load(args, exe, gf.sel, gf.libname, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var readErr error
			err = paged(stdout, cmd.ErrOrStderr(), noPager, l.endProgress, "replay", l.inputs(&f, &readErr), views.Options{})
			err = cmp.Or(readErr, err)
			if srcline {
				for _, p := range l.procs {
					for _, e := range p.syms.SourceErrors() {
						fmt.Fprintf(cmd.ErrOrStderr(), "ftpatch: warning: %v\n", e)
					}
				}
			}
			return l.finish(err)
		},
	}
	exeFlag(cmd, &exe)
	cmd.Flags().BoolVar(&srcline, "srcline", false, "show each function's source file:line (needs -g)")
	pagerFlag(cmd, &noPager)
	gf.register(cmd, true)
	return cmd
}

func newReport(stdout io.Writer) *cobra.Command {
	var exe, sortBy, diff string
	var avg, threads, tasks, noPager bool
	var gf graphFlags
	cmd := &cobra.Command{
		Use:   "report [DIR...]",
		Short: "Print per-function calls (and, for function_graph, total and self time)",
		Long: `report reads the trace directory DIR (default ftrace.data) as replay does
and prints, per function, its calls and, for function_graph, its total
and self time (a recursive function's total counts each level). The
streams are read as they go, several at once: a trace larger than memory
reports.

--avg shows each function's average, shortest and longest call instead
of its self time; --threads prints a report per thread. Of a session
(or several directories), each function's figures are summed over every
process (a function of a program 300 processes ran is one row), with
--tasks a table per process; --pid and --comm choose processes. --sort orders
by total (the default), self, calls, avg, min, max or name. The filters
are replay's (-F, -N, -D, -t, --tid, --time-range).

A trace with scheduler events (ftpatch record's default) splits each
function's total time into ON-CPU, the time its calls ran, and OFF-CPU,
the time their threads spent off the CPU inside them (asleep: I/O, a
lock, a timer; or pre-empted), theirs or their callees': where a slow
function waited rather than computed. --sort offcpu (or oncpu) orders by
either.

report DIR --diff BASE compares DIR, the new trace, with BASE, the base
one (two traces of one program, say before and after a change), as
uftrace's report --diff does: headed with both names, per function the
total time, the self time and the calls in BASE, in DIR, and the change
from BASE to DIR (DIR's less BASE's), so a function that runs faster in
DIR shows a negative change. The biggest change in total time comes
first. Sessions compare as wholes: each side's functions summed over
its processes (--pid and --comm choose DIR's).

On a terminal the output goes through a pager, as replay's does
(--no-pager: none).

A trace whose program was killed by a signal is read as far as its
threads had written it, with a warning on stderr; the exit status is
still 0.`,
		Example: `  ftpatch report --sort self
  ftpatch report --avg -F 'parse*'
  ftpatch report after.data --diff before.data   # the change from before.data to after.data`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := gf.filter()
			if err != nil {
				return err
			}
			if err := model.SortStats(nil, sortBy); err != nil {
				return usage(fmt.Errorf("--sort: %w", err))
			}
			l, err := load(args, exe, gf.sel, gf.libname, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			opt := views.Options{Sort: sortBy, Avg: avg, PerThread: threads, Tasks: tasks}
			if diff != "" {
				return l.finish(reportDiff(stdout, cmd.ErrOrStderr(), noPager, l, diff, exe, &f, opt))
			}
			var readErr error
			err = paged(stdout, cmd.ErrOrStderr(), noPager, l.endProgress, "report", l.inputs(&f, &readErr), opt)
			return l.finish(cmp.Or(readErr, err))
		},
	}
	exeFlag(cmd, &exe)
	cmd.Flags().StringVarP(&sortBy, "sort", "s", "total", "order: total, self, calls, avg, min, max or name (function_graph); offcpu or oncpu (scheduler events)")
	cmd.Flags().BoolVar(&avg, "avg", false, "average, shortest and longest call per function (function_graph)")
	cmd.Flags().BoolVar(&threads, "threads", false, "a report per thread")
	cmd.Flags().BoolVar(&tasks, "tasks", false, "a report per process of a session")
	pagerFlag(cmd, &noPager)
	cmd.Flags().StringVar(&diff, "diff", "", "compare DIR (the new trace) with the base trace directory `BASE`: per function, BASE's figures, DIR's and the change from BASE to DIR")
	gf.register(cmd, true)
	return cmd
}

// reportDiff prints the per-function change from the base trace, base,
// to the new one, l's (paged unless noPager).
func reportDiff(w, stderr io.Writer, noPager bool, l *loaded, base, exe string, f *trace.Filter, opt views.Options) error {
	b, err := load([]string{base}, exe, selection{}, l.libname, stderr)
	if err != nil {
		return err
	}
	if b.t.Meta.Tracer != l.t.Meta.Tracer {
		b.finish(nil)
		return fmt.Errorf("--diff: %s was recorded with %s, %s with %s: compare traces of one tracer", l.t.Dir, l.t.Meta.Tracer, base, b.t.Meta.Tracer)
	}
	var readErr, baseErr error
	// Each side a session: its functions summed over its processes.
	opt.AgainstAll = b.inputs(f, &baseErr)
	opt.AgainstAll[0].Dir = b.s.Dirs[0]
	opt.Against = &opt.AgainstAll[0]
	ends := func() { l.endProgress(); b.endProgress() }
	ins := l.inputs(f, &readErr)
	ins[0].Dir = l.s.Dirs[0]
	err = paged(w, stderr, noPager, ends, "diff", ins, opt)
	return b.finish(cmp.Or(readErr, baseErr, err))
}
