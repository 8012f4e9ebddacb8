package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"ftpatch/trace"
)

// load reads the trace directory named by args (default ftrace.data) and
// the symbols of the process it traced (exe, or the path it recorded, and
// its shared objects); what the trace lacks (the program did not end
// through exit or _exit, files cut short, events the runtime lost) and a
// shared object it cannot name are warnings on stderr, and
// the traces beside it of processes that started while it ran (DIR.PID)
// are named there too.
func load(args []string, exe string, stderr io.Writer) (*trace.Trace, *trace.Symbols, error) {
	t, err := trace.Read(traceDir(args))
	if err != nil {
		return nil, nil, err
	}
	for _, w := range t.Warnings() {
		fmt.Fprintf(stderr, "ftpatch: warning: %v\n", w)
	}
	syms, warns, err := trace.LoadProcess(&t.Meta, exe)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "ftpatch: warning: %v\n", w)
	}
	for _, b := range t.Beside() {
		fmt.Fprintf(stderr, "ftpatch: note: %s holds the trace of a process that started while this one ran (one it exec'd?)\n", b)
	}
	return t, syms, nil
}

// traceDir is the trace directory args name: ftrace.data when none.
func traceDir(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return "ftrace.data"
}

// exeFlag registers --exe, the traced executable, into exe.
func exeFlag(cmd *cobra.Command, exe *string) {
	cmd.Flags().StringVar(exe, "exe", "", "the traced executable (default: the path recorded in the trace)")
}

// graphFlags are the filters replay and report share.
type graphFlags struct {
	tid       int
	depth     int
	threshold time.Duration
}

func (g *graphFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVar(&g.tid, "tid", 0, "only this thread")
	cmd.Flags().IntVar(&g.depth, "depth", 0, "only calls at most this deep (function_graph)")
	cmd.Flags().DurationVar(&g.threshold, "threshold", 0, "only calls that took at least this long, e.g. 2us (function_graph)")
}

func (g *graphFlags) filter() trace.Filter {
	return trace.Filter{Tid: g.tid, Depth: g.depth, Threshold: float64(g.threshold.Nanoseconds())}
}

func newReplay(stdout io.Writer) *cobra.Command {
	var exe string
	var gf graphFlags
	cmd := &cobra.Command{
		Use:   "replay [DIR]",
		Short: "Print a recorded trace: the call graph, or every call in time order",
		Long: `replay reads the trace directory DIR (default ftrace.data) and names each
address from the traced executable's symbol table (the path recorded in
the trace, or --exe) and those of the shared objects it loaded (the paths
the trace records). A function_graph trace prints as each thread's call
graph with durations (# DURATION TID FUNCTION; a leaf is "f();", an inner
call "f() {" ... "} /* f */"); a function trace prints one line per call:
time since tracing started, thread, function and its caller.

A program that ended through exit, quick_exit or _exit (from any thread,
a signal handler or a forked child), or exec'd from the thread that
recorded, left every event it recorded. One killed by a
signal left what its threads had written when it died: that is read, with
a warning on stderr, and the exit status is still 0.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, syms, err := load(args, exe, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if t.Meta.Tracer == "function_graph" {
				return trace.WriteGraph(stdout, t, gf.filter().Apply(trace.Graph(t, syms)))
			}
			return trace.WriteReplay(stdout, t, trace.Events(t, syms))
		},
	}
	exeFlag(cmd, &exe)
	gf.register(cmd)
	return cmd
}

func newReport(stdout io.Writer) *cobra.Command {
	var exe, sortBy string
	var gf graphFlags
	cmd := &cobra.Command{
		Use:   "report [DIR]",
		Short: "Print per-function calls (and, for function_graph, total and self time)",
		Long: `report reads the trace directory DIR (default ftrace.data) as replay does
and prints, per function, its calls and, for function_graph, its total
and self time. A trace whose program was killed by a signal is read as
far as its threads had written it, with a warning on stderr; the exit
status is still 0.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, syms, err := load(args, exe, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if t.Meta.Tracer == "function_graph" {
				stats := trace.Stats(gf.filter().Apply(trace.Graph(t, syms)))
				if err := trace.SortStats(stats, sortBy); err != nil {
					return err
				}
				return trace.WriteStats(stdout, t, stats)
			}
			events := trace.Events(t, syms)
			return trace.WriteReport(stdout, t, trace.Counts(events), len(events))
		},
	}
	exeFlag(cmd, &exe)
	cmd.Flags().StringVar(&sortBy, "sort", "total", "order: total, self, calls or name (function_graph)")
	gf.register(cmd)
	return cmd
}
