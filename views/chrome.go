package views

import (
	"bufio"
	"bytes"
	"encoding/json"
	"ftpatch/internal/escape"
	"ftpatch/ordered"
	"ftpatch/trace"
	"io"
	"math"
	"strconv"
)

// contextTidBase: a context's calls show as a thread of their own whose
// tid is Context × contextTidBase + the thread's tid, above any real tid
// (Linux's pid_max is at most 2^22).
const contextTidBase = 1 << 22

// Chrome writes the trace as Chrome's trace-event JSON, which the
// Perfetto UI (https://ui.perfetto.dev) and chrome://tracing open: one
// object,
//
//	{"displayTimeUnit":"ns","otherData":{...},"traceEvents":[...]}
//
// whose events are, for a function_graph trace, a complete event per call
// ("ph":"X", its name, "ts" and "dur" in µs to the ns, pid, tid, "cat"
// the tracer), with "args" saying {"unwound":true} of a call left
// without returning and {"open":true} of one still running when the
// trace ended (its end is then the thread's last event); for a function
// trace, an instant event per call ("ph":"i", "s":"t"). Metadata events
// name each process (the program) and each thread ("thread 123"), and
// sort the threads in the order read. A makecontext context's calls form
// a thread of their own, named "thread 123 context 2", whose tid is
// contextTidBase × 2 + 123, so that the UIs, which nest one thread's
// events by time, never mix a context's calls with its thread's.
//
// Events are written as their calls end, so a caller's event follows its
// callees' (the UIs order them by time); nothing but the open calls of
// the thread being read is held.
func Chrome(w io.Writer, in Input) error {
	m := in.Meta
	bw := bufio.NewWriterSize(w, 64<<10)
	c := chromeWriter{w: bw, names: map[string][]byte{}}
	c.w.WriteString(`{"displayTimeUnit":"ns","otherData":{"exporter":"ftpatch","program":`)
	c.w.Write(c.quote(m.Exe))
	c.w.WriteString(`,"build_id":`)
	c.w.Write(c.quote(m.BuildID))
	c.w.WriteString(`,"pid":`)
	c.w.WriteString(strconv.Itoa(m.Pid))
	c.w.WriteString(`,"tracer":`)
	c.w.Write(c.quote(m.Tracer))
	c.w.WriteString(`,"clock":`)
	c.w.Write(c.quote(m.Clock))
	c.w.WriteString(`},"traceEvents":[`)

	// Each thread's events are written on a core of their own, in the
	// threads' order (ordered.Write); what a thread's events depend on of
	// the threads before it (whether its process was named yet, its
	// place) is settled here, as they are taken in order.
	type part struct {
		th         Thread
		order      int
		newProcess bool
	}
	parts := func(yield func(part) bool) {
		lastPid, order := 0, 0
		for th := range in.Threads {
			p := part{th: th, order: order, newProcess: order == 0 || th.Pid != lastPid}
			lastPid = th.Pid
			order++
			if !yield(p) {
				return
			}
		}
	}
	err := ordered.Write(bw, parts, workers(in), func(p part, out *bufio.Writer) error {
		c := chromeWriter{w: out, names: map[string][]byte{}, n: min(p.order, 1)} // every event but the first after a comma
		th := p.th
		cat := c.quote(m.Tracer)
		pid, tid := th.Pid, th.Tid+int(th.Context)*contextTidBase
		if p.newProcess {
			c.meta(c.quote("process_name"), pid, pid, `"name":`, c.quote(processName(in, pid)))
			if pm := in.Procs[pid]; pm != nil && in.Procs[pm.Ppid] != nil {
				c.meta(c.quote("process_labels"), pid, pid, `"labels":`, c.quote("parent "+strconv.Itoa(pm.Ppid)))
			}
		}
		c.meta(c.quote("thread_name"), pid, tid, `"name":`, c.quote(threadName(th)))
		c.meta(c.quote("thread_sort_index"), pid, tid, `"sort_index":`, strconv.AppendInt(nil, int64(p.order), 10))
		return spans(th, c.w, nil,
			func(fn string, start, end float64, note string) {
				args := ""
				if note != "" {
					args = `{"` + note + `":true}`
				}
				c.event(c.quote(fn), cat, `"X"`, pid, tid, start, end, args)
			},
			func(fn string, ns float64) { c.event(c.quote(fn), cat, `"i","s":"t"`, pid, tid, ns, -1, "") },
			func(why trace.OffReason, start, end float64) {
				c.event(c.quote(why.String()), c.quote("sched"), `"X"`, pid, tid, start, end, "")
			})
	})
	if err != nil {
		return err
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// A chromeWriter writes trace events, comma-separated.
type chromeWriter struct {
	w     *bufio.Writer
	n     int               // events written
	names map[string][]byte // JSON strings of the names seen, each quoted once
	buf   []byte
}

// quote returns s as a JSON string, quoted once per distinct s, escaped
// first (package escape): JSON would leave DEL and C1 controls raw.
func (c *chromeWriter) quote(s string) []byte {
	if q, ok := c.names[s]; ok {
		return q
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(escape.Text(s)) // a string always encodes
	q := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	c.names[s] = q
	return q
}

// start begins an event object.
func (c *chromeWriter) start() {
	if c.n > 0 {
		c.buf = append(c.buf, ',')
	}
	c.n++
	c.buf = append(c.buf, "\n{"...)
}

// meta writes a metadata event ("ph":"M") of the thread pid, tid whose
// args hold one key (written `"key":`) and its JSON value.
func (c *chromeWriter) meta(name []byte, pid, tid int, key string, val []byte) {
	c.buf = c.buf[:0]
	c.start()
	c.buf = append(c.buf, `"name":`...)
	c.buf = append(c.buf, name...)
	c.buf = append(c.buf, `,"ph":"M","pid":`...)
	c.buf = strconv.AppendInt(c.buf, int64(pid), 10)
	c.buf = append(c.buf, `,"tid":`...)
	c.buf = strconv.AppendInt(c.buf, int64(tid), 10)
	c.buf = append(c.buf, `,"args":{`...)
	c.buf = append(c.buf, key...)
	c.buf = append(c.buf, val...)
	c.buf = append(c.buf, "}}"...)
	c.w.Write(c.buf)
}

// event writes a trace event: its name, category and phase (written as
// the JSON after `"ph":`), thread, start and, when end is not negative,
// its duration; args, when not empty, is its args object. Times are
// rounded to the ns before the duration is taken, so a callee's event
// ends within its caller's as its call did.
func (c *chromeWriter) event(name, cat []byte, ph string, pid, tid int, start, end float64, args string) {
	c.buf = c.buf[:0]
	c.start()
	c.buf = append(c.buf, `"name":`...)
	c.buf = append(c.buf, name...)
	c.buf = append(c.buf, `,"cat":`...)
	c.buf = append(c.buf, cat...)
	c.buf = append(c.buf, `,"ph":`...)
	c.buf = append(c.buf, ph...)
	from := roundNS(start)
	c.buf = append(c.buf, `,"ts":`...)
	c.buf = appendMicros(c.buf, from)
	if end >= 0 {
		c.buf = append(c.buf, `,"dur":`...)
		c.buf = appendMicros(c.buf, roundNS(end)-from)
	}
	c.buf = append(c.buf, `,"pid":`...)
	c.buf = strconv.AppendInt(c.buf, int64(pid), 10)
	c.buf = append(c.buf, `,"tid":`...)
	c.buf = strconv.AppendInt(c.buf, int64(tid), 10)
	if args != "" {
		c.buf = append(c.buf, `,"args":`...)
		c.buf = append(c.buf, args...)
	}
	c.buf = append(c.buf, '}')
	c.w.Write(c.buf)
}

// roundNS rounds a time to the ns (never below 0).
func roundNS(ns float64) int64 { return int64(math.Round(max(ns, 0))) }

// appendMicros appends ns as µs with three decimals: 1234567 → 1234.567.
func appendMicros(b []byte, ns int64) []byte {
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}
