package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ftpatch/runtime/abi"
)

// encoder writes records in format 3 as the runtime does (record/encode.h's
// stamp and record_*): the short form where the delta and the site fit,
// else the long form; a TIME first where the delta would not fit even
// that, where the clock went back, and at the stream's start (last 0).
type encoder struct {
	b    []byte
	last uint64
}

// put appends the words of one record (w0 first).
func (e *encoder) put(w ...uint64) {
	for _, x := range w {
		e.b = binary.LittleEndian.AppendUint64(e.b, x)
	}
}

// record appends r: a Call, an Entry (a context switch when r.Context
// says so), an Exit or an Unwound (their IP not written).
func (e *encoder) record(r Record) {
	max := uint64(1<<abi.RecExtBits - 1)
	if r.Kind() == Exit {
		max = 1<<abi.RecExitBits - 1
	}
	if e.last == 0 || r.TS < e.last || r.TS-e.last > max {
		e.put(abi.RecExt<<abi.RecKindShift|abi.ExtTime<<abi.RecExtBits, r.TS)
		e.last = r.TS
	}
	d := r.TS - e.last
	e.last = r.TS
	short := d < 1<<abi.RecDeltaBits && r.IP < 1<<abi.RecSiteBits
	ext := func(sub, d uint64) uint64 { return abi.RecExt<<abi.RecKindShift | sub<<abi.RecExtBits | d }
	switch id, sw := r.Context(); {
	case sw:
		e.put(ext(abi.ExtContext, d), id)
	case r.Kind() == Call && short:
		e.put(abi.RecCall<<abi.RecKindShift|d<<abi.RecSiteBits|r.IP, r.Parent())
	case r.Kind() == Call:
		e.put(ext(abi.ExtLongCall, d), r.IP, r.Parent())
	case r.Kind() == Entry && short:
		e.put(abi.RecEntry<<abi.RecKindShift | d<<abi.RecSiteBits | r.IP)
	case r.Kind() == Entry:
		e.put(ext(abi.ExtLongEntry, d), r.IP)
	case r.Kind() == Exit:
		e.put(abi.RecExit<<abi.RecKindShift | d)
	case r.Kind() == Unwound:
		e.put(ext(abi.ExtUnwound, d))
	}
}

// stream3 is a format 3 stream file: its header (pid, tid) and recs.
func stream3(pid, tid int, recs ...Record) []byte {
	le := binary.LittleEndian
	e := &encoder{b: append([]byte(magic3), le.AppendUint32(le.AppendUint32(nil, uint32(pid)), uint32(tid))...)}
	for _, r := range recs {
		e.record(r)
	}
	return e.b
}

// Records of each kind, for the tests.
func callRec(ts, ip, parent uint64) Record {
	return Record{TS: ts, IP: ip, Info: uint64(Call)<<62 | parent}
}
func entryRec(ts, ip uint64) Record { return Record{TS: ts, IP: ip, Info: uint64(Entry) << 62} }
func exitRec(ts uint64) Record      { return Record{TS: ts, Info: uint64(Exit) << 62} }
func unwoundRec(ts uint64) Record   { return Record{TS: ts, Info: uint64(Unwound) << 62} }
func switchRec(ts, id uint64) Record {
	return Record{TS: ts, IP: ctxMark | id, Info: uint64(Entry) << 62}
}

// writeTrace writes a trace directory of meta and the streams (file
// name: bytes) into a new temporary directory, and returns it.
func writeTrace(t *testing.T, meta string, streams map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "meta"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, b := range streams {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// words is the little-endian bytes of w.
func words(w ...uint64) []byte {
	var b []byte
	for _, x := range w {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

// decodeAll decodes b whole with d, out records at a time, carrying a
// partial record over as a reader of chunks does; it fails t on an error
// or on bytes left over.
func decodeAll(t *testing.T, d *decoder, b []byte, out int) []Record {
	t.Helper()
	var got []Record
	buf := make([]Record, out)
	for len(b) > 0 {
		n, used, err := d.decode(b, buf)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if n == 0 && used == 0 {
			t.Fatalf("%d bytes left undecoded: % x", len(b), b)
		}
		got = append(got, buf[:n]...)
		b = b[used:]
	}
	return got
}

// TestDecode3: each kind of format 3 record, packed by hand (not by the
// encoder the other tests use, so a mistake shared by both shows here),
// decodes to its event at the clock's time; the fields' widest values
// included.
func TestDecode3(t *testing.T) {
	const time = 3<<62 | 1<<58
	for _, c := range []struct {
		name  string
		words []uint64
		want  []Record
	}{
		{"time alone", []uint64{time, 1000}, nil},
		{"call", []uint64{time, 1000, 7<<47 | 0x401000, 0x402000}, []Record{callRec(1007, 0x401000, 0x402000)}},
		{"call, widest fields", []uint64{time, 1000, (1<<15-1)<<47 | (1<<47 - 1), 1<<62 - 1}, []Record{callRec(1000+1<<15-1, 1<<47-1, 1<<62-1)}},
		{"entry and exit", []uint64{time, 1000, 1<<62 | 3<<47 | 0x401000, 2<<62 | 40}, []Record{entryRec(1003, 0x401000), exitRec(1043)}},
		{"exit, widest delta", []uint64{time, 1, 2<<62 | (1<<62 - 1)}, []Record{exitRec(1 << 62)}},
		{"unwound", []uint64{time, 1000, 1<<62 | 0x401000, 3<<62 | 0<<58 | 5}, []Record{entryRec(1000, 0x401000), unwoundRec(1005)}},
		{"context", []uint64{time, 1000, 3<<62 | 2<<58 | 9, 4}, []Record{switchRec(1009, 4)}},
		{"context 0", []uint64{time, 1000, 3<<62 | 2<<58, 0}, []Record{switchRec(1000, 0)}},
		{"long entry", []uint64{time, 1000, 3<<62 | 3<<58 | (1<<58 - 1), 1 << 47}, []Record{entryRec(1000+1<<58-1, 1<<47)}},
		{"long call", []uint64{time, 1000, 3<<62 | 4<<58 | 1<<20, 0x7fff_ffff_f000, 0x402000}, []Record{callRec(1000+1<<20, 0x7fff_ffff_f000, 0x402000)}},
		{"time going back", []uint64{time, 1000, 2<<62 | 1, time, 500, 2<<62 | 1}, []Record{exitRec(1001), exitRec(501)}},
		{"from clock 0", []uint64{1<<62 | 2<<47 | 0x10}, []Record{entryRec(2, 0x10)}},
		{"an exit first, its time whole", []uint64{2<<62 | 26_000_000_000_000, 2<<62 | 5}, []Record{exitRec(26_000_000_000_000), exitRec(26_000_000_000_005)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := decodeAll(t, &decoder{format: 3}, words(c.words...), 16)
			if !slices.Equal(got, c.want) {
				t.Errorf("decoded %+v\nwant    %+v", got, c.want)
			}
		})
	}
}

// everyKind is records of every kind that the encoder writes in every
// form: short, long for a delta or a site that does not fit, after a
// TIME for the clock going back or a delta past a long form's.
var everyKind = []Record{
	entryRec(1_000_000, 0x401000),                // TIME (the stream's start), ENTRY
	callRec(1_000_010, 0x401100, 0x401005),       // CALL
	switchRec(1_000_020, 1),                      // CONTEXT
	entryRec(1_000_030, 0x401200),                // ENTRY
	entryRec(1_100_000, 0x401300),                // LONGENTRY: a gap of 2^15 or more
	exitRec(1_100_000),                           // EXIT, delta 0
	unwoundRec(1_100_010),                        // UNWOUND
	switchRec(1_100_020, 0),                      // CONTEXT 0
	entryRec(1_100_030, 0x8000_0000_0000),        // LONGENTRY: a site of 2^47
	exitRec(1_099_000),                           // TIME (the clock went back), EXIT
	callRec(1_099_001, 0x7f00_0000_0000_0000, 1), // LONGCALL: the site
	callRec(1_200_000, 0x401100, 0x401005),       // LONGCALL: the delta
	callRec(1<<61, 0x401100, 0x401005),           // TIME (past a long form's delta), CALL
	exitRec(1<<61 + 1<<60),                       // EXIT with a delta of 2^60: no TIME
	unwoundRec(1<<63 + 5),                        // TIME, UNWOUND
	exitRec(1<<64 - 1),                           // EXIT
}

// TestEncodeDecode: records of every kind and form, encoded as the
// runtime writes them, decode back to themselves (an Exit's and an
// Unwound's IP are the reader's to fill), whatever the size of out.
func TestEncodeDecode(t *testing.T) {
	b := stream3(1, 1, everyKind...)[headerSize:]
	kinds := map[string]bool{}
	for _, out := range []int{1, 2, 3, 64} {
		t.Run(fmt.Sprint(out), func(t *testing.T) {
			if got := decodeAll(t, &decoder{format: 3}, b, out); !slices.Equal(got, everyKind) {
				t.Errorf("decoded\n%+v\nwant\n%+v", got, everyKind)
			}
		})
	}
	// Every form is there: what the encoder wrote, word by word.
	for off := 0; off < len(b); {
		w0 := binary.LittleEndian.Uint64(b[off:])
		kind := w0 >> abi.RecKindShift
		name, size := fmt.Sprint(kind), 8*abi.RecWords[kind]
		if kind == abi.RecExt {
			sub := w0 >> abi.RecExtBits & (1<<abi.RecExtSubBits - 1)
			name, size = fmt.Sprintf("3.%d", sub), 8*abi.ExtWords[sub]
		}
		kinds[name] = true
		off += size
	}
	if len(kinds) != 8 {
		t.Errorf("the stream has records of kinds %v, want all 8 (0, 1, 2, 3.0-3.4)", kinds)
	}
}

// TestDecodeChunks: a stream split anywhere, in the middle of any
// record, decodes to the same records: the decoder leaves a partial
// record for the next chunk and keeps the clock across.
func TestDecodeChunks(t *testing.T) {
	b := stream3(1, 1, everyKind...)[headerSize:]
	for cut := range len(b) + 1 {
		d := &decoder{format: 3}
		out := make([]Record, 64)
		n, used, err := d.decode(b[:cut], out)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		got := slices.Clone(out[:n])
		rest := append(slices.Clone(b[used:cut]), b[cut:]...)
		got = append(got, decodeAll(t, d, rest, 64)...)
		if !slices.Equal(got, everyKind) {
			t.Fatalf("cut at %d (%d bytes used): decoded\n%+v\nwant\n%+v", cut, used, got, everyKind)
		}
	}
}

// TestDecodeErrors: a zero first word ends the stream where it is, in
// either format; a record of a reserved EXT sub-kind, an entry or a
// context switch whose word cannot be told from the other, and a TIME
// with a payload are ErrFormat, with the bytes before them decoded and
// used where the bad record starts.
func TestDecodeErrors(t *testing.T) {
	head := []uint64{3<<62 | 1<<58, 1000, 2<<62 | 1}
	for _, c := range []struct {
		name   string
		format int
		bad    []uint64
		err    error
		says   string
	}{
		{"zero word", 3, []uint64{0, 2<<62 | 1}, errZeroWord, ""},
		{"zero word, format 2", 2, []uint64{0}, errZeroWord, ""},
		{"reserved 8", 3, []uint64{3<<62 | 8<<58}, ErrFormat, "reserved kind 3.8"},
		{"arguments without items", 3, []uint64{3<<62 | 6<<58, 2<<62 | 1}, ErrFormat, "an argument record of 1 words"},
		{"arguments of no known type", 3, []uint64{3<<62 | 6<<58 | 3, 0x401000, 1 | 15<<4, 5, 1<<62 | 0x401000}, ErrFormat, "an argument of type 15"},
		{"a string longer than its record", 3, []uint64{3<<62 | 7<<58 | 3, 0x401000, 1 | 5<<4, 40, 2<<62 | 1}, ErrFormat, "a string of 40 bytes"},
		{"a long double of one word", 3, []uint64{3<<62 | 7<<58 | 3, 0x401000, 1 | 12<<4, 40, 2<<62 | 1}, ErrFormat, "a long double of one word"},
		{"a struct without its layout", 3, []uint64{3<<62 | 7<<58 | 4, 0x401000, 1 | 14<<4, 8, 5, 2<<62 | 1}, ErrFormat, "a struct without its layout"},
		{"a struct of 40 bytes", 3, []uint64{3<<62 | 7<<58 | 3, 0x401000, 1 | 14<<4, 40, 2<<62 | 1}, ErrFormat, "a string of 40 bytes"},
		{"a struct of a bad layout", 3, []uint64{3<<62 | 7<<58 | 6, 0x401000, 1 | 14<<4, 8, 5, 3, 0x7d7a7b, 2<<62 | 1}, ErrFormat, `bad struct layout: "{z}"`},
		{"a struct its layout does not fit", 3, []uint64{3<<62 | 7<<58 | 6, 0x401000, 1 | 14<<4, 1, 5, 9, 0x7d7a7b, 2<<62 | 1}, ErrFormat, "a string of 9 bytes"},
		{"reserved 15", 3, []uint64{3<<62 | 15<<58 | 7, 0, 0}, ErrFormat, "reserved kind 3.15"},
		{"time with a payload", 3, []uint64{3<<62 | 1<<58 | 1, 5}, ErrFormat, "TIME record with a payload"},
		{"entry of a marked site", 3, []uint64{3<<62 | 3<<58, 1<<63 | 0x1000}, ErrFormat, "an entry of site 0x8000000000001000"},
		{"context id of 2^63", 3, []uint64{3<<62 | 2<<58, 1 << 63}, ErrFormat, "context 0x8000000000000000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lead := head
			if c.format == 2 {
				lead = []uint64{2<<62 | 1000, 1<<62 | 1001, 0x10}
			}
			b := words(append(slices.Clone(lead), c.bad...)...)
			n, used, err := (&decoder{format: c.format}).decode(b, make([]Record, 16))
			if !errors.Is(err, c.err) || !strings.Contains(fmt.Sprint(err), c.says) {
				t.Fatalf("decode: %v, want %v saying %q", err, c.err, c.says)
			}
			if want := 4 - c.format; n != want || used != 24 { // format 3's lead: a TIME and an exit; 2's: an exit and an entry
				t.Errorf("%d records, %d bytes used; want the %d before the bad word, which starts at byte 24", n, used, want)
			}
		})
	}
}

// TestFormat2: a trace of the previous format (meta "ftrt-trace 2",
// streams "ftrtrec2", every record with its own timestamp) still reads,
// record for record; a stream of a format not known is an error that
// says another version of the runtime wrote it.
func TestFormat2(t *testing.T) {
	le := binary.LittleEndian
	b := append([]byte(magic2), le.AppendUint32(le.AppendUint32(nil, 7), 1)...)
	b = append(b, words(
		0<<62|100, 0x401000, 0x402000, // a call
		1<<62|200, 0x401100, // an entry
		1<<62|210, ctxMark|2, // into context 2
		1<<62|220, 0x401200, // an entry there
		3<<62|230,            // unwound
		1<<62|240, ctxMark|0, // back
		2<<62|250, // the exit of 0x401100
	)...)
	want := []Record{
		callRec(100, 0x401000, 0x402000), entryRec(200, 0x401100), switchRec(210, 2), entryRec(220, 0x401200),
		{TS: 230, IP: 0x401200, Info: uint64(Unwound) << 62}, switchRec(240, 0), {TS: 250, IP: 0x401100, Info: uint64(Exit) << 62},
	}
	dir := writeTrace(t, strings.Replace(goodMeta, "format ftrt-trace 3", "format ftrt-trace 2", 1), map[string][]byte{"7-1.trace": b})
	tr, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Streams) != 1 || !slices.Equal(tr.Streams[0].Records, want) || tr.Meta.Format != "ftrt-trace 2" {
		t.Errorf("read %+v, want one stream of\n%+v", tr.Streams, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "7-1.trace"), append([]byte("ftrtrec5"), b[8:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrFormat) || !strings.Contains(fmt.Sprint(err), `7-1.trace: malformed trace: stream format "ftrtrec5", want "ftrtrec4", "ftrtrec3" or "ftrtrec2" (recorded by another version of the runtime`) {
		t.Errorf("a stream of format 5: %v", err)
	}
}

// TestReadBadRecord: a malformed record is an error naming the stream
// and the record's offset in it, past a chunk of the reader's.
func TestReadBadRecord(t *testing.T) {
	var recs []Record
	for i := range 10000 {
		recs = append(recs, entryRec(uint64(1000+2*i), 0x401000), exitRec(uint64(1001+2*i)))
	}
	b := stream3(7, 1, recs...)
	off := len(b)
	b = append(b, words(3<<62|9<<58)...)
	dir := writeTrace(t, goodMeta, map[string][]byte{"7-1.trace": b})
	want := fmt.Sprintf("%s: offset %d: malformed trace: a record of reserved kind 3.9", filepath.Join(dir, "7-1.trace"), off)
	if _, err := Read(dir); !errors.Is(err, ErrFormat) || !strings.HasPrefix(fmt.Sprint(err), want) {
		t.Errorf("Read: %v, want %q...", err, want)
	}
}

// TestDecodeWrapped: the flight recorder's EXT_WRAPPED record, where a
// ring's kept records start, makes no record and counts the words
// overwritten before it; the records after it decode from the TIME that
// starts the ring's oldest segment.
func TestDecodeWrapped(t *testing.T) {
	le := binary.LittleEndian
	var b []byte
	for _, w := range []uint64{
		abi.RecExt<<abi.RecKindShift | abi.ExtWrapped<<abi.RecExtBits | 12345,
		abi.RecExt<<abi.RecKindShift | abi.ExtTime<<abi.RecExtBits, 1000,
		abi.RecEntry<<abi.RecKindShift | 3<<abi.RecSiteBits | 0x401000,
		abi.RecExit<<abi.RecKindShift | 4,
	} {
		b = le.AppendUint64(b, w)
	}
	d := &decoder{format: 3}
	out := make([]Record, 8)
	n, used, err := d.decode(b, out)
	if err != nil || n != 2 || used != len(b) {
		t.Fatalf("decode: %d records, %d of %d bytes, %v; want 2 records, every byte", n, used, len(b), err)
	}
	if d.wrapped != 12345 {
		t.Errorf("wrapped %d words, want 12345", d.wrapped)
	}
	if out[0].Kind() != Entry || out[0].TS != 1003 || out[0].IP != 0x401000 || out[1].Kind() != Exit || out[1].TS != 1007 {
		t.Errorf("records %+v, %+v; want the entry at 1003 of 0x401000 and its exit at 1007", out[0], out[1])
	}
}

// TestDecodeArgs: an EXT_ARGS before its ENTRY and its CALL, an
// EXT_RETVAL before its EXIT (a TIME between), decoded into the records'
// Data, each item type formatted; arguments of another site than the
// record's are dropped, the record kept; a pair cut short is left for
// the next call, whole.
func TestDecodeArgs(t *testing.T) {
	const site = 0x401000
	str := binary.LittleEndian.Uint64([]byte("abc\x00\x00\x00\x00\x00"))
	words := []uint64{
		3<<62 | 1<<58, 1000, // TIME
		3<<62 | 6<<58 | 10, site, 6 | 1<<4 | 2<<8 | 4<<12 | 5<<16 | 6<<20 | 5<<24, // ARGS: six items
		^uint64(1), 255, math.Float64bits(2.5), 3, str, 'x', abi.ArgUnreadable, 16,
		1<<62 | 2<<47 | site,                      // ENTRY
		3<<62 | 7<<58 | 3, site, 1 | 3<<4, 0x1000, // RETVAL
		3<<62 | 1<<58, 2000, // TIME
		2<<62 | 5,                             // EXIT
		3<<62 | 6<<58 | 3, 0x999, 1 | 1<<4, 9, // ARGS of another site
		0<<62 | 1<<47 | site, 0x402000, // CALL
	}
	var b []byte
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	want := []Record{
		{TS: 1002, IP: site, Info: uint64(Entry) << 62, Data: `-2, 0xff, 2.5, "abc", 'x', <unreadable 0x10>`},
		{TS: 2005, Info: uint64(Exit) << 62, Data: "0x1000"},
		{TS: 2006, IP: site, Info: uint64(Call)<<62 | 0x402000},
	}
	for cut := 8; cut <= len(b); cut += 8 {
		d := &decoder{format: 3}
		out := make([]Record, 8)
		var got []Record
		n, used, err := d.decode(b[:cut], out)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		got = append(got, out[:n]...)
		n, _, err = d.decode(b[used:], out)
		if err != nil {
			t.Fatalf("cut at %d, the rest: %v", cut, err)
		}
		got = append(got, out[:n]...)
		if !slices.Equal(got, want) {
			t.Fatalf("cut at %d: decoded\n%+v\nwant\n%+v", cut, got, want)
		}
	}
}
