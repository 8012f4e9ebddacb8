package views

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"syscall"

	"ftpatch/runtime/abi"
)

// Info writes what the trace is, a "key: value" line each: the program
// (its path, its command line when tracing began, build-id and pid), the
// tracer and clock, when tracing began and how long it lasted, whether
// the program ended through exit, how its sites were chosen and how many
// were traced, the shared objects it loaded, each thread with its calls
// and the time they span, and everything the runtime dropped or could
// not write, counted even when 0; then opt.Warnings, a "warning:" line
// each (what the reader found missing), and opt.Beside, a "beside:" line
// each.
func Info(w io.Writer, in Input, opt Options) error {
	m := in.Meta
	bw := bufio.NewWriterSize(w, 64<<10)
	kv := func(key, format string, args ...any) {
		fmt.Fprintf(bw, "%-19s %s\n", key+":", fmt.Sprintf(format, args...))
	}
	exe := m.Exe
	if exe == "" {
		exe = "not recorded"
	}
	kv("program", "%s", exe)
	if m.Cmdline == nil {
		kv("command line", "not recorded (a runtime that did not record it)")
	} else {
		kv("command line", "%s", shellQuote(m.Cmdline))
	}
	kv("build-id", "%s", or(m.BuildID, "none (the program has no GNU build-id note)"))
	kv("pid", "%d", m.Pid)
	kv("tracer", "%s", m.Tracer)
	switch m.Clock {
	case abi.MetaClockTSC:
		kv("clock", "tsc (rdtsc ticks, converted to ns by the CLOCK_MONOTONIC readings taken with them at the start and end)")
	case abi.MetaClockMono:
		kv("clock", "mono (CLOCK_MONOTONIC ns: the TSC was not trusted, or FTRACE_CLOCK=mono)")
	default:
		kv("clock", "%s", or(m.Clock, "not recorded"))
	}
	kv("started", "%d ns on CLOCK_MONOTONIC", m.MonoStart)
	kv("duration", "%s", strings.TrimSpace(FormatDuration(m.Nanos(m.TSCEnd))))
	if m.Unended {
		kv("ended", "no: the program did not end through exit or _exit (killed by a signal?); the trace ends at its last event")
	} else if m.Signal != 0 {
		kv("ended", "by signal %d (%v), whose handler wrote every thread's ring: the program then died of it", m.Signal, syscall.Signal(m.Signal))
	} else {
		kv("ended", "through exit or _exit: every thread's buffered events were written")
	}
	switch m.Config {
	case abi.ConfigStatePatched:
		kv("config", "patched (ftpatch enable chose the traced sites; the runtime only checked them)")
	case abi.ConfigStateOverridden:
		kv("config", "overridden (pre-patched by ftpatch enable, but FTRACE or FTRACE_FILTER chose at start)")
	case abi.ConfigStateMismatch:
		kv("config", "mismatch (a config record that did not match the site table: ignored)")
	case abi.ConfigStateNone:
		kv("config", "none (sites chosen at start by FTRACE and FTRACE_FILTER)")
	default:
		kv("config", "%s", or(m.Config, "not recorded (a runtime older than config records)"))
	}
	if m.GraphFuncs != "" || m.GraphNotrace != "" {
		kv("subtree filters", "FTRACE_GRAPH_FUNCS=%s FTRACE_GRAPH_NOTRACE=%s: only calls made inside the chosen functions' calls, and outside the notrace ones', were recorded", or(m.GraphFuncs, "(none)"), or(m.GraphNotrace, "(none)"))
	} else {
		kv("subtree filters", "none (FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE)")
	}
	kv("sites", "%d in the table: %d traced, %d skipped (unexpected bytes), %d could not be written, %d matched but not traceable yet",
		m.Sites, m.Enabled, m.Skipped, m.Failed, m.Unsupported)
	if m.Literal > 0 || m.Misaligned > 0 {
		kv("literals", "%d traced sites call their function's own ops record through the literal before it; %d have a slot for one that is not 8-byte aligned and take the shared path (build with -falign-functions=8; gcc 14 and later: -fmin-function-alignment=8 for cold functions too)",
			m.Literal, m.Misaligned)
	}
	if len(m.Modules) == 0 {
		kv("modules", "none (no shared object with sites)")
	}
	for _, md := range m.Modules {
		when := "loaded before tracing began"
		if md.Load != 0 {
			when = "loaded at " + strings.TrimSpace(FormatDuration(m.Nanos(md.Load)))
		}
		if md.Unload != 0 {
			when += ", unloaded at " + strings.TrimSpace(FormatDuration(m.Nanos(md.Unload)))
		}
		kv("module", "%s: build-id %s, bias 0x%x, %s; %d sites, %d traced; config %s",
			md.Path, or(md.BuildID, "none"), md.Bias, when, md.Sites, md.Enabled, md.Config)
	}
	if m.ModulesForgotten > 0 {
		kv("modules forgotten", "%d (more loads than the runtime keeps: their functions show as addresses)", m.ModulesForgotten)
	}

	threads, calls := 0, 0
	for th := range in.Threads {
		n, unwound, open := 0, 0, 0
		first, last := -1.0, 0.0
		for ev := range th.Events {
			if first < 0 {
				first = ev.NS
			}
			last = ev.NS
			switch ev.Kind {
			case Enter, Call:
				n++
			case Unwound:
				unwound++
			case Open:
				open++
			}
		}
		threads++
		calls += n
		name := fmt.Sprintf("pid %d tid %d", th.Pid, th.Tid)
		if th.Context != 0 {
			name += fmt.Sprintf(" context %d", th.Context)
		}
		span := ""
		if n > 0 {
			span = fmt.Sprintf(", from %s to %s", strings.TrimSpace(FormatDuration(first)), strings.TrimSpace(FormatDuration(last)))
		}
		extra := ""
		if unwound > 0 {
			extra += fmt.Sprintf(", %d unwound", unwound)
		}
		if open > 0 {
			extra += fmt.Sprintf(", %d still running at the end", open)
		}
		kv("thread", "%s: %s%s%s", name, plural(n, "call", "calls"), span, extra)
		if err := failed(bw); err != nil {
			return err
		}
	}
	kv("threads", "%d, %s in all (a makecontext context's calls count as a thread of their own)", threads, plural(calls, "call", "calls"))

	if m.Buffer == "ring" {
		kv("buffer", "the flight recorder: each thread's last %d bytes of records kept in memory, written at the end; %d bytes of earlier records overwritten", m.RingBytes, m.Overwritten)
	} else if m.Buffer != "" {
		kv("buffer", "%s (every record written)", m.Buffer)
	}
	kv("dropped", "%d calls (made while the tracer itself ran on their thread, or on a thread without a buffer)", m.Dropped)
	kv("lost bytes", "%d (records the runtime could not write: a full disk, the file size limit)", m.LostBytes)
	kv("lost threads", "%d (threads whose buffered records were not written)", m.LostThreads)
	kv("not graphed", "%d calls nested deeper than the shadow stack holds, on %d threads that then stopped graphing", m.Overflow, m.Stopped)
	kv("unwound", "%d graphed calls left by longjmp or an exception", m.Unwound)
	kv("contexts", "%d made by makecontext, %d not followed (more than the runtime keeps: their calls were recorded, not graphed)", m.Contexts, m.ContextsLost)
	var warns []error
	if opt.Warnings != nil {
		warns = opt.Warnings()
	}
	for _, err := range warns {
		fmt.Fprintf(bw, "warning: %v\n", err)
	}
	for _, dir := range opt.Beside {
		kv("beside", "%s: the trace of a process that started while this one ran (one it exec'd?)", dir)
	}
	return bw.Flush()
}

// or is s, or else when s is empty.
func or(s, orElse string) string {
	if s == "" {
		return orElse
	}
	return s
}

// shellQuote writes args as a shell would read them back: each argument
// bare when it holds only characters no shell treats specially, else in
// single quotes.
func shellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}
