package viewcheck

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestChromeRejects: what a viewer would show wrong is an error: a
// callee outside its caller, an event on a thread not named, times
// finer than the ns.
func TestChromeRejects(t *testing.T) {
	head := `{"displayTimeUnit":"ns","otherData":{"exporter":"ftpatch"},"traceEvents":[
{"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":"p"}},
{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"thread 1"}}`
	for _, c := range []struct{ name, events, err string }{
		{"nested", `,{"name":"b","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1},{"name":"a","ph":"X","ts":0.500,"dur":2.000,"pid":1,"tid":1}`, ""},
		{"overlap", `,{"name":"b","ph":"X","ts":1.000,"dur":5.000,"pid":1,"tid":1},{"name":"a","ph":"X","ts":0.500,"dur":2.000,"pid":1,"tid":1}`, "without nesting"},
		{"unnamed thread", `,{"name":"a","ph":"X","ts":0.500,"dur":2.000,"pid":1,"tid":2}`, "not named"},
		{"sub-ns", `,{"name":"a","ph":"X","ts":0.5001,"dur":2.000,"pid":1,"tid":1}`, "not µs to the ns"},
		{"asleep in a call", `,{"name":"sleeping","cat":"sched","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1},{"name":"a","ph":"X","ts":0.500,"dur":2.000,"pid":1,"tid":1}`, ""},
		{"asleep across a call's end", `,{"name":"sleeping","cat":"sched","ph":"X","ts":1.000,"dur":5.000,"pid":1,"tid":1},{"name":"a","ph":"X","ts":0.500,"dur":2.000,"pid":1,"tid":1}`, "without nesting"},
		{"off the CPU for no reason", `,{"name":"napping","cat":"sched","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1}`, "a time off the CPU as"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Chrome([]byte(head + c.events + "]}"))
			if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}

// TestPerfettoRejects: a field not in the schema, or a name used before
// it is interned, is an error.
func TestPerfettoRejects(t *testing.T) {
	packet := func(fields ...[]byte) []byte {
		var p []byte
		for _, f := range fields {
			p = append(p, f...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, tracePacket, protowire.BytesType), p)
	}
	varint := func(n protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, n, protowire.VarintType), v)
	}
	if _, err := Perfetto(packet(varint(packetTrustedSequenceID, 1), varint(99, 1))); err == nil || !strings.Contains(err.Error(), "field 99") {
		t.Errorf("an unknown field: %v", err)
	}
	if _, err := Perfetto(packet(varint(packetTrustedSequenceID, 2), varint(packetSequenceFlags, seqNeedsIncrementalState), varint(packetTimestamp, 1))); err == nil {
		t.Error("a packet needing state its sequence never set read as fine")
	}
}
