package trace

// Scheduler events: when each traced thread left the CPU and ran again,
// as the kernel's context-switch records gave them to the runtime
// (FTRACE_SCHED=1). The runtime writes a process's into "<pid>.sched"
// beside its streams (package abi's Sched*): a header, then chunks, each
// one thread's events from one read of the kernel's ring, in time order.
// Open indexes each file's chunks by thread (their offsets, not their
// events); a thread's StreamReader reads its chunks as it goes and hands
// each time off the CPU out among the thread's records, in time order,
// as a Record of its own (OffCPU), so every walk sees it between the
// calls around it.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"ftpatch/runtime/abi"
)

// schedMark marks a time off the CPU: an Entry whose site word has
// ctxMark and schedMark set, the reason in its low bits and the time the
// thread ran again in its Info (OffCPU).
const schedMark = 1 << 62

// An OffReason says why a thread was off the CPU.
type OffReason uint8

// The reasons.
const (
	Sleeping  OffReason = abi.SchedSleep   // it blocked: a sleep, I/O, a lock, a wait
	Preempted OffReason = abi.SchedPreempt // it could have run: pre-empted (or it yielded)
)

// String names the reason as the views do: "sleeping", "pre-empted".
func (o OffReason) String() string {
	switch o {
	case Sleeping:
		return "sleeping"
	case Preempted:
		return "pre-empted"
	}
	return "reason(" + strconv.Itoa(int(o)) + ")"
}

// An OffCPU is a time a thread spent off the CPU: it left at Out and ran
// again at In (the trace's clock; In is 0 when it had not run again when
// the trace ended), for Why.
type OffCPU struct {
	Out, In uint64
	Why     OffReason
}

// OffCPU says whether the record is a time off the CPU rather than a
// call, and which.
func (r Record) OffCPU() (OffCPU, bool) {
	if r.Kind() != Entry || r.IP&(ctxMark|schedMark) != ctxMark|schedMark {
		return OffCPU{}, false
	}
	return OffCPU{Out: r.TS, In: r.Parent(), Why: OffReason(r.IP & 3)}, true
}

// OffCPURecord is the Record of o, for those who write records (tests,
// synthetic traces).
func OffCPURecord(o OffCPU) Record {
	return Record{TS: o.Out, IP: ctxMark | schedMark | uint64(o.Why), Info: uint64(Entry)<<62 | o.In&tsMask}
}

// A schedChunk is where one chunk of a thread's events lies in its
// process's file: the offset of its first event, and their count.
type schedChunk struct {
	off int64
	n   uint32
}

// A schedThread is a thread's events: its process's file and the chunks
// of it that are the thread's, in order.
type schedThread struct {
	path   string
	chunks []schedChunk
}

// schedKey names a thread of a trace directory: a forked child's streams
// may lie beside its parent's.
type schedKey struct{ pid, tid int }

// readSched indexes the scheduler events' files of dir (names: its
// entries) into t.sched. A file cut short (a partial chunk) is read up to
// there, and Warnings says so; one that is not what the runtime writes is
// an error naming it.
func (t *Trace) readSched(dir string, names []string) error {
	for _, name := range names {
		if !strings.HasSuffix(name, abi.SchedSuffix) {
			continue
		}
		path := filepath.Join(dir, name)
		cut, err := t.indexSched(path)
		if err != nil {
			return err
		}
		if cut {
			t.schedCut = append(t.schedCut, name)
		}
	}
	return nil
}

// indexSched indexes the file at path; cut: it ends in a partial chunk.
func (t *Trace) indexSched(path string) (cut bool, err error) {
	f, size, err := openFile(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var hdr [abi.SchedHeader]byte
	if n, err := io.ReadFull(br, hdr[:min(int64(len(hdr)), size)]); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	} else if n < len(hdr) {
		if string(hdr[:n]) == abi.SchedMagic[:min(n, len(abi.SchedMagic))] {
			return true, nil // cut in its header: nothing in it
		}
		return false, fmt.Errorf("%s: %w: not a scheduler events file", path, ErrFormat)
	}
	if string(hdr[:8]) != abi.SchedMagic {
		return false, fmt.Errorf("%s: %w: not a scheduler events file (header %q, want %q)", path, ErrFormat, hdr[:8], abi.SchedMagic)
	}
	pid := int(binary.LittleEndian.Uint32(hdr[8:]))
	if t.sched == nil {
		t.sched = map[schedKey]*schedThread{}
	}
	var w [8]byte
	for off := int64(abi.SchedHeader); off < size; {
		if size-off < 8 {
			return true, nil
		}
		if _, err := io.ReadFull(br, w[:]); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		word := binary.LittleEndian.Uint64(w[:])
		tid, n := int(uint32(word)), uint32(word>>32)
		if word == 0 {
			return true, nil // zeros where chunks were to go: a crashed system's
		}
		if tid == 0 || n == 0 {
			return false, fmt.Errorf("%s: offset %d: %w: a chunk of %d events of thread %d", path, off, ErrFormat, n, tid)
		}
		off += 8
		if size-off < int64(n)*8 {
			return true, nil
		}
		k := schedKey{pid, tid}
		th := t.sched[k]
		if th == nil {
			th = &schedThread{path: path}
			t.sched[k] = th
		}
		th.chunks = append(th.chunks, schedChunk{off: off, n: n})
		if _, err := br.Discard(int(n) * 8); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		off += int64(n) * 8
	}
	return false, nil
}

// A schedCursor reads one thread's events, chunk after chunk, pairing
// each departure with the return that follows it.
type schedCursor struct {
	f      *os.File
	path   string
	chunks []schedChunk
	buf    []byte
	words  []byte // of buf: events read, not taken yet
	left   uint32 // events of the current chunk not read yet
	off    int64  // the file offset of the next of them
	out    uint64 // the pending departure's time (0: none)
	why    OffReason
}

// openSched opens the events of the thread of stream s, or nil when it
// has none.
func (t *Trace) openSched(s *Stream) (*schedCursor, error) {
	th := t.sched[schedKey{s.Pid, s.Tid}]
	if th == nil || t.schedFirst[schedKey{s.Pid, s.Tid}] != s.Name {
		return nil, nil
	}
	f, _, err := openFile(th.path)
	if err != nil {
		return nil, err
	}
	return &schedCursor{f: f, path: th.path, chunks: th.chunks, buf: make([]byte, 32<<10)}, nil
}

// close closes the cursor's file.
func (c *schedCursor) close() {
	if c != nil {
		c.f.Close()
	}
}

// event reads the next event: its time and kind; ok false at the end.
func (c *schedCursor) event() (ts uint64, kind uint8, ok bool, err error) {
	if len(c.words) == 0 {
		for c.left == 0 {
			if len(c.chunks) == 0 {
				return 0, 0, false, nil
			}
			c.left, c.off = c.chunks[0].n, c.chunks[0].off
			c.chunks = c.chunks[1:]
		}
		n := min(int(c.left), len(c.buf)/8)
		if _, err := c.f.ReadAt(c.buf[:n*8], c.off); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the file shrank since it was indexed
			}
			return 0, 0, false, fmt.Errorf("%s: offset %d: %w", c.path, c.off, err)
		}
		c.words = c.buf[:n*8]
		c.left -= uint32(n)
		c.off += int64(n) * 8
	}
	w := binary.LittleEndian.Uint64(c.words)
	c.words = c.words[8:]
	return w >> abi.SchedKindBits, uint8(w & (1<<abi.SchedKindBits - 1)), true, nil
}

// next is the thread's next time off the CPU; ok false after the last.
// A departure whose return was lost (the kernel's ring was full) is
// dropped when the next departure comes; one still pending at the end
// is a time off the CPU that lasted until the trace ended (In 0).
func (c *schedCursor) next() (o OffCPU, ok bool, err error) {
	for {
		ts, kind, more, err := c.event()
		if err != nil {
			return OffCPU{}, false, err
		}
		if !more {
			if c.out != 0 {
				o = OffCPU{Out: c.out, Why: c.why}
				c.out = 0
				return o, true, nil
			}
			return OffCPU{}, false, nil
		}
		switch kind {
		case abi.SchedSleep, abi.SchedPreempt:
			c.out, c.why = ts, OffReason(kind)
		case abi.SchedIn:
			if c.out != 0 && ts >= c.out {
				o = OffCPU{Out: c.out, In: ts, Why: c.why}
				c.out = 0
				return o, true, nil
			}
			c.out = 0
		default:
			return OffCPU{}, false, fmt.Errorf("%s: %w: an event of kind %d", c.path, ErrFormat, kind)
		}
	}
}

// HasSched says whether the trace recorded scheduler events (its
// metadata says so, or it holds some).
func (t *Trace) HasSched() bool {
	return t.Meta.Sched == abi.SchedOn || len(t.sched) > 0
}

// assignSched gives each thread's events to its first stream: a thread
// whose stream was made anew (its file lost) has several, and its events
// go with the first, where they merge by time.
func (t *Trace) assignSched() {
	if len(t.sched) == 0 {
		return
	}
	t.schedFirst = map[schedKey]string{}
	for i := range t.Streams {
		s := &t.Streams[i]
		k := schedKey{s.Pid, s.Tid}
		if _, ok := t.schedFirst[k]; !ok && t.sched[k] != nil {
			t.schedFirst[k] = s.Name
		}
	}
}

// OffEnd is when the thread ran again after o, ns since tracing began:
// the trace's end for one that lasted until then (In 0).
func (m *Meta) OffEnd(o OffCPU) float64 {
	switch {
	case o.In != 0:
		return m.Nanos(o.In)
	case m.TSCEnd > o.Out:
		return m.Nanos(m.TSCEnd)
	}
	return m.Nanos(o.Out)
}

// lastNS is the time of the thread's last event as of r, ns: r's, or a
// time off the CPU's end.
func (m *Meta) lastNS(r *Record) float64 {
	if o, ok := r.OffCPU(); ok {
		return m.OffEnd(o)
	}
	return m.Nanos(r.TS)
}
