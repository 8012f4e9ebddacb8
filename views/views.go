// Package views writes every output made of a trace: replay's text (the
// call graph, or the calls in time order), report's tables (per
// function, per thread, and the diff of two traces), Chrome's
// trace-event JSON and Perfetto's protobuf (timelines), folded stacks and
// an SVG flame graph (where the time goes), the aggregated call graph
// (uftrace graph's shape) and what the trace is (info).
//
// Every view reads the same Input: each thread's calls as a stream of
// events (and, for replay and report, the reader they walk through the
// model themselves), and writes its output as it reads them. What a view
// keeps is bounded by the depth of nesting (the open calls of the thread
// being read) and by the number of distinct functions and call paths,
// never by the number of calls: a trace larger than memory can be
// viewed. How the events are read (the trace's format) is the reader's
// concern (package trace), naming them the symbols' (package symbols),
// summing them the model's (package model).
//
// One function per view, each writing to an io.Writer: Replay, Report,
// Diff, Chrome, Perfetto, Folded, SVG, Graph, Info; Write chooses one by
// its name, from one table (a new view is a function and a line there).
package views

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"path/filepath"

	"ftpatch/internal/escape"
	"ftpatch/model"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// A Kind says what an Event is: the trace's model, read as the views
// read it.
type Kind = trace.CallKind

// The kinds of event. A function_graph trace's thread is a sequence of
// Enter events each closed, in nesting order, by an Exit, Unwound or
// Open, with an Off between them for each time the thread was off the
// CPU (a trace with scheduler events); a function trace's is Call events.
const (
	Enter   = trace.CallEnter   // a graphed call begins
	Exit    = trace.CallExit    // the innermost open call returned
	Unwound = trace.CallUnwound // the innermost open call was left without returning (longjmp, exception)
	Open    = trace.CallOpen    // the innermost open call was still running when the trace ended (NS: the thread's last event)
	Call    = trace.CallOnly    // function tracer: a call, no exit follows
	Off     = trace.CallOff     // the thread was off the CPU from NS to End, for Why, inside the open calls
)

// An Event is one step of a thread: a call beginning or ending.
type Event = trace.CallEvent

// A Thread is one thread's events in order; a makecontext context's
// calls are a Thread of their own (Context != 0), since they nest among
// themselves and not with the thread's other calls.
type Thread = trace.ThreadCalls

// Input is what every view reads: the trace's metadata and its threads;
// replay and report, which read the streams their own way (replay's
// threads printed in parallel, report's summed in parallel, a function
// trace's calls merged by time), read them from Trace, named by Names,
// through Filter.
type Input struct {
	Meta    *trace.Meta      // the trace's metadata
	Threads iter.Seq[Thread] // threads in (pid, tid, context) order; each Thread's Events may be iterated once
	// Counts are the threads' calls counted (Info), in Threads' order:
	// from the streams' summaries where they have them (trace.Counts).
	// Nil: Info counts Threads' events.
	Counts iter.Seq[trace.ThreadCounts]

	Trace *trace.Trace // the trace opened (replay, report, diff)
	// Procs are a session's processes by pid (the last image of each:
	// what the process became), naming the timelines' processes and
	// their parents; nil: Meta's process alone.
	Procs map[int]*trace.Meta
	// Dir is the directory the command was given, for headings (a
	// session's, where Trace.Dir is its process's image); "": Trace.Dir.
	Dir    string
	Names  trace.Naming  // what names its addresses (replay, report, diff)
	Filter *trace.Filter // the calls kept (replay, report, diff)
}

// Options are what the views take besides their Input; each view reads
// the ones that concern it.
type Options struct {
	// SampleCount weighs folded stacks and flame graph frames by calls
	// instead of time: what a function trace, which has no durations,
	// needs.
	SampleCount bool
	// OffCPU weighs folded stacks and flame graph frames by the time
	// the threads spent off the CPU (asleep, or pre-empted) with each
	// path on their stack, a leaf frame for the reason above the call
	// running ("[sleeping]", "[pre-empted]"); with SampleCount, by the
	// times they left it. Without it, a trace with scheduler events is
	// weighed by the time on the CPU alone. A trace without them is
	// ErrNoSched.
	OffCPU bool
	// PerThread keeps each thread's stacks apart: a first frame names
	// the thread ("thread 123", "thread 123 context 2"); Report prints
	// a table per thread.
	PerThread bool
	// Sort orders Report's rows (model.SortStats: "total", "self",
	// "calls", "avg", "min", "max" or "name") and Graph's paths
	// (model.PathOrder: "total" or "calls"); Avg gives each
	// function's average, shortest and longest call instead of its self
	// time.
	Sort string
	Avg  bool
	// Against is the base trace Diff compares Input, the new one,
	// with (report NEW --diff BASE), named in its heading by its
	// directory.
	Against *Input
	// AgainstAll is the base session's every process (report --diff of
	// sessions: each side's functions summed over its processes), in
	// place of Against; Against, when set, is its first.
	AgainstAll []Input
	// Func roots the call graph at every call of this function, with
	// the paths that called it (Graph).
	Func string
	// Warnings says what the reader found missing from the trace (files
	// cut short, events lost), for Info to list once it has read the
	// threads (a stream cut short is found by reading it).
	Warnings func() []error
	// Beside are the trace directories of processes that started while
	// this one's ran (DIR.PID), for Info to name.
	Beside []string
	// Tasks: a session's processes one by one (report: a table per
	// process; info: the process tree, as uftrace's info --task).
	Tasks bool
	// Exit is how the program ended and what it used as ftpatch record
	// saw it (the trace's exit file), for Info; nil when not recorded so.
	Exit *trace.ExitStatus
}

// ErrUnknownView: Write was asked for a view it does not have.
var ErrUnknownView = errors.New("unknown view")

// byName are the views by the names the commands choose them by: the one
// table of them.
var byName = map[string]func(io.Writer, Input, Options) error{
	"replay":      Replay,
	"report":      Report,
	"diff":        Diff,
	"chrome":      func(w io.Writer, in Input, _ Options) error { return Chrome(w, in) },
	"perfetto":    func(w io.Writer, in Input, _ Options) error { return Perfetto(w, in) },
	"flame-graph": Folded,
	"svg":         SVG,
	"graph":       Graph,
	"info":        Info,
}

// Write writes the view named view of in to w: the one switch between
// the views, which the commands use. An unknown name is ErrUnknownView.
func Write(w io.Writer, view string, in Input, opt Options) error {
	write := byName[view]
	if write == nil {
		return fmt.Errorf("%w %q", ErrUnknownView, view)
	}
	return write(w, in, opt)
}

// ErrNoDurations: the view weighs calls by time, and a function trace
// records calls without their durations.
var ErrNoDurations = errors.New("a function trace records calls, not their durations: weigh by calls with --sample-count, or record with FTRACE=function_graph")

// ErrNoGraph: the view needs calls nested in their callers, which only a
// function_graph trace records.
var ErrNoGraph = errors.New("a function trace records calls without their nesting: record with FTRACE=function_graph for a call graph")

// ErrNoSched: the view needs the threads' times off the CPU, and the
// trace did not record them (scheduler events).
var ErrNoSched = errors.New("the trace has no scheduler events (when its threads left the CPU): ftpatch record records them unless given --no-sched (FTRACE_SCHED=1 under the runtime alone), where the kernel allows it (ftpatch info says why it did not)")

// needSched is ErrNoSched, saying why the kernel refused them where it
// did, unless in's trace recorded scheduler events.
func needSched(in Input) error {
	switch {
	case schedRecorded(in):
		return nil
	case in.Meta.Sched == abi.SchedRefused && in.Meta.SchedWhy != "":
		return fmt.Errorf("%w; when recording, the kernel refused them: %s", ErrNoSched, escape.Text(in.Meta.SchedWhy))
	}
	return ErrNoSched
}

// ErrNoFunc: the function asked for made no call in the trace.
var ErrNoFunc = errors.New("no call of the function in the trace")

// schedRecorded says whether in's trace recorded its threads' times off
// the CPU (scheduler events): its metadata says so, or it holds some.
func schedRecorded(in Input) bool {
	return in.Meta.Sched == abi.SchedOn || in.Trace != nil && in.Trace.HasSched()
}

// graphed says whether the trace nests calls (function_graph).
func graphed(m *trace.Meta) bool { return m.Tracer != abi.TracerFunctionName }

// workers is how many threads of in a view may read at once: one per
// CPU, or one where the program made contexts (whose threads are known
// only once the one before them is read: trace.Trace.Threads).
func workers(in Input) int {
	if in.Meta.Contexts > 0 {
		return 1
	}
	return 0
}

// threadName names a thread for people: "thread 123", and for a
// context's calls "thread 123 context 2".
func threadName(t Thread) string {
	if t.Context != 0 {
		return fmt.Sprintf("thread %d context %d", t.Tid, t.Context)
	}
	return fmt.Sprintf("thread %d", t.Tid)
}

// program is the traced program's name for titles: the executable's
// base name (escaped), or "pid N" when the trace names none.
// processName is the name of process pid in the timelines: its own
// image's program where in holds a session's processes, else Meta's.
func processName(in Input, pid int) string {
	if m := in.Procs[pid]; m != nil {
		return program(m)
	}
	return program(in.Meta)
}

func program(m *trace.Meta) string {
	if m.Exe == "" {
		return fmt.Sprintf("pid %d", m.Pid)
	}
	return escape.Text(filepath.Base(m.Exe))
}

// callTree is the call graph of in's threads (model.CallGraph), with
// perThread each thread's paths below a Path named for it (threadName).
func callTree(in Input, perThread bool) *model.Path {
	var name func(Thread) string
	if perThread {
		name = threadName
	}
	return model.CallGraph(in.Threads, in.Meta.Contexts > 0, name)
}

// checkEvery is how many events a streaming view writes between checks
// that its output has not failed.
const checkEvery = 4096

// failed returns the error of an output that failed (a closed pipe, a
// full disk): reading on would be for nothing.
func failed(w *bufio.Writer) error {
	_, err := w.Write(nil)
	return err
}

// spans reads a thread's events for a timeline view: begin (when not
// nil) at each graphed call's start, end at its end, with its start and
// what ended it ("", "unwound" or "open"), instant at each call of a
// function trace, and off (when not nil) at each time the thread was off
// the CPU, in time order among the calls: its end no later than the
// thread's next event (the kernel's clock and the calls' may disagree by
// a little, and a viewer wants slices that nest). It stops early when w
// has failed.
func spans(th Thread, w *bufio.Writer, begin func(fn string, ns float64), end func(fn string, start, ns float64, note string), instant func(fn string, ns float64), off func(why trace.OffReason, start, end float64)) error {
	var st model.Stack
	var pending Event // the time off the CPU read, not handed to off yet (Kind Off)
	flush := func(next float64) {
		if pending.Kind == Off {
			off(pending.Why, pending.NS, max(min(pending.End, next), pending.NS))
			pending.Kind = Enter
		}
	}
	n := 0
	for ev := range model.Closed(th, func() int { return len(st) }) {
		if ev.Kind == Off {
			if off != nil {
				flush(ev.NS)
				pending = ev
			}
			continue
		}
		flush(ev.NS)
		switch {
		case ev.Kind == Enter:
			st = append(st, model.Frame{Func: ev.Func, Start: ev.NS})
			if begin != nil {
				begin(ev.Func, ev.NS)
			}
		case ev.Kind == Call:
			instant(ev.Func, ev.NS)
		case ev.Kind.Ends():
			f, _, ok := st.Pop(ev.NS)
			if !ok {
				continue // its entry was not in the trace
			}
			note := ""
			switch ev.Kind {
			case Unwound:
				note = "unwound"
			case Open:
				note = "open"
			}
			end(f.Func, f.Start, max(ev.NS, f.Start), note)
		}
		if n++; n%checkEvery == 0 && failed(w) != nil {
			break
		}
	}
	flush(math.Inf(1))
	return failed(w)
}
