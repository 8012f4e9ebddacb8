package trace

import (
	"bytes"
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
