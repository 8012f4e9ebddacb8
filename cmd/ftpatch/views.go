package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"ftpatch/model"
	"ftpatch/pager"
	"ftpatch/progress"
	"ftpatch/symbols"
	"ftpatch/trace"
	"ftpatch/views"
)

// writeView writes the view named view of in to w (views.Write, the one
// switch between the views); an unknown view, or one the trace cannot
// give, is a usage error.
func writeView(w io.Writer, view string, ins []views.Input, opt views.Options) error {
	err := views.WriteSession(w, view, ins, opt)
	if errors.Is(err, views.ErrUnknownView) || errors.Is(err, views.ErrNoDurations) || errors.Is(err, views.ErrNoGraph) || errors.Is(err, views.ErrNoSched) {
		return usage(err)
	}
	return err
}

// paged writes a view to stdout as writeView does, through a pager when
// stdout is a terminal, unless off (--no-pager): the pager the
// environment names (package pager), started at the view's first write,
// after before has run (it ends the progress bars drawn on the
// terminal). It returns once the pager has ended, so what the command
// says on stderr after it shows below the output; the user quitting the
// pager early is no error.
func paged(stdout, stderr io.Writer, off bool, before func(), view string, ins []views.Input, opt views.Options) error {
	p := pager.New(stdout, pager.Config{Environ: os.Environ(), Stderr: stderr, Off: off, BeforeStart: before})
	return p.Close(writeView(p, view, ins, opt))
}

// pagerFlag registers --no-pager into off.
func pagerFlag(cmd *cobra.Command, off *bool) {
	cmd.Flags().BoolVar(off, "no-pager", false, "print straight to the terminal, through no pager ($FTPATCH_PAGER, else $PAGER, else less -FRX: used only on a terminal)")
}

func newDump(stdout io.Writer) *cobra.Command {
	var exe string
	var chrome, perfetto, folded, svg bool
	var opt views.Options
	var gf graphFlags
	cmd := &cobra.Command{
		Use:   "dump (--chrome | --perfetto | --flame-graph | --svg) [DIR...]",
		Short: "Write a trace as a timeline (Chrome JSON, Perfetto) or a flame graph (folded stacks, SVG)",
		Long: `dump reads the trace directory DIR (default ftrace.data), names its
functions as replay does (the executable the trace records, or --exe,
and its shared objects), and writes it on standard output in one of the
formats other tools open (the filters -F, -N, -D, --tid and --time-range
choose the calls, as replay's do):

  --chrome       Chrome's trace-event JSON: one object whose traceEvents
                 are a complete event ("ph":"X") per call, ts and dur in
                 µs to the ns, with pid, tid and names for the process
                 and each thread; a call left by longjmp or an exception
                 has args {"unwound":true}, one still running at the end
                 {"open":true}. A function trace gives an instant event
                 ("ph":"i") per call. A makecontext context's calls show
                 as a thread of their own, "thread T context N" (tid
                 N*4194304+T). Each time a thread was off the CPU (a
                 trace with scheduler events) is an event of the
                 category "sched", "sleeping" or "pre-empted", below the
                 call running. Open it in https://ui.perfetto.dev (Open
                 trace file) or chrome://tracing (Load).
  --perfetto     Perfetto's own protobuf format (TrackEvent): the same
                 timeline, several times smaller than the JSON; a
                 context's calls are a track below their thread's, and
                 with scheduler events each thread has a state track
                 ("thread T state": running, sleeping, runnable
                 (pre-empted)). Open it in https://ui.perfetto.dev or
                 with trace_processor. It is binary: redirect it to a
                 file.
  --flame-graph  folded stacks, a line per call path with its frames from
                 the outermost call, ';'-separated, and its weight:
                 "main;eval;parse_expr 130", the ns its calls spent
                 outside their callees (self time), or with
                 --sample-count the calls made along it. Threads are
                 merged; --per-thread starts each path with its thread.
                 What flamegraph.pl (flamegraph.pl out.folded >
                 flame.svg), inferno and https://speedscope.app read.
  --svg          a flame graph drawn by ftpatch: a self-contained SVG,
                 each frame as wide as its path's time (with
                 --sample-count, its calls) stacked on its caller, the
                 whole trace at the bottom; hover a frame for its time,
                 share and calls. Open it in a web browser. Frames
                 narrower than a tenth of a pixel are merged into their
                 callers as the trace is read: memory is bounded by
                 what is drawn, not by the trace's call paths.

A trace with scheduler events (ftpatch record records when each thread
left the CPU, unless --no-sched) has its flame graphs weighed by the
time on the CPU: a call's time asleep or pre-empted is left out. With
--offcpu they are the off-CPU flame graphs instead: each path weighed by
the time its threads spent off the CPU with it on their stack (with
--sample-count, by the times they left it), below a last frame saying
why, [sleeping] or [pre-empted]; the two add up to the flame graph of
the same trace without scheduler events. --offcpu on a trace without
them is a usage error (ftpatch info says why a trace has none).

A function trace has no durations: its flame graphs need
--sample-count.`,
		Example: `  ftpatch dump --chrome > trace.json          # then open it in https://ui.perfetto.dev
  ftpatch dump --perfetto build/ftrace.data > trace.pftrace
  ftpatch dump --flame-graph | flamegraph.pl > flame.svg
  ftpatch dump --flame-graph --sample-count > calls.folded   # speedscope reads it too
  ftpatch dump --svg > flame.svg               # no Perl needed
  ftpatch dump --svg --offcpu > waits.svg      # where the threads waited, and why`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			filter, err := gf.filter()
			if err != nil {
				return err
			}
			var view string
			n := 0
			for _, f := range []struct {
				set  bool
				name string
			}{{chrome, "chrome"}, {perfetto, "perfetto"}, {folded, "flame-graph"}, {svg, "svg"}} {
				if f.set {
					view = f.name
					n++
				}
			}
			if n != 1 {
				return usage(errors.New("give one of --chrome, --perfetto, --flame-graph and --svg (see ftpatch dump --help)"))
			}
			if opt.OffCPU && !folded && !svg {
				return usage(errors.New("--offcpu weighs the flame graphs: give it with --flame-graph or --svg (the timelines show the times off the CPU as they are)"))
			}
			if f, ok := stdout.(*os.File); ok && view == "perfetto" && progress.IsTerminal(f) {
				return usage(errors.New("--perfetto writes binary protobuf: redirect it to a file (> trace.pftrace)"))
			}
			l, err := load(args, exe, gf.sel, gf.libname, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var readErr error
			err = writeView(stdout, view, l.inputs(&filter, &readErr), opt)
			return l.finish(cmp.Or(readErr, err))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&chrome, "chrome", false, "Chrome trace-event JSON (Perfetto UI, chrome://tracing)")
	f.BoolVar(&perfetto, "perfetto", false, "Perfetto's protobuf trace (Perfetto UI, trace_processor)")
	f.BoolVar(&folded, "flame-graph", false, "folded stacks (flamegraph.pl, speedscope, inferno)")
	f.BoolVar(&svg, "svg", false, "an SVG flame graph")
	f.BoolVar(&opt.SampleCount, "sample-count", false, "flame graphs: weigh paths by calls, not time")
	f.BoolVar(&opt.PerThread, "per-thread", false, "flame graphs: keep each thread's paths apart")
	f.BoolVar(&opt.OffCPU, "offcpu", false, "flame graphs: weigh paths by the time off the CPU (asleep, pre-empted), not on it (a trace with scheduler events)")
	exeFlag(cmd, &exe)
	gf.register(cmd, false)
	return cmd
}

func newGraph(stdout io.Writer) *cobra.Command {
	var exe, sortBy string
	var noPager bool
	var gf graphFlags
	cmd := &cobra.Command{
		Use:   "graph [DIR [FUNC]]",
		Short: "Print the aggregated call graph (calls and total time per call path), as uftrace graph",
		Long: `graph reads the trace directory DIR (default ftrace.data) of a
function_graph trace and prints its calls aggregated by call path, as
uftrace graph does: each path once, with the total time of its calls
(callees included) and their number, (N), below the program:

  # TOTAL TIME   FUNCTION
     13.509 us : (1) calc
     13.509 us : (1) main
     12.357 us : (1) eval
      0.791 us :  +-(1) parse_expr
     ...

A path with one callee has it on the next line; with several, each
branches off a column with "+-". Calls left by longjmp or an exception,
or still running at the end, are counted after the name: [2 unwound],
[1 open].

With FUNC, the graph of FUNC: its backtraces first (each distinct path
of calls that led to it, outermost first, with how many of its calls
came that way and their time), then everything its calls called, all
its calls merged (a call of FUNC within another is part of the outer
one's graph).

--sort orders a path's callees and FUNC's backtraces alike: by total
time (the default), the most first, or with --sort calls by calls, the
most first; ties in the order first called. --sort first keeps the
order first called (the program's order, as uftrace graph prints it).

The filters -F, -N, -D, --tid and --time-range choose the calls, as
replay's do. On a terminal the output goes through a pager, as replay's
does (--no-pager: none).`,
		Example: `  ftpatch graph
  ftpatch graph build/ftrace.data parse_expr
  ftpatch graph --sort calls ftrace.data parse_expr   # the path most calls came by first`,
		Args: usageArgs(cobra.MaximumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			filter, err := gf.filter()
			if err != nil {
				return err
			}
			if _, err := model.PathOrder(sortBy); err != nil {
				return usage(fmt.Errorf("--sort: %w", err))
			}
			opt := views.Options{Sort: sortBy}
			if len(args) == 2 {
				opt.Func = args[1]
				args = args[:1]
			}
			l, err := load(args, exe, gf.sel, gf.libname, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var readErr error
			err = paged(stdout, cmd.ErrOrStderr(), noPager, l.endProgress, "graph", l.inputs(&filter, &readErr), opt)
			return l.finish(cmp.Or(readErr, err))
		},
	}
	exeFlag(cmd, &exe)
	cmd.Flags().StringVarP(&sortBy, "sort", "s", "total", "order of callees and backtraces: total (time) or calls, the most first, or first (the order first called)")
	pagerFlag(cmd, &noPager)
	gf.register(cmd, false)
	return cmd
}

func newInfo(stdout io.Writer) *cobra.Command {
	var noPager, tasks bool
	var sel selection
	cmd := &cobra.Command{
		Use:   "info [DIR...]",
		Short: "Print what a trace is: program, exit status, CPU time and memory, tracer, threads and their names, sites, and what was lost",
		Long: `info reads the trace directory DIR (default ftrace.data) and prints what
it is, a "key: value" line each, as uftrace info does:

  program, command line, build-id, pid (with the process's name)
  tracer, clock, started, duration
  ended          whether the program ended through exit (or was killed;
                 or died of a fatal signal whose handler wrote the flight
                 recorder's rings)
  exit status    "exited with code N", or "killed by signal N (SIGNAME)"
                 (", core dumped")
  usage          where the figures below come from, then:
  cpu time       system / user CPU seconds
  max rss        the program's largest resident set, KB
  page faults, context switches, disk iops (blocks read / written)
  config, subtree filters, sites, modules: how the sites were chosen
                 and how many were traced, the shared objects with sites
  thread         each thread (a makecontext context's calls apart): its
                 pid and tid, its name (as pthread_setname_np or
                 prctl(PR_SET_NAME) left it), its calls, the time they
                 span, those left by longjmp or an exception and those
                 still running at the end
  threads, task list (each thread as TID(NAME), as uftrace's)
  buffer, dropped, lost bytes, lost threads, not graphed, unwound,
  contexts       what the runtime dropped or could not write, each
                 count given, 0 included

Then a "warning:" line for each thing the trace lacks (files cut short,
events lost), and a "beside:" line for each trace of a process that
started while this one ran (DIR.PID).

Of a session (every process one recording traced), each process's
part in turn under a "# process PID (NAME): COMMAND LINE" heading;
--tasks prints the processes as a tree instead, as uftrace's info
--task does: each under the one that started it (a program a process
exec'd under the one it replaced), with its pid, name, how it ended,
its threads and its command line. --pid and --comm choose processes.

Where the figures come from: the exit status and usage are what
ftpatch record saw when the program ended (wait4: the program and the
children it waited for; its exit file in DIR), where record ran it;
else what the runtime saw when the program ended through exit, _exit
or returning from main (getrusage: the process alone), or died of a
fatal signal under the flight recorder; but max rss is the runtime's
where it has it (the program image's own peak, VmHWM: wait4's counts
the memory of what the process ran before its exec, ftpatch itself). A
program killed outright (by SIGKILL, or a signal it had no handler for)
and not run by ftpatch record has them "not recorded". Each thread's
counts and name come from the summary the runtime writes at the end of
the thread's stream; a stream without one (its program was killed; a
trace of an older runtime) is read through to count its calls, which
takes time in proportion to its size.

It needs no symbols: the executable need not be there. On a terminal the
output goes through a pager, as replay's does (--no-pager: none).`,
		Example: `  ftpatch info
  ftpatch info build/ftrace.data`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := trace.OpenSession(traceDirs(args)...)
			if err != nil {
				return err
			}
			if s, err = sel.choose(s); err != nil {
				return err
			}
			t := s.Procs[0]
			exit, err := trace.ReadExitStatus(s.Dirs[0])
			if err != nil {
				return err
			}
			if exit == nil && !trace.IsSession(s.Dirs[0]) {
				exit, err = trace.ReadExitStatus(t.Dir)
			}
			if err != nil {
				return err
			}
			opt := views.Options{Warnings: t.Warnings, Exit: exit, Tasks: tasks}
			if !trace.IsSession(s.Dirs[0]) {
				opt.Beside = t.Beside()
			}
			var readErr error
			var ins []views.Input
			for _, p := range s.Procs {
				ins = append(ins, input(p, &symbols.Table{}, &trace.Filter{}, &readErr))
			}
			err = paged(stdout, cmd.ErrOrStderr(), noPager, nil, "info", ins, opt)
			return cmp.Or(readErr, err)
		},
	}
	pagerFlag(cmd, &noPager)
	sel.register(cmd)
	cmd.Flags().BoolVar(&tasks, "tasks", false, "the session's processes as a tree (pid, name, how each ended, threads, command line), as uftrace info --task")
	return cmd
}
