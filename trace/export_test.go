package trace

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// What the tests outside the package (package trace_test: those that
// also need the names, the model or the views, which import trace) use
// of the package's insides and of its own tests' helpers.

// MinChunk is the smallest chunk a StreamReader reads.
const MinChunk = minChunk

// GoodMeta is goodMeta: a finished function trace's metadata.
const GoodMeta = goodMeta

// EveryKind is everyKind: records of every kind in every form.
var EveryKind = everyKind

// Stream bytes and records, as stream3, streamBytes and the *Rec
// helpers make them.
var (
	Stream3     = stream3
	StreamBytes = streamBytes
	EntryRec    = entryRec
	ExitRec     = exitRec
	SwitchRec   = switchRec
	WriteTrace  = writeTrace
)

// Work is what reading tr has cost so far: the bytes of its streams
// read, and of the contexts' records read back from where a walk kept
// them aside.
func Work(tr *Trace) int64 { return tr.BytesRead.Load() + tr.spooled.Load() }

// Spooled is the part of Work read back from where the contexts'
// records were kept aside.
func Spooled(tr *Trace) int64 { return tr.spooled.Load() }

// ContextSeed is a graph stream of a thread that runs n contexts: each
// once, a call in it (every tenth left open, to be closed when the
// thread comes back to it at the end); and the metadata of its trace.
func ContextSeed(n int) (meta string, stream []byte) {
	var recs []Record
	ts := uint64(1000)
	next := func() uint64 { ts += 7; return ts }
	recs = append(recs, entryRec(next(), 0x1000))
	for c := uint64(1); c <= uint64(n); c++ {
		recs = append(recs, switchRec(next(), c), entryRec(next(), 0x1000+0x100*(c%5)))
		if c%10 != 0 {
			recs = append(recs, exitRec(next()))
		}
		recs = append(recs, switchRec(next(), 0))
	}
	for c := uint64(10); c <= uint64(n); c += 10 {
		recs = append(recs, switchRec(next(), c), exitRec(next()), unwoundRec(next()), switchRec(next(), 0))
	}
	recs = append(recs, exitRec(next()))
	meta = strings.Replace(goodMeta, "tracer function", "tracer function_graph", 1) + "contexts " + strconv.Itoa(n) + "\n"
	return meta, stream3(7, 1, recs...)
}

// CheckTrace checks the invariants of a trace Read returned whose one
// stream was stream.
func CheckTrace(t *testing.T, tr *Trace, stream []byte) {
	t.Helper()
	m := &tr.Meta
	size := len(stream)
	if m.Format != format && m.Format != format3 && m.Format != format2 || (m.Tracer != "function" && m.Tracer != "function_graph") {
		t.Fatalf("read metadata of format %q, tracer %q", m.Format, m.Tracer)
	}
	if len(m.Modules) > maxModules {
		t.Fatalf("%d modules", len(m.Modules))
	}
	for _, md := range m.Modules {
		if md.Lo > md.Hi || md.Path == "" {
			t.Fatalf("module %+v", md)
		}
	}
	if len(tr.Streams) > 1 {
		t.Fatalf("%d streams from one file", len(tr.Streams))
	}
	for _, s := range tr.Streams {
		if 16+8*len(s.Records) > size {
			t.Fatalf("%d records from a stream of %d bytes", len(s.Records), size)
		}
		// Format 2: a timestamp of 62 bits, and no record of zeros (its
		// first word would be 0). Format 3's and 4's clock has 64 bits,
		// which a TIME sets to anything.
		if bytes.HasPrefix(stream, []byte(magic2)) {
			for _, r := range s.Records {
				if r.TS > tsMask || r.TS == 0 && r.Info == 0 && r.IP == 0 {
					t.Fatalf("record %+v", r)
				}
			}
		}
	}
	for _, w := range tr.Warnings() {
		if !strings.HasPrefix(w.Error(), tr.Dir+": ") {
			t.Fatalf("warning %q does not name %s", w, tr.Dir)
		}
	}
}
