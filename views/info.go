package views

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"ftpatch/internal/escape"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// Info writes what the trace is, a "key: value" line each: the program
// (its path, its command line when tracing began, build-id, pid and
// name), the tracer and clock, when tracing began and how long it
// lasted, whether the program ended through exit, its exit status (or
// the signal that killed it) and what it used (CPU time, largest
// resident set, page faults, context switches, blocks read and
// written), how its sites were chosen and how many were traced, the
// shared objects it loaded, each thread with its name, its calls and
// the time they span, the task list, and everything the runtime dropped
// or could not write, counted even when 0; then opt.Warnings, a
// "warning:" line each (what the reader found missing), and opt.Beside,
// a "beside:" line each. The exit status and usage are ftpatch record's
// (opt.Exit) where it ran the program, else the runtime's.
func Info(w io.Writer, in Input, opt Options) error {
	m := in.Meta
	bw := bufio.NewWriterSize(w, 64<<10)
	// Every value is escaped: the trace's paths and names are as they
	// came, and may hold a terminal's escape sequences.
	kv := func(key, format string, args ...any) {
		fmt.Fprintf(bw, "%-19s %s\n", key+":", escape.Text(fmt.Sprintf(format, args...)))
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
	if m.Comm != "" {
		kv("pid", "%d (%s)", m.Pid, m.Comm)
	} else {
		kv("pid", "%d", m.Pid)
	}
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
	} else if m.Detached != 0 {
		kv("ended", "by ftpatch record -p (ctl end): every site disabled, every thread's buffered records written; the process ran on")
	} else if m.Signal != 0 {
		kv("ended", "by signal %d (%v), whose handler wrote every thread's ring: the program then died of it", m.Signal, syscall.Signal(m.Signal))
	} else {
		kv("ended", "through exit or _exit: every thread's buffered records were written")
	}
	kv("exit status", "%s", exitStatus(m, opt.Exit))
	usage(kv, m, opt.Exit)
	switch m.Config {
	case abi.ConfigStatePatched:
		kv("config", "patched (ftpatch enable chose the traced sites; the runtime only checked them)")
	case abi.ConfigStateOverridden:
		kv("config", "overridden (pre-patched by ftpatch enable, but FTRACE or FTRACE_FILTER chose at start)")
	case abi.ConfigStateMismatch:
		kv("config", "mismatch (a config record that did not match the site table: ignored)")
	case abi.ConfigStateNone:
		if m.Detached != 0 {
			kv("config", "none (sites chosen while the process ran, by ftpatch record -p)")
		} else {
			kv("config", "none (sites chosen at start by FTRACE and FTRACE_FILTER)")
		}
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
	if m.PrologueSites > 0 || m.PrologueChanged > 0 {
		kv("prologue sites", "%d sites made from functions' prologues, %d of them at load (record -P), the rest by ftpatch instrument; %d functions left alone (their bytes were not the file's)",
			m.PrologueSites, len(m.Prologues), m.PrologueChanged)
	}
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
	if l := m.Libcalls; l.Slots > 0 {
		kv("library calls", "%d of %d GOT slots redirected (FTRACE_LIBCALL): their calls traced; %d chosen whose function was not found, %d that could not be written",
			l.Hooked, l.Slots, l.Unresolved, l.Failed)
	}
	schedInfo(kv, m)
	if m.ModulesForgotten > 0 {
		kv("modules forgotten", "%d (more loads than the runtime keeps: their functions show as addresses)", m.ModulesForgotten)
	}

	counts := in.Counts
	if counts == nil {
		counts = func(yield func(trace.ThreadCounts) bool) {
			for th := range in.Threads {
				if !yield(trace.CountEvents(th)) {
					return
				}
			}
		}
	}
	threads, calls := 0, uint64(0)
	var tasks strings.Builder
	lastTask := [2]int{-1, -1}
	for c := range counts {
		threads++
		calls += c.Calls
		name := c.Name
		if name == "" && c.Pid == m.Pid && c.Tid == m.Pid {
			name = m.Comm // the first thread's is the process's
		}
		who := fmt.Sprintf("pid %d tid %d", c.Pid, c.Tid)
		if name != "" {
			who += " (" + name + ")"
		}
		if c.Context != 0 {
			who += fmt.Sprintf(" context %d", c.Context)
		}
		span := ""
		if c.Calls > 0 {
			span = fmt.Sprintf(", from %s to %s", strings.TrimSpace(FormatDuration(c.First)), strings.TrimSpace(FormatDuration(c.Last)))
		}
		extra := ""
		if c.Unwound > 0 {
			extra += fmt.Sprintf(", %d unwound", c.Unwound)
		}
		if c.Open > 0 {
			extra += fmt.Sprintf(", %d still running at the end", c.Open)
		}
		kv("thread", "%s: %s%s%s", who, plural(int(c.Calls), "call", "calls"), span, extra)
		if task := [2]int{c.Pid, c.Tid}; task != lastTask {
			lastTask = task
			if tasks.Len() > 0 {
				tasks.WriteByte(' ')
			}
			fmt.Fprintf(&tasks, "%d", c.Tid)
			if name != "" {
				fmt.Fprintf(&tasks, "(%s)", name)
			}
		}
		if err := failed(bw); err != nil {
			return err
		}
	}
	kv("threads", "%d, %s in all (a makecontext context's calls count as a thread of their own)", threads, plural(int(calls), "call", "calls"))
	kv("task list", "%s", or(tasks.String(), "none (no thread recorded a call)"))

	if m.Buffer == "ring" {
		cut := ""
		if m.RingAsked > m.RingBytes {
			cut = fmt.Sprintf(" (FTRACE_BUFFER asked for %d: more than a ring holds)", m.RingAsked)
		}
		kv("buffer", "the flight recorder: each thread's last %d bytes%s of records kept in memory, written at the end; %d bytes of earlier records overwritten", m.RingBytes, cut, m.Overwritten)
	} else if m.Buffer != "" {
		kv("buffer", "%s (every record written)", m.Buffer)
	}
	kv("dropped", "%d calls (made while the tracer itself ran on their thread, or on a thread without a buffer)", m.Dropped)
	kv("lost bytes", "%d (records the runtime could not write: a full disk, the file size limit, a trace file the program closed or replaced)", m.LostBytes)
	kv("lost threads", "%d (threads whose buffered records were not written)", m.LostThreads)
	kv("not graphed", "%d calls nested deeper than the shadow stack holds, on %d threads that then stopped graphing", m.Overflow, m.Stopped)
	kv("unwound", "%d graphed calls left by longjmp or an exception", m.Unwound)
	kv("contexts", "%d made by makecontext, %d not followed (more than the runtime keeps: their calls were recorded, not graphed)", m.Contexts, m.ContextsLost)
	var warns []error
	if opt.Warnings != nil {
		warns = opt.Warnings()
	}
	for _, err := range warns {
		fmt.Fprintf(bw, "warning: %s\n", escape.Text(err.Error()))
	}
	for _, dir := range opt.Beside {
		kv("beside", "%s: the trace of a process that started while this one ran (one it exec'd?)", dir)
	}
	return bw.Flush()
}

// exitStatus says how the program ended: as ftpatch record saw it (rec),
// else as the runtime did, else why it is not known.
func exitStatus(m *trace.Meta, rec *trace.ExitStatus) string {
	switch {
	case rec != nil && rec.Signal != 0:
		core := ""
		if rec.Core {
			core = ", core dumped"
		}
		return fmt.Sprintf("killed by signal %d (%s)%s", rec.Signal, signalName(rec.Signal), core)
	case rec != nil:
		return fmt.Sprintf("exited with code %d", rec.Code)
	case m.Signal != 0:
		return fmt.Sprintf("killed by signal %d (%s)", m.Signal, signalName(int(m.Signal)))
	case m.Exited:
		return fmt.Sprintf("exited with code %d", m.ExitCode)
	}
	return notRecorded(m)
}

// notRecorded says why neither ftpatch record nor the runtime recorded
// how the program ended.
func notRecorded(m *trace.Meta) string {
	switch {
	case m.Unended:
		return "not recorded: the program was killed, and not run by ftpatch record"
	case m.Format != abi.MetaFormat:
		return fmt.Sprintf("not recorded: a runtime before trace format 4 (this is %s), and not run by ftpatch record", or(m.Format, "of no format"))
	}
	if m.Detached != 0 {
		return "none: the process ran on after its trace ended (ftpatch record -p)"
	}
	return "not recorded: tracing ended without the program's end (it exec'd another, or ended through quick_exit; or this is a snapshot)"
}

// signalName is a signal's name as kill -l spells it, with SIG.
func signalName(sig int) string {
	if n := unix.SignalName(syscall.Signal(sig)); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(sig)
}

// usage writes what the program used: as ftpatch record saw it (wait4:
// the process and the children it waited for), else as the runtime did
// when tracing ended (getrusage: the process alone); but its largest
// resident set the runtime's where it has it, its own image's (wait4's
// counts the memory of the process it was exec'd from: ftpatch's).
func usage(kv func(key, format string, args ...any), m *trace.Meta, rec *trace.ExitStatus) {
	u := m.Usage
	rss := uint64(0)
	switch {
	case rec != nil && u != nil:
		rss, u = u.MaxRSSKB, &rec.Usage
		kv("usage", "as ftpatch record saw it (wait4: the program, and the children it waited for); max rss the runtime's (the program image's peak)")
	case rec != nil:
		rss, u = rec.Usage.MaxRSSKB, &rec.Usage
		kv("usage", "as ftpatch record saw it (wait4: the program, and the children it waited for; its max rss counts ftpatch's own memory too, which the process had before its exec)")
	case u != nil:
		rss = u.MaxRSSKB
		kv("usage", "as the runtime saw it when tracing ended (getrusage: the process alone, not its children; max rss: the program image's peak)")
	default:
		kv("usage", "%s", notRecorded(m))
		return
	}
	sec := func(us uint64) string { return fmt.Sprintf("%d.%03d", us/1e6, us%1e6/1e3) }
	kv("cpu time", "%s / %s sec (sys / user)", sec(u.SysUs), sec(u.UserUs))
	kv("max rss", "%d KB", rss)
	kv("page faults", "%d / %d (major / minor)", u.MajorFaults, u.MinorFaults)
	kv("context switches", "%d / %d (voluntary / involuntary)", u.Voluntary, u.Involuntary)
	kv("disk iops", "%d / %d (read / write)", u.InBlocks, u.OutBlocks)
}

// schedInfo writes whether the trace holds the threads' scheduler
// events (when each left the CPU and ran again), how many, what was lost
// of them, and, when the kernel refused them or something stopped them,
// why.
func schedInfo(kv func(key, format string, args ...any), m *trace.Meta) {
	const key = "scheduler events"
	switch m.Sched {
	case abi.SchedOn:
		kv(key, "on: %d times a thread left the CPU, recorded; %s lost", m.SchedSwitches, plural(int(m.SchedLost), "event", "events"))
		if m.SchedWhy != "" {
			kv(key, "stopped: %s", m.SchedWhy)
		}
	case abi.SchedRefused:
		kv(key, "refused by the kernel (%s): the calls are all there, but not when their threads were off the CPU", or(m.SchedWhy, "it did not say why"))
	case "":
		kv(key, "not recorded (ftpatch record records them unless --no-sched; FTRACE_SCHED=1 asks the runtime)")
	default:
		kv(key, "%s", m.Sched)
	}
}

// or is s, or else when s is empty.
func or(s, orElse string) string {
	if s == "" {
		return orElse
	}
	return s
}

// shellQuote writes args as a shell would read them back: each argument
// bare when it holds only characters no shell treats specially, in
// single quotes when it holds only printable ones, else in $'...' with
// the others escaped (package escape), which bash, zsh and ksh read back.
func shellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "":
			b.WriteString(a)
		case escape.Text(a) == a:
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		default:
			b.WriteString("$'" + escape.Text(ansiQuotes.Replace(a)) + "'")
		}
	}
	return b.String()
}

// ansiQuotes escapes what $'...' would read otherwise.
var ansiQuotes = strings.NewReplacer(`\`, `\\`, `'`, `\'`)
