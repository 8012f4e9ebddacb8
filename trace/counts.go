package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"
	"path/filepath"

	"ftpatch/runtime/abi"
)

// A Summary is what a stream's SUMMARY record says of it (format 4,
// package abi's Sum*): the records of each kind the runtime wrote to it,
// counted as it wrote them, the times of its first and last, and its
// thread's name.
type Summary struct {
	Calls, Entries, Exits, Unwound uint64 // CALL, ENTRY, EXIT and UNWOUND records (long forms included)
	// First is the time of the stream's first record, Last the stream's
	// clock at its end (the last record's time): 0 when not known.
	First, Last uint64
	// Counted says the counts are the stream's own: false under the
	// flight recorder (its ring overwrote records), when records were
	// lost, or when the thread ran in makecontext contexts, whose calls
	// nest apart. The name holds either way.
	Counted bool
	Name    string // the thread's name when its stream ended ("" when it could not be read)
}

// summaryOf reads the SUMMARY record that ends stream i, if it has one:
// one whose last word repeats its first and whose position word says it
// starts where it does. ok is false for a stream without one (its
// program was killed, a format before 4).
func (t *Trace) summaryOf(i int) (sum Summary, ok bool, err error) {
	s := &t.Streams[i]
	if s.format < 4 || s.Size < headerSize+8*abi.SumWords {
		return Summary{}, false, nil
	}
	path := filepath.Join(t.Dir, s.Name)
	f, _, err := openFile(path)
	if err != nil {
		return Summary{}, false, err
	}
	defer f.Close()
	le := binary.LittleEndian
	var end [8]byte
	if _, err := f.ReadAt(end[:], s.Size-8); err != nil {
		return Summary{}, false, fmt.Errorf("%s: %w", path, err)
	}
	w0 := le.Uint64(end[:])
	words := 1 + int64(w0&abi.ArgWordsMask)
	if w0>>abi.RecKindShift != abi.RecExt || w0>>abi.RecExtBits&(1<<abi.RecExtSubBits-1) != abi.ExtSummary ||
		words < abi.SumWords || s.Size-headerSize < 8*words || (s.Size-headerSize)%8 != 0 {
		return Summary{}, false, nil
	}
	b := make([]byte, 8*words)
	if _, err := f.ReadAt(b, s.Size-8*words); err != nil {
		return Summary{}, false, fmt.Errorf("%s: %w", path, err)
	}
	w := func(k int64) uint64 { return le.Uint64(b[8*k:]) }
	if w(0) != w0 || w(words-2) != uint64((s.Size-headerSize)/8-words) {
		return Summary{}, false, nil // words that look like one, in a stream that does not end with one
	}
	name := b[8*abi.SumName : 8*abi.SumName+abi.SumNameBytes]
	if k := bytes.IndexByte(name, 0); k >= 0 {
		name = name[:k]
	}
	return Summary{
		Calls: w(abi.SumCalls), Entries: w(abi.SumEntries), Exits: w(abi.SumExits), Unwound: w(abi.SumUnwound),
		First: w(abi.SumFirst), Last: w(abi.SumLast),
		Counted: w(abi.SumFlags)&abi.SumCounted != 0 && w(abi.SumExits)+w(abi.SumUnwound) <= w(abi.SumEntries),
		Name:    string(name),
	}, true, nil
}

// ThreadCounts are one thread's calls in the trace, counted, or those it
// ran in one makecontext context (Context != 0): what info shows of each.
type ThreadCounts struct {
	Pid, Tid int
	Context  uint64
	Name     string // the thread's name when its stream ended ("": not recorded)
	Calls    uint64 // calls begun: graphed ones, and the function tracer's
	Unwound  uint64 // graphed calls left without returning (longjmp, an exception)
	Open     uint64 // graphed calls still running when the thread's trace ended
	// First and Last are the times (ns since tracing started) of the
	// first event and the last: a call's beginning or end. Meaningful
	// when Calls > 0.
	First, Last float64
	// Summed says the counts came from the stream's summary, not from
	// reading its records.
	Summed bool
}

// Counts yields each thread's ThreadCounts, in the order Threads yields
// the threads: from its stream's summary when the stream has one that
// counts it all (format 4, a thread that ended through its exit or the
// program's), else by reading the stream's records. The two give the
// same counts; but for a call FTRACE_THRESH took back at the very end of
// the stream, after a long gap, where the summary's Last is that call's
// time. A stream that cannot be read ends the sequence; its error is
// *err.
func (t *Trace) Counts(err *error) iter.Seq[ThreadCounts] {
	return func(yield func(ThreadCounts) bool) {
		for i := range t.Streams {
			s := &t.Streams[i]
			sum, ok, e := t.summaryOf(i)
			if e != nil {
				*err = e
				return
			}
			if ok && sum.Counted {
				c := ThreadCounts{Pid: s.Pid, Tid: s.Tid, Name: sum.Name, Calls: sum.Calls + sum.Entries, Unwound: sum.Unwound,
					Open: sum.Entries - sum.Exits - sum.Unwound, Summed: true}
				if c.Calls > 0 {
					c.First, c.Last = t.Meta.Nanos(sum.First), t.Meta.Nanos(sum.Last)
				}
				if !yield(c) {
					return
				}
				continue
			}
			more := t.streamThreads(i, noNames{}, &Filter{}, func(e error) {
				if e != nil && *err == nil {
					*err = e
				}
			}, func(th ThreadCalls) bool {
				c := CountEvents(th)
				c.Name = sum.Name
				return yield(c)
			})
			if !more || *err != nil {
				return
			}
		}
	}
}

// CountEvents counts a thread's events (reading them through).
func CountEvents(th ThreadCalls) ThreadCounts {
	c := ThreadCounts{Pid: th.Pid, Tid: th.Tid, Context: th.Context}
	seen := false
	offEnd := -1.0 // the end of the last time off the CPU
	for ev := range th.Events {
		if ev.Kind == CallOff {
			offEnd = ev.End // not a record of the stream's
			continue
		}
		if !seen {
			c.First, seen = ev.NS, true
		}
		// A call still running when the thread's last time off the CPU
		// ended is closed there: the stream's last record is earlier.
		if ev.Kind != CallOpen || ev.NS != offEnd {
			c.Last = ev.NS
		}
		switch ev.Kind {
		case CallEnter, CallOnly:
			c.Calls++
		case CallUnwound:
			c.Unwound++
		case CallOpen:
			c.Open++
		}
	}
	return c
}

// noNames names no address: for walks that count calls and need not
// say whose they are.
type noNames struct{}

func (noNames) Namer() Namer                  { return noNames{} }
func (noNames) FuncAt(addr, ts uint64) string { return "" }
func (noNames) NameAt(addr, ts uint64) string { return "" }
func (noNames) SourceAt(uint64, uint64) string {
	return ""
}
