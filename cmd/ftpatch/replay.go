package main

import (
	"io"

	"github.com/spf13/cobra"

	"ftpatch/trace"
)

// load reads a trace directory and the symbols of the program it traced.
func load(dir, exe string) (*trace.Trace, []trace.Event, error) {
	t, err := trace.Read(dir)
	if err != nil {
		return nil, nil, err
	}
	if exe == "" {
		exe = t.Meta.Exe
	}
	syms, err := trace.LoadSymbols(exe)
	if err != nil {
		return nil, nil, err
	}
	return t, trace.Events(t, syms), nil
}

func newReplay(stdout io.Writer) *cobra.Command {
	var exe string
	cmd := &cobra.Command{
		Use:   "replay [DIR]",
		Short: "Print a recorded trace: every call, in time order",
		Long: `replay reads the trace directory DIR (default ftrace.data) written by a
program run with FTRACE=function, names each address from the traced
executable's symbol table (the path recorded in the trace, or --exe), and
prints one line per call: time since tracing started, thread, function,
and its caller.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "ftrace.data"
			if len(args) == 1 {
				dir = args[0]
			}
			t, events, err := load(dir, exe)
			if err != nil {
				return err
			}
			return trace.WriteReplay(stdout, t, events)
		},
	}
	cmd.Flags().StringVar(&exe, "exe", "", "the traced executable (default: the path recorded in the trace)")
	return cmd
}

func newReport(stdout io.Writer) *cobra.Command {
	var exe string
	cmd := &cobra.Command{
		Use:   "report [DIR]",
		Short: "Print the calls per function of a recorded trace",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "ftrace.data"
			if len(args) == 1 {
				dir = args[0]
			}
			t, events, err := load(dir, exe)
			if err != nil {
				return err
			}
			return trace.WriteReport(stdout, t, trace.Counts(events), len(events))
		},
	}
	cmd.Flags().StringVar(&exe, "exe", "", "the traced executable (default: the path recorded in the trace)")
	return cmd
}
