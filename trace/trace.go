// Package trace reads the trace directory the runtime writes (the one
// reader every command uses): its metadata, each thread's stream a chunk
// at a time, and, through a Filter, each thread's calls. What names the
// addresses (package symbols) comes after it, through Naming.
//
// A trace directory holds `meta` (key value lines) and one stream per
// thread, `<pid>-<tid>.trace`: a 16-byte header ("ftrtrec4", pid and tid
// as little-endian u32) followed by records of little-endian 64-bit
// words (format 4, `format ftrt-trace 4` in meta); and, when `ftpatch
// record` ran the program, `exit`: how the program ended and what it
// used, as its parent saw it (ReadExitStatus).
//
// Each stream keeps a clock: it starts at 0, and each record's time is
// the previous record's plus the record's delta (unsigned). A record's
// first word's top two bits are its kind:
//
//	0 CALL   2 words  delta << 47 | site (delta < 2^15, site < 2^47); the caller's return address
//	1 ENTRY  1 word   1 << 62 | delta << 47 | site (delta < 2^15, site < 2^47)
//	2 EXIT   1 word   2 << 62 | delta (< 2^62): the innermost open entry of the current context returned
//	3 EXT    1-3      3 << 62 | sub << 58 | payload (58 bits), by sub-kind:
//	  0 UNWOUND    1 word   payload delta: the innermost open entry was left without returning (longjmp, exception)
//	  1 TIME       2 words  payload 0; the stream's clock is set to word 1 (no event)
//	  2 CONTEXT    2 words  payload delta; word 1 a context id: the thread runs in that context from
//	                        here on (0: its own stack; else a makecontext context)
//	  3 LONGENTRY  2 words  payload delta; word 1 the site: an ENTRY whose delta or site does not fit
//	  4 LONGCALL   3 words  payload delta; words 1 and 2 the site and the caller's return address
//	  5 WRAPPED    1 word   payload: words of earlier records the flight recorder's ring overwrote (no event)
//	  6 ARGS       3+ words payload: the words after the first; a call's arguments (its CALL or ENTRY follows)
//	  7 RETVAL     3+ words as ARGS: a return value (its EXIT follows)
//	  8 SUMMARY    12+ words payload: the words after the first; what the stream holds, at its end (no event)
//	  9-15 reserved: an error
//
// A stream's SUMMARY (package abi's Sum*) gives the records of each kind
// the runtime wrote to it, the time of its first and last, and its
// thread's name, counted as it recorded: ThreadCounts takes them from
// there, where a stream has one, instead of reading it through. The
// runtime writes one when the stream ends (the thread's exit, the
// program's end through exit or _exit, an exec); a program killed by a
// signal leaves its threads' streams without.
//
// Package runtime/abi holds these values, the metadata's keys and the
// files' names, as the runtime's header defines them.
//
// So a call costs 16 bytes, entry and exit or a CALL, while the gaps
// between records are under 2^15 ticks; the runtime writes a long form
// where a delta or site does not fit, and a TIME first where even that
// does not (the clock read lower than before, a delta of 2^58 or more)
// and at the start of a stream (but before an EXIT, whose delta from
// the clock's 0 is the time itself). No record's first word is 0: a zero
// word is where a stream ends (a hole, or zeros a crashed system left).
//
// Traces of format 3 (`ftrt-trace 3`, "ftrtrec3": no SUMMARY, which is
// reserved there) read too, and so do those of format 2 (`ftrt-trace 2`,
// "ftrtrec2"): there every record starts with kind << 62 | its timestamp; a
// Call goes on with the site and the caller's return address, an Entry
// with the site (1 << 63 | id: a context switch); Exit and Unwound are
// that one word.
//
// The runtime writes meta when tracing begins, saying `ended 0`, and again
// when the program ends through exit or _exit, saying `ended 1`. A program
// killed by a signal leaves the first: its trace reads, with the end of
// tracing taken from the last record, and Warnings says events are
// missing. A meta with no `ended` line comes from a runtime that wrote it
// only at the end: it is complete.
//
// A trace is read as far as its files go: a disk that filled up, a file
// size limit or a program that died while writing can leave a stream
// empty or cut in the middle of a record, and the runtime counts what it
// could not keep (calls dropped, bytes and threads not written, calls
// not graphed). Warnings says each of these once. Only metadata that is
// empty, or cut before what naming the records needs, is an error (one
// that says so). Every file of the directory must be a regular file;
// each is read no further than its size when opened, so memory is
// bounded by the files' real size.
package trace

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"ftpatch/infile"
	"ftpatch/runtime/abi"
)

// ErrFormat: a file of the trace directory is not what the runtime
// writes.
var ErrFormat = errors.New("malformed trace")

// ErrUnended: the metadata is the one written while the program ran, so
// the program did not end through exit or _exit, which flush every
// thread's buffered events; what they still held is not in the trace.
var ErrUnended = errors.New("the traced program did not end through exit or _exit (killed?); events it had not flushed are lost")

// ErrIncomplete: a file of the trace directory is empty or cut short (the
// disk filled up, a file size limit was reached, or the program died
// while writing it). Read reads what there is and Warnings says what is
// missing; metadata too short to name the records is an error.
var ErrIncomplete = errors.New("incomplete trace")

// ErrLost: the runtime recorded events it could not keep (dropped, not
// written, not graphed), and counted them in the metadata.
var ErrLost = errors.New("events lost")

// ErrWrapped: the flight recorder (FTRACE_BUFFER=ring:SIZE) kept each
// thread's last records, and some threads made more: their earlier
// records were overwritten, as asked.
var ErrWrapped = errors.New("the flight recorder's ring wrapped")

// Meta is the trace's metadata.
type Meta struct {
	Format string // "ftrt-trace 4" (or 3 or 2: earlier runtimes')
	Tracer string // "function" or "function_graph"
	Clock  string // "tsc" (rdtsc ticks) or "mono" (CLOCK_MONOTONIC ns, where the TSC is not trusted)
	Exe    string // the traced executable, as the process saw it
	// Cmdline is the program's command line when tracing began (nil
	// from a runtime that did not record it; at most 4096 bytes of it).
	Cmdline []string
	BuildID string // its GNU build-id (hex), if it has one
	Pid     int
	Bias    uint64 // the executable's load bias: run-time address - file address
	// Unended: this metadata was written while the program ran, and none
	// after it: the program did not end through exit or _exit (a signal
	// killed it, or it still runs). The end of tracing is then the last
	// record's time. False for a trace the runtime finished.
	Unended bool
	// The clock: rdtsc at the first and last moment of tracing, and
	// CLOCK_MONOTONIC (ns) at the same moments, to convert the one to the
	// other. In a trace that did not end, TSCEnd is the last record's
	// timestamp and MonoEnd follows it at the rate the metadata's own
	// clock pair (taken when it was written) gives.
	TSCStart, TSCEnd, MonoStart, MonoEnd uint64
	// TSCHz is the counter's rate where the architecture gives it
	// (arm64's cntfrq_el0), which converts its ticks to nanoseconds
	// exactly; 0 elsewhere, and the clock pairs give the rate.
	TSCHz uint64
	// What the runtime did: sites in the table, enabled, skipped for
	// unexpected bytes, failed to write, not traceable yet; calls dropped;
	// calls not graphed because their thread's shadow stack overflowed,
	// and such threads; graphed frames left by longjmp; bytes of records
	// the runtime could not write.
	Sites, Enabled, Skipped, Failed, Unsupported, Dropped, Overflow, Stopped, Unwound, LostBytes uint64
	// Literal counts the enabled sites served through their pre-function
	// literal (arm64 -fpatchable-function-entry=4,2: the function's own
	// ops record), and Misaligned the sites whose slot for one was not
	// 8-byte aligned, which took the shared path instead (0 from a
	// runtime that does not count them, and on x86-64).
	Literal, Misaligned uint64
	// Libcalls is what the runtime did with the GOT slots its modules
	// call other modules' functions through (FTRACE_LIBCALL=1): all
	// zero when it was not asked to, or from a runtime before it.
	Libcalls Libcalls
	// PrologueSites counts the sites made from functions' prologues
	// (record -P at load, ftpatch instrument), PrologueChanged the
	// functions record -P left alone because their bytes were not the
	// file's; Prologues are the sites made at load and their functions
	// (the process's "<pid>.prologue"), sorted by site: a trampoline no
	// symbol covers, named as its function.
	PrologueSites, PrologueChanged uint64
	Prologues                      []PrologueSite
	// LostThreads counts threads whose buffered records were not written
	// (0 from a runtime that does not count them).
	LostThreads uint64
	// Contexts counts the contexts (makecontext) the program made, and
	// ContextsLost those the runtime could not follow (more than it
	// keeps): calls in them were recorded, not graphed.
	Contexts, ContextsLost uint64
	// GraphFuncs and GraphNotrace are the subtree filters the graph
	// tracer recorded with (FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE: a
	// control character as '?'), "" for none: a trace recorded with them
	// holds only the calls made inside the chosen functions' calls and
	// outside the notrace ones'.
	GraphFuncs, GraphNotrace string
	// RecordedBytes counts the bytes of the records the runtime flushed
	// from its buffers, those written and those lost (LostBytes) alike: a
	// record's size depends on the time since the one before, so the
	// calls made do not say it (0 from a runtime that does not count).
	RecordedBytes uint64
	// Config is what the runtime made of the file's config record:
	// "patched" (pre-patched by ftpatch enable: sites only checked),
	// "overridden" (pre-patched, but FTRACE or FTRACE_FILTER was set),
	// "mismatch" (a record not matching the table: ignored), "none" (not
	// pre-patched); "" from a runtime older than the record.
	Config string
	// Modules are the shared objects whose sites the runtime served, one
	// per load (a module loaded again after dlclose appears again), in
	// the order they registered.
	Modules []Module
	// ModulesForgotten counts modules whose records the runtime reused
	// (more loads than it keeps): their addresses show unnamed.
	ModulesForgotten uint64
	// Buffer is how the runtime kept each thread's records: "stream"
	// (every record written), "ring" (the flight recorder: each thread's
	// last RingBytes kept in memory, written at the end or a snapshot);
	// "" from a runtime before the flight recorder. Overwritten counts
	// the bytes of records the rings overwrote, not in the trace.
	Buffer                 string
	RingBytes, Overwritten uint64
	// RingAsked is what FTRACE_BUFFER=ring:SIZE asked for each ring:
	// more than RingBytes when SIZE was more than a ring holds (0 from a
	// runtime that did not record it).
	RingAsked uint64
	// Signal is the fatal signal whose handler ended the trace: the
	// flight recorder's rings written as the program died of it; 0 when
	// it ended otherwise.
	Signal uint64
	// Detached is 1 when ftpatch record -p ended the trace (ctl end):
	// every site disabled, every buffer written, and the process ran on.
	Detached uint64
	// Exited says the runtime saw the status the program ended with, what
	// it passed to exit or _exit or main returned: ExitCode, its low 8
	// bits (what the parent's wait sees). False for a program killed, one
	// that ended through quick_exit or exec'd another, and from a runtime
	// before format 4.
	Exited   bool
	ExitCode int
	// Ppid is the parent process when the image started, and Image
	// which image of its process it is (1, then one more at each exec):
	// 0 from a runtime before sessions.
	Ppid, Image int
	// Forked says the image is a child's forked without an exec: its
	// parent's program, from the fork on (its first image; a child's
	// that execs having recorded nothing has none, its program's first).
	Forked bool
	// Comm is the process's name (/proc/PID/comm, its first thread's)
	// when the metadata was written: "" from a runtime before format 4.
	Comm string
	// Usage is what the process used (getrusage(RUSAGE_SELF): every
	// thread of it, not its children) when the trace ended; nil when not
	// recorded (a program killed, a runtime before format 4).
	Usage *Usage
	// Sched says whether the runtime recorded when each traced thread
	// left the CPU and ran again (FTRACE_SCHED=1): "on", "refused" (the
	// kernel would not give them: SchedWhy says why), or "" (not asked,
	// or a runtime before scheduler events). SchedSwitches counts the
	// times a thread left the CPU, recorded, and SchedLost the events
	// lost (the kernel's ring was full, the file could not be written);
	// SchedWhy also says what stopped them, when something did.
	Sched, SchedWhy          string
	SchedSwitches, SchedLost uint64
}

// AddLosses adds o's counts of what the runtime lost or could not
// graph to m's (dropped calls, calls not graphed and threads that
// stopped graphing, frames left by longjmp, bytes lost, threads lost,
// bytes recorded and overwritten, scheduler events recorded and lost):
// the counts of several processes'
// traces read as one.
func (m *Meta) AddLosses(o *Meta) {
	m.Dropped += o.Dropped
	m.Overflow += o.Overflow
	m.Stopped += o.Stopped
	m.Unwound += o.Unwound
	m.LostBytes += o.LostBytes
	m.LostThreads += o.LostThreads
	m.RecordedBytes += o.RecordedBytes
	m.Overwritten += o.Overwritten
	m.SchedSwitches += o.SchedSwitches
	m.SchedLost += o.SchedLost
}

// Libcalls counts GOT slots of the traced modules through which they
// call other modules' functions: found, redirected (their calls in the
// trace), chosen but whose function was not found (an undefined weak
// one), chosen but that could not be written.
type Libcalls struct {
	Slots, Hooked, Unresolved, Failed uint64
}

// Module is a shared object with sites, as the runtime saw it loaded.
type Module struct {
	Path    string // as the loader named it (absolute when the runtime could resolve it)
	BuildID string // its GNU build-id (hex), "" when it has none
	Bias    uint64 // run-time address - file address
	Lo, Hi  uint64 // the run-time extent of its segments
	// Load and Unload are trace timestamps of its registration and its
	// dlclose: 0 for before the trace began, and for loaded until the end.
	Load, Unload   uint64
	Sites, Enabled uint64 // its pass's counts
	Config         string // what became of its config record (as Meta.Config)
}

// parseModule reads a `module` line's value:
// BIAS LO HI LOAD UNLOAD SITES ENABLED CONFIG BUILD-ID PATH.
func parseModule(val string) (Module, error) {
	f := strings.SplitN(val, " ", 10)
	if len(f) != 10 || f[9] == "" {
		return Module{}, fmt.Errorf("want BIAS LO HI LOAD UNLOAD SITES ENABLED CONFIG BUILD-ID PATH")
	}
	var md Module
	for i, p := range []*uint64{&md.Bias, &md.Lo, &md.Hi, &md.Load, &md.Unload, &md.Sites, &md.Enabled} {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return Module{}, fmt.Errorf("field %d %q: not a number", i+1, f[i])
		}
		*p = n
	}
	if md.Lo > md.Hi {
		return Module{}, fmt.Errorf("extent 0x%x-0x%x is backwards", md.Lo, md.Hi)
	}
	md.Config = f[7]
	if f[8] != "-" {
		md.BuildID = f[8]
	}
	md.Path = f[9]
	return md, nil
}

// endAt moves the end of a trace that did not end to ts, its last
// record: TSCEnd and MonoEnd as written are a clock pair taken while the
// program ran, whose rate carries MonoEnd on. On the mono clock records
// are nanoseconds already.
func (m *Meta) endAt(ts uint64) {
	if ts <= m.TSCEnd || ts < m.TSCStart {
		return
	}
	switch {
	case m.Clock == abi.MetaClockMono:
		m.MonoEnd = m.MonoStart + (ts - m.TSCStart)
	case m.TSCHz > 0:
		m.MonoEnd = m.MonoStart + uint64(float64(ts-m.TSCStart)*1e9/float64(m.TSCHz))
	case m.TSCEnd > m.TSCStart && m.MonoEnd >= m.MonoStart:
		m.MonoEnd = m.MonoStart + uint64(float64(ts-m.TSCStart)*float64(m.MonoEnd-m.MonoStart)/float64(m.TSCEnd-m.TSCStart))
	default:
		return // no rate to go by: the times stay as the metadata has them
	}
	m.TSCEnd = ts
}

// Nanos converts a timestamp to nanoseconds since tracing started.
func (m *Meta) Nanos(ts uint64) float64 {
	if m.TSCHz > 0 && m.Clock != abi.MetaClockMono && ts >= m.TSCStart {
		return float64(ts-m.TSCStart) * 1e9 / float64(m.TSCHz)
	}
	if m.TSCEnd <= m.TSCStart || ts < m.TSCStart {
		return 0
	}
	return float64(ts-m.TSCStart) * float64(m.MonoEnd-m.MonoStart) / float64(m.TSCEnd-m.TSCStart)
}

// A Record is one event of the function whose site is IP.
type Record struct {
	TS   uint64 // the clock's reading: rdtsc ticks, or ns on the mono clock
	IP   uint64 // the site's run-time address (of an Exit or Unwound: its Entry's; 0 when that was not in the stream)
	Info uint64 // Kind << 62 | the caller's return address (Call records)
	// Data: a Call's or Entry's arguments, an Exit's return value, as
	// FTRACE_ARGS and FTRACE_RETVAL recorded them ("3, \"abc\"", "7");
	// "" when none were.
	Data string
}

// A Kind says what a record records.
type Kind uint8

// The kinds of record.
const (
	Call    Kind = iota // function tracer: a call, no exit follows
	Entry               // function_graph: an entry; an Exit or Unwound follows
	Exit                // function_graph: the function returned
	Unwound             // function_graph: its frame was left without returning (longjmp)
)

// Kind is what the record records.
func (r Record) Kind() Kind { return Kind(r.Info >> 62) }

// ctxMark marks a context switch: an Entry whose site word has it set.
const ctxMark = 1 << 63

// ContextMark is ctxMark for those who write records (tests, synthetic
// traces): a Record is a context switch when it is an Entry whose IP is
// ContextMark | the context's id.
const ContextMark = ctxMark

// Context says whether the record is a context switch rather than a
// call: from here on the thread runs in the context it names (made by
// makecontext, numbered from 1; 0 is the thread's own stack), whose calls
// nest among themselves and not with other contexts'. Exits and Unwound
// records close the innermost open entry of the current context.
func (r Record) Context() (uint64, bool) {
	return r.IP &^ ctxMark, r.Kind() == Entry && r.IP&(ctxMark|schedMark) == ctxMark
}

// IsCall says whether the record is a call or a graphed call's entry
// (Call or Entry), not a context switch nor a time off the CPU.
func (r Record) IsCall() bool {
	k := r.Kind()
	return k == Call || k == Entry && r.IP&ctxMark == 0
}

// Parent is the caller's return address (Call records).
func (r Record) Parent() uint64 { return r.Info & (1<<62 - 1) }

// A Stream is one thread's stream file: its events, in the order they
// happened, are read by a StreamReader (OpenStream), or all at once by
// Read into Records.
type Stream struct {
	Pid, Tid int
	Name     string   // the file's name in the trace directory
	Size     int64    // its size when the trace was opened: read no further
	Records  []Record // filled by Read; nil after Open
	format   int      // its header's: 2, 3 or 4
}

// A Trace is a whole trace directory.
type Trace struct {
	Dir     string
	Meta    Meta
	Streams []Stream // by pid, then tid

	// What Open and the stream readers found missing from the files
	// (see Warnings).
	metaCut bool     // the metadata's last line was cut short: left out
	metaEnd int      // the metadata's whole lines
	short   []string // streams shorter than their header
	mu      sync.Mutex
	cut     []string        // streams whose last record is partial, or that end in zeros
	wrapped map[string]bool // streams that begin where the flight recorder's ring wrapped (EXT_WRAPPED)

	enums map[string]*Enum // EnumsFile's, by name; nil without one

	// The scheduler events' files (sched.go): each thread's chunks, the
	// stream they go with, and the files cut short.
	sched      map[schedKey]*schedThread
	schedFirst map[schedKey]string
	schedCut   []string

	// BytesRead counts the bytes of streams the stream readers have read, for
	// a progress bar.
	BytesRead atomic.Int64
	// spooled counts the bytes of context records read back from where
	// a walk kept them aside (spool): with BytesRead, the reader's work.
	spooled atomic.Int64
}

// Formats are the trace formats this package reads, as the metadata's
// format line names them, newest first: the first is the one the
// runtime writes.
func Formats() []string { return []string{format, format3, format2} }

const (
	format     = abi.MetaFormat // the metadata's format line: the runtime's
	format3    = "ftrt-trace 3" // the runtime's before stream summaries, still read
	format2    = "ftrt-trace 2" // the one before, still read
	headerSize = abi.StreamHeader
	tsMask     = 1<<62 - 1
	// maxMetaLine bounds a metadata line (a module's path is at most
	// PATH_MAX, 4096 bytes).
	maxMetaLine = 64 << 10
	// maxModules bounds the metadata's module lines: the runtime keeps
	// 256 module records (FTRT_MOD_MAX, runtime/src/core/ftrt.h), reusing unloaded ones,
	// and writes a line per record; naming a record looks through the
	// modules at its address, so their number must stay small.
	maxModules = 1024
)

// Warnings are what a reader of the trace should be told along with it,
// each once and naming the directory: that the program did not end
// through exit or _exit (ErrUnended); that files were cut short
// (ErrIncomplete): the metadata, streams empty or shorter than their
// header, streams whose last record is partial; and what the runtime
// counted as lost (ErrLost): calls dropped, bytes and threads' records
// not written, calls not graphed; that the flight recorder's rings
// wrapped (ErrWrapped), naming the streams read so far that begin where
// one did: said before the streams are read, it would be said again,
// worded otherwise, after.
func (t *Trace) Warnings() []error {
	var out []error
	add := func(sentinel error, format string, args ...any) {
		out = append(out, fmt.Errorf("%s: %w: "+format, append([]any{t.Dir, sentinel}, args...)...))
	}
	m := &t.Meta
	if m.Unended {
		out = append(out, fmt.Errorf("%s: %w", t.Dir, ErrUnended))
	}
	if t.metaCut {
		add(ErrIncomplete, "the metadata is cut short after line %d (the disk was full, or the program died while writing it): what it said after that (events lost, shared objects) is not known", t.metaEnd)
	}
	if len(t.short) > 0 {
		add(ErrIncomplete, "%s empty or shorter than a stream's header (the disk was full, or the program died while writing): %s calls are missing",
			fileList(t.short), plural(uint64(len(t.short)), "that thread's", "those threads'"))
	}
	t.mu.Lock()
	cut := slices.Clone(t.cut)
	t.mu.Unlock()
	slices.Sort(cut)
	cut = slices.Compact(cut) // read more than once
	if len(cut) > 0 {
		add(ErrIncomplete, "%s cut short: a partial last record, or zeros where records were to go (the disk was full, or the program or the system died while writing): read up to there",
			fileList(cut))
	}
	if m.Dropped > 0 {
		add(ErrLost, "%d %s dropped: traced calls made while the tracer itself ran on their thread (from a signal handler), or on a thread whose buffer could not be made",
			m.Dropped, plural(m.Dropped, "call", "calls"))
	}
	if m.LostBytes > 0 {
		add(ErrLost, "%d bytes of records could not be written (the disk was full, the file size limit was reached, or the program closed or replaced a trace file): the calls they held are missing", m.LostBytes)
	}
	if m.LostThreads > 0 {
		add(ErrLost, "%d %s records were not written: %s calls are missing",
			m.LostThreads, plural(m.LostThreads, "thread's", "threads'"), plural(m.LostThreads, "its", "their"))
	}
	if m.Overwritten > 0 {
		t.mu.Lock()
		var wrapped []string
		for name := range t.wrapped {
			wrapped = append(wrapped, name)
		}
		t.mu.Unlock()
		slices.Sort(wrapped)
		where := "each thread's calls start where its ring did"
		if len(wrapped) > 0 {
			where = "the calls of " + fileList(wrapped) + " start where the ring wrapped (a call begun before shows from its return on, or not at all)"
		}
		add(ErrWrapped, "%d bytes of earlier records overwritten (rings of %d bytes a thread): %s", m.Overwritten, m.RingBytes, where)
	}
	if len(t.schedCut) > 0 {
		add(ErrIncomplete, "%s cut short (the disk was full, or the program or the system died while writing): the times off the CPU after that are missing", fileList(t.schedCut))
	}
	if m.SchedLost > 0 {
		add(ErrLost, "%d scheduler %s lost (the kernel's ring was full before the runtime read it, or the file could not be written): some times off the CPU are missing or merged into the calls' own time",
			m.SchedLost, plural(m.SchedLost, "event", "events"))
	}
	if m.Overflow > 0 || m.Stopped > 0 {
		add(ErrLost, "%d calls not graphed: %d %s nested calls deeper than the shadow stack holds, and stopped graphing", m.Overflow, m.Stopped,
			plural(m.Stopped, "thread", "threads"))
	}
	return out
}

// plural is one when n is 1, else many.
func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fileList names the files of a warning: the first few, and how many
// more.
func fileList(names []string) string {
	const shown = 4
	s := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		s += fmt.Sprintf(" and %d more streams", len(names)-shown)
	}
	return s
}

// Beside lists the traces of the processes that started while t's was
// being written and so, finding its directory in use, traced to a
// directory beside it, DIR.PID: a program t's exec'd, say, or one run
// with the same FTRACE_OUT at the same time. Their metadata's start lies
// within t's run (both on CLOCK_MONOTONIC), or, for the program t's own
// process exec'd in its place, which leaves t where it was, after t's
// start in the same process (pid); an unreadable one is left out.
func (t *Trace) Beside() []string {
	dir := filepath.Clean(t.Dir)
	ents, _ := os.ReadDir(filepath.Dir(dir))
	prefix := filepath.Base(dir) + "."
	var out []string
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || pid == "" || strings.Trim(pid, "0123456789") != "" {
			continue // dir.old, dir.123.old: not a trace of its own
		}
		p := filepath.Join(filepath.Dir(dir), e.Name())
		var m Meta
		if _, _, err := readMeta(filepath.Join(p, abi.MetaFile), &m); err != nil {
			continue
		}
		execd := m.Pid == t.Meta.Pid && p == fmt.Sprintf("%s.%d", t.Dir, t.Meta.Pid)
		if m.MonoStart >= t.Meta.MonoStart && (m.MonoStart <= t.Meta.MonoEnd || execd) {
			out = append(out, p)
		}
	}
	return out
}

// Open opens the trace directory dir: it reads the metadata, lists
// the streams (`*.trace`), whose records a StreamReader reads
// (OpenStream), in order, in bounded memory, and indexes the scheduler
// events (`*.sched`), which it hands out among them. Anything there that is not
// a regular file is an error naming it; a stream shorter than its header
// is left out (Warnings says so). A trace whose program did not end
// through exit or _exit is read through once here, to find its last
// record's time: the end of tracing (Meta.TSCEnd); but for the streams
// of threads that ended before it, whose summaries say it.
//
// A session's directory (IsSession) of one process image opens as that
// image's; of several, it is ErrSession (OpenSession reads them all).
func Open(dir string) (*Trace, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory: a trace is the directory the traced program wrote (FTRACE_OUT)", dir)
	}
	if IsSession(dir) {
		s, err := OpenSession(dir)
		if err != nil {
			return nil, err
		}
		if len(s.Procs) > 1 {
			return nil, fmt.Errorf("%s: %w of %d processes: read it whole (OpenSession), or one of its process directories", dir, ErrSession, len(s.Procs))
		}
		return s.Procs[0], nil
	}
	t := &Trace{Dir: dir, wrapped: map[string]bool{}}
	if t.metaEnd, t.metaCut, err = readMeta(filepath.Join(dir, abi.MetaFile), &t.Meta); err != nil {
		return nil, err
	}
	if t.enums, err = readEnums(dir); err != nil {
		return nil, err
	}
	if parent := filepath.Dir(filepath.Clean(dir)); t.enums == nil && IsSession(parent) {
		// ftpatch record writes the enums of a session's programs
		// into the session's directory.
		if t.enums, err = readEnums(parent); err != nil {
			return nil, err
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	if err := t.readSched(dir, names); err != nil {
		return nil, err
	}
	if t.Meta.Prologues, err = readPrologues(dir, t.Meta.Pid); err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), abi.StreamSuffix) {
			continue // meta, and the runtime's temporary files
		}
		s, short, err := openStream(dir, e.Name())
		switch {
		case err != nil:
			return nil, err
		case short:
			t.short = append(t.short, e.Name())
			continue
		}
		t.Streams = append(t.Streams, s)
	}
	slices.SortFunc(t.Streams, func(a, b Stream) int {
		return cmp.Or(cmp.Compare(a.Pid, b.Pid), cmp.Compare(a.Tid, b.Tid), cmp.Compare(a.Name, b.Name))
	})
	t.assignSched()
	if t.Meta.Unended {
		var last uint64
		for i := range t.Streams {
			// A thread that ended before the program was killed
			// summed its stream up: its last time is there.
			if sum, ok, err := t.summaryOf(i); err != nil {
				return nil, err
			} else if ok && sum.Last != 0 {
				last = max(last, sum.Last)
				continue
			}
			err := t.EachRecord(i, func(recs []Record) {
				for _, r := range recs {
					last = max(last, r.TS)
					if o, ok := r.OffCPU(); ok {
						last = max(last, o.In) // it ran again then
					}
				}
			})
			if err != nil {
				return nil, err
			}
		}
		t.Meta.endAt(last)
	}
	return t, nil
}

// Read reads the trace directory dir whole: Open, and every stream's
// records into its Records. Its memory grows with the trace: commands
// read streams with a StreamReader instead; Read is for small traces
// and tests.
func Read(dir string) (*Trace, error) {
	t, err := Open(dir)
	if err != nil {
		return nil, err
	}
	for i := range t.Streams {
		s := &t.Streams[i]
		s.Records = make([]Record, 0, (s.Size-headerSize)/16)
		if err := t.EachRecord(i, func(recs []Record) { s.Records = append(s.Records, recs...) }); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// openFile opens a file of a trace directory for reading and returns its
// size: a regular file only, never followed through a symbolic link nor
// waited on (a FIFO), so a directory someone planted things in gets an
// error naming the file rather than a hang or a read without end.
func openFile(path string) (*os.File, int64, error) {
	f, fi, err := infile.OpenNoFollow(path)
	var nr *infile.NotRegularError
	if errors.As(err, &nr) {
		return nil, 0, fmt.Errorf("%s: %w: %s, not a regular file", path, ErrFormat, infile.Kind(nr.Mode))
	}
	if err != nil {
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// readOptional reads the small file at path whole, as openFile opens
// it: nil without an error when there is none; one larger than max bytes
// is an error wrapping tooBig that names it (the trace's enums and exit
// files, which the runtime does not write).
func readOptional(path string, max int64, tooBig error) ([]byte, error) {
	f, size, err := openFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than %d", path, tooBig, size, max)
	}
	return io.ReadAll(io.LimitReader(f, size))
}

// readMeta reads the metadata at path into m and returns its number of
// whole lines and whether a partial last line was left out (cut short:
// a partial number would be misread).
func readMeta(path string, m *Meta) (lines int, cut bool, err error) {
	f, size, err := openFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, false, fmt.Errorf("%s: no metadata: not a trace directory, or the traced program died before tracing began", path)
		}
		return 0, false, err
	}
	defer f.Close()
	if size == 0 {
		return 0, false, fmt.Errorf("%s: %w: the metadata is empty: the disk was full, or the program died while writing it", path, ErrIncomplete)
	}
	seen := map[string]bool{}
	r := bufio.NewReaderSize(io.LimitReader(f, size), maxMetaLine)
	for {
		b, err := r.ReadSlice('\n')
		if err == io.EOF {
			cut = len(b) > 0
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			return 0, false, fmt.Errorf("%s:%d: %w: a line longer than %d bytes", path, lines+1, ErrFormat, maxMetaLine)
		}
		if err != nil {
			return 0, false, err
		}
		lines++
		line := string(b[:len(b)-1])
		if strings.Trim(line, "\x00") == "" && line != "" {
			return 0, false, fmt.Errorf("%s:%d: %w: NUL bytes where text was expected (the disk was full, or the system stopped, while it was written)", path, lines, ErrIncomplete)
		}
		key, val, ok := strings.Cut(line, " ")
		if !ok {
			return 0, false, fmt.Errorf("%s:%d: %w: want `key value`", path, lines, ErrFormat)
		}
		if err := m.set(key, val); err != nil {
			return 0, false, fmt.Errorf("%s:%d: %w: %w", path, lines, ErrFormat, err)
		}
		seen[key] = true
	}
	switch {
	case m.Format == "" && cut && lines == 0:
		return 0, false, fmt.Errorf("%s: %w: the metadata is cut short in its first line: the disk was full, or the program died while writing it", path, ErrIncomplete)
	case m.Format == "":
		return 0, false, fmt.Errorf("%s: %w: no format line: not a trace's metadata", path, ErrFormat)
	}
	if m.Format != format && m.Format != format3 && m.Format != format2 {
		return 0, false, fmt.Errorf("%s: %w: format %q, want %q, %q or %q (recorded by another version of the runtime: read it with the ftpatch that built that program)", path, ErrFormat, m.Format, format, format3, format2)
	}
	// What naming and timing the records needs, written first.
	for _, k := range []string{abi.MetaKeyTracer, abi.MetaKeyTSCStart, abi.MetaKeyTSCEnd, abi.MetaKeyMonoStart, abi.MetaKeyMonoEnd} {
		if !seen[k] {
			return 0, false, fmt.Errorf("%s: %w: the metadata ends after line %d without its %s line: cut short (the disk was full, or the program died while writing it)", path, ErrIncomplete, lines, k)
		}
	}
	return lines, cut, nil
}

// set records one metadata line, key value. Keys it does not know come
// from a newer runtime: ignored.
func (m *Meta) set(key, val string) error {
	switch key {
	case abi.MetaKeyFormat:
		m.Format = val
	case abi.MetaKeyTracer:
		if val != abi.TracerFunctionName && val != abi.TracerGraphName {
			return fmt.Errorf("tracer %q, want function or function_graph", val)
		}
		m.Tracer = val
	case abi.MetaKeyClock:
		m.Clock = val
	case abi.MetaKeyExe:
		m.Exe = val
	case abi.MetaKeyCmdline:
		args, err := unescapeArgs(val)
		if err != nil {
			return fmt.Errorf("cmdline: %w", err)
		}
		m.Cmdline = args
	case abi.MetaKeyBuildID:
		m.BuildID = val
	case abi.MetaKeyConfig:
		m.Config = val
	case abi.MetaKeyGraphFuncs:
		m.GraphFuncs = val
	case abi.MetaKeyGraphNotrace:
		m.GraphNotrace = val
	case abi.MetaKeyBuffer:
		m.Buffer = val
	case abi.MetaKeyComm:
		m.Comm = val
	case abi.MetaKeySched:
		m.Sched = val
	case abi.MetaKeySchedWhy:
		m.SchedWhy = val
	case abi.MetaKeyExitCode:
		n, err := strconv.ParseUint(val, 10, 8)
		if err != nil {
			return fmt.Errorf("exit_code %q, want 0 to 255", val)
		}
		m.Exited, m.ExitCode = true, int(n)
	case abi.MetaKeyEnded: // none: a runtime that wrote meta only at the end
		switch val {
		case "0", "1":
			m.Unended = val == "0"
		default:
			return fmt.Errorf("ended %q, want 0 or 1", val)
		}
	case abi.MetaKeyModule:
		if len(m.Modules) >= maxModules {
			return fmt.Errorf("more than %d module lines, more than the runtime writes", maxModules)
		}
		md, err := parseModule(val)
		if err != nil {
			return fmt.Errorf("module: %w", err)
		}
		m.Modules = append(m.Modules, md)
	case abi.MetaKeyPid:
		n, err := strconv.Atoi(val)
		if err != nil {
			return fmt.Errorf("pid %q", val)
		}
		m.Pid = n
	case abi.MetaKeyPpid, abi.MetaKeyImage, abi.MetaKeyForked:
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return fmt.Errorf("%s %q", key, val)
		}
		switch key {
		case abi.MetaKeyPpid:
			m.Ppid = n
		case abi.MetaKeyImage:
			m.Image = n
		default:
			m.Forked = n == 1
		}
	default:
		p := m.count(key)
		if p == nil {
			if m.Usage == nil && usageKey(key) {
				m.Usage = &Usage{}
			}
			if m.Usage != nil {
				p = m.Usage.field(key)
			}
		}
		if p != nil {
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return fmt.Errorf("%s %q", key, val)
			}
			*p = n
		}
	}
	return nil
}

// unescapeArgs reads a cmdline line's value: arguments separated by one
// space, each space, backslash or unprintable byte of them written as
// \xHH.
func unescapeArgs(val string) ([]string, error) {
	args := strings.Split(val, " ")
	for i, a := range args {
		if !strings.Contains(a, `\`) {
			continue
		}
		var b []byte
		for k := 0; k < len(a); k++ {
			if a[k] != '\\' {
				b = append(b, a[k])
				continue
			}
			if k+4 > len(a) || a[k+1] != 'x' {
				return nil, fmt.Errorf("argument %d: %q is not \\xHH", i+1, a[k:])
			}
			v, err := strconv.ParseUint(a[k+2:k+4], 16, 8)
			if err != nil {
				return nil, fmt.Errorf("argument %d: %q is not \\xHH", i+1, a[k:k+4])
			}
			b = append(b, byte(v))
			k += 3
		}
		args[i] = string(b)
	}
	return args, nil
}

// count is the field of a numeric metadata key, or nil.
func (m *Meta) count(key string) *uint64 {
	switch key {
	case abi.MetaKeyBias:
		return &m.Bias
	case abi.MetaKeySchedSwitches:
		return &m.SchedSwitches
	case abi.MetaKeySchedLost:
		return &m.SchedLost
	case abi.MetaKeyTSCStart:
		return &m.TSCStart
	case abi.MetaKeyTSCEnd:
		return &m.TSCEnd
	case abi.MetaKeyTSCHz:
		return &m.TSCHz
	case abi.MetaKeyMonoStart:
		return &m.MonoStart
	case abi.MetaKeyMonoEnd:
		return &m.MonoEnd
	case abi.MetaKeySites:
		return &m.Sites
	case abi.MetaKeyEnabled:
		return &m.Enabled
	case abi.MetaKeySkipped:
		return &m.Skipped
	case abi.MetaKeyFailed:
		return &m.Failed
	case abi.MetaKeyUnsupported:
		return &m.Unsupported
	case abi.MetaKeyLiteral:
		return &m.Literal
	case abi.MetaKeyMisaligned:
		return &m.Misaligned
	case abi.MetaKeyLibcallSlots:
		return &m.Libcalls.Slots
	case abi.MetaKeyLibcallHooked:
		return &m.Libcalls.Hooked
	case abi.MetaKeyLibcallUnresolved:
		return &m.Libcalls.Unresolved
	case abi.MetaKeyLibcallFailed:
		return &m.Libcalls.Failed
	case abi.MetaKeyPrologueSites:
		return &m.PrologueSites
	case abi.MetaKeyPrologueChanged:
		return &m.PrologueChanged
	case abi.MetaKeyDropped:
		return &m.Dropped
	case abi.MetaKeyOverflow:
		return &m.Overflow
	case abi.MetaKeyStopped:
		return &m.Stopped
	case abi.MetaKeyUnwound:
		return &m.Unwound
	case abi.MetaKeyLostBytes:
		return &m.LostBytes
	case abi.MetaKeyLostThreads:
		return &m.LostThreads
	case abi.MetaKeyContexts:
		return &m.Contexts
	case abi.MetaKeyContextsLost:
		return &m.ContextsLost
	case abi.MetaKeyRecordedBytes:
		return &m.RecordedBytes
	case abi.MetaKeyModulesForgotten:
		return &m.ModulesForgotten
	case abi.MetaKeyRingBytes:
		return &m.RingBytes
	case abi.MetaKeyRingAsked:
		return &m.RingAsked
	case abi.MetaKeyOverwritten:
		return &m.Overwritten
	case abi.MetaKeySignal:
		return &m.Signal
	case abi.MetaKeyDetached:
		return &m.Detached
	}
	return nil
}
