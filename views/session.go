package views

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	"ftpatch/internal/escape"
	"ftpatch/model"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// WriteSession writes the view named view of a session, ins: each
// process image's Input, in the order they started (trace.Session's
// Procs). One image is Write's. Of several: replay and info write each
// process's part under a heading naming it; report sums each function's
// figures over every process (with opt.Tasks, a table per process);
// the others (graph, the timelines, the flame graphs) read every
// process's threads as one trace's, each thread keeping its process's
// pid. An unknown name is ErrUnknownView.
func WriteSession(w io.Writer, view string, ins []Input, opt Options) error {
	if len(ins) == 1 && !opt.Tasks {
		return Write(w, view, ins[0], opt)
	}
	if _, ok := byName[view]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownView, view)
	}
	for _, in := range ins[1:] {
		if in.Meta.Tracer != ins[0].Meta.Tracer {
			return fmt.Errorf("%s was recorded with %s, %s with %s: a session's processes are read together only under one tracer",
				ins[0].Trace.Dir, ins[0].Meta.Tracer, in.Trace.Dir, in.Meta.Tracer)
		}
	}
	switch view {
	case "replay", "info":
		if view == "info" && opt.Tasks {
			return Tasks(w, ins)
		}
		bw := bufio.NewWriter(w)
		if view == "info" {
			sessionSummary(bw, ins, opt)
		}
		waited := waitedFor(ins)
		for i, in := range ins {
			if i > 0 || view == "info" {
				fmt.Fprintln(bw)
			}
			fmt.Fprintf(bw, "# process %s\n", processTitle(in.Meta))
			if err := bw.Flush(); err != nil {
				return err
			}
			own := opt
			if i != waited {
				own.Exit = nil
			}
			if in.Trace != nil {
				own.Warnings = in.Trace.Warnings
			}
			if err := Write(w, view, in, own); err != nil {
				return err
			}
		}
		return nil
	case "report":
		if opt.Tasks || opt.PerThread {
			for i, in := range ins {
				if i > 0 {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "# process %s\n", processTitle(in.Meta))
				if err := Report(w, in, opt); err != nil {
					return err
				}
			}
			return nil
		}
		return reportSession(w, ins, opt)
	case "diff":
		return diffSessions(w, ins, opt)
	}
	all := ins[0]
	all.Threads = chainThreads(ins)
	all.Counts = nil
	all.Procs = map[int]*trace.Meta{}
	for _, in := range ins {
		all.Procs[in.Meta.Pid] = in.Meta
	}
	return Write(w, view, all, opt)
}

// chainThreads is every input's threads, one process after another,
// each event's time moved from its own process's start to the first's
// (the clocks' CLOCK_MONOTONIC starts), so every process has its place
// on one timeline.
func chainThreads(ins []Input) iter.Seq[Thread] {
	return func(yield func(Thread) bool) {
		base := ins[0].Meta.MonoStart
		for _, in := range ins {
			shift := float64(int64(in.Meta.MonoStart - base))
			for th := range in.Threads {
				if shift != 0 {
					events := th.Events
					th.Events = func(y func(Event) bool) {
						for ev := range events {
							ev.NS += shift
							if ev.Kind == Off {
								ev.End += shift
							}
							if !y(ev) {
								return
							}
						}
					}
				}
				if !yield(th) {
					return
				}
			}
		}
	}
}

// waitedFor is the image whose end ftpatch record saw (Options.Exit):
// the last image of the first process, the one record started.
func waitedFor(ins []Input) int {
	at := 0
	for i, in := range ins {
		if in.Meta.Pid == ins[0].Meta.Pid {
			at = i
		}
	}
	return at
}

// sessionSummary writes info's summary of a session of several
// process images, before each one's part: the processes and images,
// their threads and calls (as each part counts them), what was lost in
// all, and a line per process saying how it ended.
func sessionSummary(w io.Writer, ins []Input, opt Options) {
	kv := func(k, format string, a ...any) { fmt.Fprintf(w, "%-19s %s\n", k+":", fmt.Sprintf(format, a...)) }
	pids := map[int]bool{}
	var threads, calls, forked, execs int
	var lost trace.Meta // every process's losses
	for _, in := range ins {
		m := in.Meta
		if pids[m.Pid] {
			execs++
		}
		pids[m.Pid] = true
		if m.Forked {
			forked++
		}
		lost.AddLosses(m)
		if in.Counts != nil {
			for c := range in.Counts {
				threads++
				calls += int(c.Calls)
			}
		}
	}
	kv("session", "%d processes (%d forked without an exec), %d process images (%d after an exec)", len(pids), forked, len(ins), execs)
	kv("threads", "%d, %d calls in all", threads, calls)
	kv("lost", "%d calls dropped, %d bytes not written, %d threads' buffers not written, %d bytes overwritten by rings (every process's)",
		lost.Dropped, lost.LostBytes, lost.LostThreads, lost.Overwritten)
	on, refused := 0, 0
	for _, in := range ins {
		switch in.Meta.Sched {
		case abi.SchedOn:
			on++
		case abi.SchedRefused:
			refused++
		}
	}
	if on+refused > 0 {
		kv("scheduler events", "%d times a thread left the CPU, recorded, %d events lost; in %d process images, refused by the kernel in %d (each image's part says why)",
			lost.SchedSwitches, lost.SchedLost, on, refused)
	}
	waited := waitedFor(ins)
	for i, in := range ins {
		m := in.Meta
		rec := opt.Exit
		if i != waited {
			rec = nil
		}
		how := exitStatus(m, rec)
		if i+1 < len(ins) && slices.ContainsFunc(ins[i+1:], func(o Input) bool { return o.Meta.Pid == m.Pid }) {
			how = "exec'd another program"
		}
		what := "image"
		if m.Forked {
			what = "forked, image"
		}
		kv("process", "%d (%s) %s %d, parent %d: %s", m.Pid, escape.Text(m.Name()), what, max(m.Image, 1), m.Ppid, how)
	}
}

// processTitle names a process image in a heading: pid, name, and its
// command line (or executable).
func processTitle(m *trace.Meta) string {
	what := m.Exe
	if len(m.Cmdline) > 0 {
		what = strings.Join(m.Cmdline, " ")
	}
	return fmt.Sprintf("%d (%s): %s", m.Pid, escape.Text(m.Name()), escape.Text(what))
}

// reportSession writes report's table of a session: each function's
// figures summed over every process (model.MergeStats, MergeCounts), a
// function being its module and name, and a summary of them all.
func reportSession(w io.Writer, ins []Input, opt Options) error {
	graph := ins[0].Meta.Tracer == abi.TracerGraphName
	var calls, threads, sites, enabled int
	var per [][]model.Stat
	var counts [][]model.Count
	for _, in := range ins {
		t := in.Trace
		threads += len(t.Streams)
		sites += int(t.Meta.Sites)
		enabled += int(t.Meta.Enabled)
		if graph {
			s, err := model.ReportGraph(t, in.Names, in.Filter)
			if err != nil {
				return err
			}
			per = append(per, s)
			continue
		}
		c, n, err := model.ReportCalls(t, in.Names, in.Filter)
		if err != nil {
			return err
		}
		counts = append(counts, c)
		calls += n
	}
	if graph {
		stats := model.MergeStats(per...)
		if err := model.SortStats(stats, opt.Sort); err != nil {
			return err
		}
		markStats(stats, ins...)
		offcpu := false
		for _, in := range ins {
			offcpu = offcpu || in.Trace.HasSched()
		}
		if err := WriteStatsTable(w, stats, opt.Avg, true, offcpu); err != nil {
			return err
		}
		for _, s := range stats {
			calls += s.Calls
		}
	} else {
		merged := model.MergeCounts(counts...)
		markCounts(merged, ins...)
		if err := writeCountsTable(w, merged); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "# %s in %s of %s; %d of %d sites traced\n", plural(calls, "call", "calls"),
		plural(threads, "thread", "threads"), plural(len(ins), "process", "processes"), enabled, sites)
	return err
}

// Tasks writes the session's processes as a tree, as uftrace's info
// --task does: each process image under the one that started it (its
// parent's pid, the latest image of that pid started before it; an
// image an exec made under the one it replaced), with its pid, name,
// command line, how it ended and its threads.
func Tasks(w io.Writer, ins []Input) error {
	bw := bufio.NewWriter(w)
	parent := make([]int, len(ins))
	for i, in := range ins {
		parent[i] = -1
		for j := i - 1; j >= 0; j-- {
			m := ins[j].Meta
			if m.Pid == in.Meta.Pid || m.Pid == in.Meta.Ppid {
				parent[i] = j
				break
			}
		}
	}
	var walk func(i, depth int)
	walk = func(i, depth int) {
		m := ins[i].Meta
		how := "exec'd"
		if i == 0 || parent[i] < 0 || ins[parent[i]].Meta.Pid != m.Pid {
			how = ""
		}
		if m.Forked {
			how = "forked"
		}
		fmt.Fprintf(bw, "%s%d %s", strings.Repeat("  ", depth), m.Pid, escape.Text(m.Name()))
		if how != "" {
			fmt.Fprintf(bw, " (%s)", how)
		}
		end := ended(m)
		for j := range ins {
			if parent[j] == i && ins[j].Meta.Pid == m.Pid {
				end = "exec" // it went on as the image below
			}
		}
		fmt.Fprintf(bw, "  %s  %s", end, threadNames(ins[i].Trace))
		if len(m.Cmdline) > 0 {
			fmt.Fprintf(bw, "  %s", escape.Text(strings.Join(m.Cmdline, " ")))
		}
		fmt.Fprintln(bw)
		// Children forked without an exec: their streams are in this
		// image (their pids), their ends not recorded apart.
		forked := map[int][]string{}
		var order []int
		for _, s := range ins[i].Trace.Streams {
			if s.Pid != m.Pid {
				if forked[s.Pid] == nil {
					order = append(order, s.Pid)
				}
				forked[s.Pid] = append(forked[s.Pid], fmt.Sprint(s.Tid))
			}
		}
		for _, pid := range order {
			fmt.Fprintf(bw, "%s%d %s (forked)  -  [%s]\n", strings.Repeat("  ", depth+1), pid, escape.Text(m.Name()), strings.Join(forked[pid], ","))
		}
		for j := range ins {
			if parent[j] == i {
				walk(j, depth+1)
			}
		}
	}
	fmt.Fprintln(bw, "# PID NAME  ENDED  THREADS  COMMAND LINE")
	for i := range ins {
		if parent[i] < 0 {
			walk(i, 0)
		}
	}
	return bw.Flush()
}

// ended says how a process image ended, as far as its metadata knows.
func ended(m *trace.Meta) string {
	switch {
	case m.Signal != 0:
		return fmt.Sprintf("signal %d", m.Signal)
	case m.Exited:
		return fmt.Sprintf("exit %d", m.ExitCode)
	case m.Unended:
		return "killed?"
	}
	return "ended"
}

// threadNames are the threads of a trace's own process as TID, one per
// stream.
func threadNames(t *trace.Trace) string {
	var tids []string
	for _, s := range t.Streams {
		if s.Pid == t.Meta.Pid {
			tids = append(tids, fmt.Sprint(s.Tid))
		}
	}
	tids = slices.Compact(tids)
	return "[" + strings.Join(tids, ",") + "]"
}
