// Package trace reads the trace directory the runtime writes (the one
// reader every command uses) and names the addresses in it from the
// traced executable's symbol table.
//
// A trace directory holds `meta` (key value lines) and one stream per
// thread, `<pid>-<tid>.trace`: a 16-byte header ("ftrtrec2", pid and tid
// as little-endian u32) followed by records of little-endian 64-bit
// words. Each record starts with kind << 62 | rdtsc timestamp; a Call
// goes on with the site's run-time address and the caller's return
// address (24 bytes), an Entry with the site (16 bytes); an Exit or
// Unwound is that one word, and closes the innermost open Entry.
//
// The runtime writes meta when tracing begins, saying `ended 0`, and again
// when the program ends through exit or _exit, saying `ended 1`. A program
// killed by a signal leaves the first: its trace reads, with the end of
// tracing taken from the last record, and Warnings says events are
// missing. A meta with no `ended` line comes from a runtime that wrote it
// only at the end: it is complete.
package trace

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrFormat: a file of the trace directory is not what the runtime
// writes.
var ErrFormat = errors.New("malformed trace")

// ErrUnended: the metadata is the one written while the program ran, so
// the program did not end through exit or _exit, which flush every
// thread's buffered events; what they still held is not in the trace.
var ErrUnended = errors.New("the traced program did not end through exit or _exit (killed?); events it had not flushed are lost")

// Meta is the trace's metadata.
type Meta struct {
	Format  string // "ftrt-trace 2"
	Tracer  string // "function" or "function_graph"
	Clock   string // "tsc" (rdtsc ticks) or "mono" (CLOCK_MONOTONIC ns, where the TSC is not trusted)
	Exe     string // the traced executable, as the process saw it
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
	// What the runtime did: sites in the table, enabled, skipped for
	// unexpected bytes, failed to write, not traceable yet; events dropped;
	// calls not graphed because their thread's shadow stack overflowed,
	// and such threads; graphed frames left by longjmp; bytes of records
	// the runtime could not write.
	Sites, Enabled, Skipped, Failed, Unsupported, Dropped, Overflow, Stopped, Unwound, LostBytes uint64
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
	case m.Clock == "mono":
		m.MonoEnd = m.MonoStart + (ts - m.TSCStart)
	case m.TSCEnd > m.TSCStart && m.MonoEnd >= m.MonoStart:
		m.MonoEnd = m.MonoStart + uint64(float64(ts-m.TSCStart)*float64(m.MonoEnd-m.MonoStart)/float64(m.TSCEnd-m.TSCStart))
	default:
		return // no rate to go by: the times stay as the metadata has them
	}
	m.TSCEnd = ts
}

// Nanos converts a timestamp to nanoseconds since tracing started.
func (m *Meta) Nanos(ts uint64) float64 {
	if m.TSCEnd <= m.TSCStart || ts < m.TSCStart {
		return 0
	}
	return float64(ts-m.TSCStart) * float64(m.MonoEnd-m.MonoStart) / float64(m.TSCEnd-m.TSCStart)
}

// A Record is one event of the function whose site is IP.
type Record struct {
	TS   uint64 // rdtsc
	IP   uint64 // the site's run-time address (of an Exit or Unwound: its Entry's; 0 when that was not in the stream)
	Info uint64 // Kind << 62 | the caller's return address (Call records)
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

// Context says whether the record is a context switch rather than a
// call: from here on the thread runs in the context it names (made by
// makecontext, numbered from 1; 0 is the thread's own stack), whose calls
// nest among themselves and not with other contexts'. Exits and Unwound
// records close the innermost open entry of the current context.
func (r Record) Context() (uint64, bool) {
	return r.IP &^ ctxMark, r.Kind() == Entry && r.IP&ctxMark != 0
}

// Parent is the caller's return address (Call records).
func (r Record) Parent() uint64 { return r.Info & (1<<62 - 1) }

// A Stream is one thread's events, in the order they happened.
type Stream struct {
	Pid, Tid int
	Records  []Record
}

// A Trace is a whole trace directory.
type Trace struct {
	Dir     string
	Meta    Meta
	Streams []Stream // by pid, then tid
}

const (
	format     = "ftrt-trace 2"
	headerSize = 16
	tsMask     = 1<<62 - 1
)

// Warnings are what a reader of the trace should be told along with it:
// ErrUnended (wrapped, naming the directory) when the program did not end
// through exit or _exit.
func (t *Trace) Warnings() []error {
	if t.Meta.Unended {
		return []error{fmt.Errorf("%s: %w", t.Dir, ErrUnended)}
	}
	return nil
}

// Beside lists the traces of the processes that started while t's was
// being written and so, finding its directory in use, traced to a
// directory beside it, DIR.PID: a program t's exec'd, say, or one run
// with the same FTRACE_OUT at the same time. Their metadata's start lies
// within t's run (both on CLOCK_MONOTONIC); an unreadable one is left
// out.
func (t *Trace) Beside() []string {
	paths, _ := filepath.Glob(t.Dir + ".[0-9]*")
	var out []string
	for _, p := range paths {
		if strings.Trim(strings.TrimPrefix(p, t.Dir+"."), "0123456789") != "" {
			continue // dir.old, dir.123.old: not a trace of its own
		}
		var m Meta
		if readMeta(filepath.Join(p, "meta"), &m) != nil {
			continue
		}
		if m.MonoStart >= t.Meta.MonoStart && m.MonoStart <= t.Meta.MonoEnd {
			out = append(out, p)
		}
	}
	return out
}

// Read reads the trace directory dir.
func Read(dir string) (*Trace, error) {
	t := &Trace{Dir: dir}
	if err := readMeta(filepath.Join(dir, "meta"), &t.Meta); err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.trace"))
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		s, err := readStream(p)
		if err != nil {
			return nil, err
		}
		t.Streams = append(t.Streams, s)
	}
	slices.SortFunc(t.Streams, func(a, b Stream) int {
		return cmp.Or(cmp.Compare(a.Pid, b.Pid), cmp.Compare(a.Tid, b.Tid))
	})
	if t.Meta.Unended {
		var last uint64
		for _, s := range t.Streams {
			for _, r := range s.Records {
				last = max(last, r.TS)
			}
		}
		t.Meta.endAt(last)
	}
	return t, nil
}

func readMeta(path string, m *Meta) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: no metadata: not a trace directory, or the traced program died before tracing began", path)
		}
		return err
	}
	defer f.Close()
	nums := map[string]*uint64{
		"bias": &m.Bias, "tsc_start": &m.TSCStart, "tsc_end": &m.TSCEnd, "mono_start_ns": &m.MonoStart, "mono_end_ns": &m.MonoEnd,
		"sites": &m.Sites, "enabled": &m.Enabled, "skipped": &m.Skipped, "failed": &m.Failed, "unsupported": &m.Unsupported, "dropped": &m.Dropped,
		"overflow": &m.Overflow, "stopped": &m.Stopped, "unwound": &m.Unwound, "lost_bytes": &m.LostBytes,
		"modules_forgotten": &m.ModulesForgotten,
	}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		key, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return fmt.Errorf("%s:%d: %w: want `key value`", path, line, ErrFormat)
		}
		switch key {
		case "format":
			m.Format = val
		case "tracer":
			m.Tracer = val
		case "clock":
			m.Clock = val
		case "exe":
			m.Exe = val
		case "build_id":
			m.BuildID = val
		case "config":
			m.Config = val
		case "ended": // none: a runtime that wrote meta only at the end
			switch val {
			case "0", "1":
				m.Unended = val == "0"
			default:
				return fmt.Errorf("%s:%d: %w: ended %q, want 0 or 1", path, line, ErrFormat, val)
			}
		case "module":
			md, err := parseModule(val)
			if err != nil {
				return fmt.Errorf("%s:%d: %w: module: %v", path, line, ErrFormat, err)
			}
			m.Modules = append(m.Modules, md)
		case "pid":
			n, err := strconv.Atoi(val)
			if err != nil {
				return fmt.Errorf("%s:%d: %w: pid %q", path, line, ErrFormat, val)
			}
			m.Pid = n
		default:
			if p, ok := nums[key]; ok {
				n, err := strconv.ParseUint(val, 10, 64)
				if err != nil {
					return fmt.Errorf("%s:%d: %w: %s %q", path, line, ErrFormat, key, val)
				}
				*p = n
			}
			// Other keys: from a newer runtime; ignored.
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if m.Format != format {
		return fmt.Errorf("%s: %w: format %q, want %q (recorded by another version of the runtime: read it with the ftpatch that built that program)", path, ErrFormat, m.Format, format)
	}
	return nil
}

func readStream(path string) (Stream, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stream{}, err
	}
	if len(b) < headerSize || !bytes.Equal(b[:8], []byte("ftrtrec2")) {
		return Stream{}, fmt.Errorf("%s: %w: no stream header", path, ErrFormat)
	}
	le := binary.LittleEndian
	s := Stream{Pid: int(le.Uint32(b[8:])), Tid: int(le.Uint32(b[12:]))}
	body := b[headerSize:]
	s.Records = make([]Record, 0, len(body)/16)
	open := map[uint64][]uint64{} // per context: the sites of the entries not yet closed
	var ctx uint64
	// A process killed mid-write can leave a partial last record: it is
	// dropped, not misread.
	for off := 0; off+8 <= len(body); {
		w0 := le.Uint64(body[off:])
		r := Record{TS: w0 & tsMask, Info: w0 &^ tsMask}
		switch r.Kind() {
		case Call:
			if off+24 > len(body) {
				return s, nil
			}
			r.IP = le.Uint64(body[off+8:])
			r.Info |= le.Uint64(body[off+16:]) & tsMask
			off += 24
		case Entry:
			if off+16 > len(body) {
				return s, nil
			}
			r.IP = le.Uint64(body[off+8:])
			if id, ok := r.Context(); ok {
				ctx = id
			} else {
				open[ctx] = append(open[ctx], r.IP)
			}
			off += 16
		default:
			if n := len(open[ctx]); n > 0 {
				r.IP = open[ctx][n-1]
				open[ctx] = open[ctx][:n-1]
			}
			off += 8
		}
		s.Records = append(s.Records, r)
	}
	return s, nil
}
