package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"ftpatch/internal/escape"
	"ftpatch/runtime/abi"
)

// The stream formats: a stream file's first 8 bytes say which one its
// records are in (the metadata's format line says the same of the whole
// trace). Format 4's records are laid out as package abi says; format 3's
// are the same but for EXT_SUMMARY, which it reserves.
const (
	magic4 = abi.StreamMagic // format 4, "ftrt-trace 4": what the runtime writes
	magic3 = "ftrtrec3"      // format 3, "ftrt-trace 3": the runtime's before stream summaries
	magic2 = "ftrtrec2"      // format 2, "ftrt-trace 2": the one before
)

// errZeroWord: a record's first word is 0, which no record's is: a hole
// in the stream, or zeros a system that stopped left where records were
// to go. The stream ends there.
var errZeroWord = errors.New("a zero word where a record starts")

// A decoder decodes one stream's records: its format, and from format 3
// on the stream's clock (each record's time is the one before's plus its
// delta), kept from one chunk of the stream to the next.
type decoder struct {
	format  int              // 2, 3 or 4
	clock   uint64           // format 3 on: the time of the last record decoded (or the last TIME)
	wrapped uint64           // format 3 on: words of earlier records the flight recorder's ring overwrote (EXT_WRAPPED)
	enums   map[string]*Enum // the trace's (EnumsFile), by name: how enum arguments read
}

// newDecoder returns the decoder of a stream whose header starts with
// magic (its first 8 bytes); ErrFormat for a stream of no format known.
func newDecoder(magic []byte, enums map[string]*Enum) (*decoder, error) {
	switch m := string(magic); {
	case m == magic4:
		return &decoder{format: 4, enums: enums}, nil
	case m == magic3:
		return &decoder{format: 3, enums: enums}, nil
	case m == magic2:
		return &decoder{format: 2}, nil
	case strings.HasPrefix(m, "ftrtrec"):
		return nil, fmt.Errorf("%w: stream format %q, want %q, %q or %q (recorded by another version of the runtime: read it with the ftpatch that built that program)", ErrFormat, m, magic4, magic3, magic2)
	}
	return nil, fmt.Errorf("%w: no stream header", ErrFormat)
}

// decode decodes the whole records at the start of b into out, stopping
// when out is full or b holds no whole record more: n records written,
// used bytes of b consumed (a partial record at the end is left for the
// next call, with the bytes that follow it). Records come out as
// Record{TS, IP, Info}: TS absolute, Info = kind << 62 (| the parent ip,
// of a call), a context switch as an Entry whose IP is ctxMark | id, an
// Exit's or Unwound's IP 0 (the reader pairs it with its entry); a TIME
// sets the clock and makes no record. A zero first word: errZeroWord,
// used where it is (the stream ends there). A malformed record: an error
// wrapping ErrFormat that says what, used where the record starts.
func (d *decoder) decode(b []byte, out []Record) (n, used int, err error) {
	if d.format == 2 {
		return decode2(b, out)
	}
	return d.decode3(b, out)
}

// decode3 decodes formats 3 and 4 (see the package comment): 4's
// EXT_SUMMARY makes no record.
func (d *decoder) decode3(b []byte, out []Record) (n, used int, err error) {
	le := binary.LittleEndian
	const (
		deltaMask = 1<<abi.RecDeltaBits - 1
		siteMask  = 1<<abi.RecSiteBits - 1
		extMask   = 1<<abi.RecExtBits - 1
		exitMask  = 1<<abi.RecExitBits - 1
		subMask   = 1<<abi.RecExtSubBits - 1
	)
	for n < len(out) && len(b)-used >= 8 {
		w0 := le.Uint64(b[used:])
		// Arguments precede their call's CALL or ENTRY, a return value
		// its call's EXIT: the two are decoded together, or not yet.
		if sub := w0 >> abi.RecExtBits & subMask; w0>>abi.RecKindShift == abi.RecExt && (sub == abi.ExtArgs || sub == abi.ExtRetval) {
			size := 8 * (1 + int(w0&abi.ArgWordsMask))
			if len(b)-used < size {
				return n, used, nil
			}
			text, err := argsText(b[used:used+size], w0, d.enums)
			if err != nil {
				return n, used, err
			}
			clock := d.clock
			n1, used1, err := d.decode3(b[used+size:], out[n:n+1])
			if err != nil && !errors.Is(err, errZeroWord) {
				return n, used, err
			}
			if n1 == 0 {
				d.clock = clock
				if err != nil {
					return n, used + size, err // the stream ends after them
				}
				return n, used, nil // the record they go with is not all here yet
			}
			if k := out[n].Kind(); (sub == abi.ExtArgs && (k == Call || k == Entry) && le.Uint64(b[used+8:]) == out[n].IP && out[n].IP&ctxMark == 0) ||
				(sub == abi.ExtRetval && k == Exit) {
				out[n].Data = text
			}
			used += size + used1
			n++
			continue
		}
		if sub := w0 >> abi.RecExtBits & subMask; w0>>abi.RecKindShift == abi.RecExt && sub == abi.ExtSummary && d.format >= 4 {
			size := 8 * (1 + int(w0&abi.ArgWordsMask))
			if size < 8*abi.SumWords {
				return n, used, fmt.Errorf("%w: a summary record of %d words, want at least %d (word %#016x)", ErrFormat, size/8, abi.SumWords, w0)
			}
			if len(b)-used < size {
				return n, used, nil
			}
			used += size
			continue // no record: what the stream holds, which its end says (summaryOf)
		}
		switch w0 >> abi.RecKindShift {
		case abi.RecCall:
			if w0 == 0 {
				return n, used, errZeroWord
			}
			if len(b)-used < 16 {
				return n, used, nil
			}
			d.clock += w0 >> abi.RecSiteBits
			out[n] = Record{TS: d.clock, IP: w0 & siteMask, Info: uint64(Call)<<62 | le.Uint64(b[used+8:])&tsMask}
			used += 16
		case abi.RecEntry:
			d.clock += w0 >> abi.RecSiteBits & deltaMask
			out[n] = Record{TS: d.clock, IP: w0 & siteMask, Info: uint64(Entry) << 62}
			used += 8
		case abi.RecExit:
			d.clock += w0 & exitMask
			out[n] = Record{TS: d.clock, Info: uint64(Exit) << 62}
			used += 8
		case abi.RecExt:
			sub, delta := w0>>abi.RecExtBits&subMask, w0&extMask
			words := abi.ExtWords[sub]
			if words == 0 {
				return n, used, fmt.Errorf("%w: a record of reserved kind 3.%d (word %#016x)", ErrFormat, sub, w0)
			}
			if len(b)-used < 8*words {
				return n, used, nil
			}
			var w1 uint64
			if words > 1 {
				w1 = le.Uint64(b[used+8:])
			}
			switch sub {
			case abi.ExtUnwound:
				out[n] = Record{TS: d.clock + delta, Info: uint64(Unwound) << 62}
			case abi.ExtTime:
				if delta != 0 {
					return n, used, fmt.Errorf("%w: a TIME record with a payload (word %#016x)", ErrFormat, w0)
				}
				d.clock = w1
				used += 16
				continue // no record
			case abi.ExtWrapped:
				d.wrapped += delta
				used += 8
				continue // no record: the stream's records start after a gap
			case abi.ExtContext:
				if w1&ctxMark != 0 {
					return n, used, fmt.Errorf("%w: a context switch to context %#x, of 2^63 or more", ErrFormat, w1)
				}
				out[n] = Record{TS: d.clock + delta, IP: ctxMark | w1, Info: uint64(Entry) << 62}
			case abi.ExtLongEntry:
				// Record says a context switch by this bit of an entry's
				// IP; no user-space site has it.
				if w1&ctxMark != 0 {
					return n, used, fmt.Errorf("%w: an entry of site %#x, of 2^63 or more", ErrFormat, w1)
				}
				out[n] = Record{TS: d.clock + delta, IP: w1, Info: uint64(Entry) << 62}
			case abi.ExtLongCall:
				out[n] = Record{TS: d.clock + delta, IP: w1, Info: uint64(Call)<<62 | le.Uint64(b[used+16:])&tsMask}
			}
			d.clock += delta
			used += 8 * words
		}
		n++
	}
	return n, used, nil
}

// argsText formats an EXT_ARGS or EXT_RETVAL record (rec, w0 its first
// word; abi.h lays it out) as its values, comma-separated: -3, 7,
// "abc", 0x10, 2.5, 'c', true, RED, ?, {5, -6}; a string or struct the
// runtime could not read as <unreadable 0x...>, a string it cut with
// "..." after; an enum by the name enums gives its value (else its
// number); a long double as a double is shown, with the digits its
// precision needs; a struct by its layout (Layout.Show).
func argsText(rec []byte, w0 uint64, enums map[string]*Enum) (string, error) {
	le := binary.LittleEndian
	words := len(rec) / 8
	if words < 3 {
		return "", fmt.Errorf("%w: an argument record of %d words (word %#016x)", ErrFormat, words, w0)
	}
	types := le.Uint64(rec[16:])
	count := int(types & (1<<abi.ArgTypeBits - 1))
	var sb strings.Builder
	k := 3
	// bytes reads a string's length word (at k-1, v) and bytes, at most
	// max of them.
	bytes := func(v uint64, max int) (string, error) {
		n := int(v & abi.ArgLenMask)
		if n > max || k+(n+7)/8 > words {
			return "", fmt.Errorf("%w: a string of %d bytes in an argument record of %d words (word %#016x)", ErrFormat, n, words, w0)
		}
		s := string(rec[8*k : 8*k+n])
		k += (n + 7) / 8
		return s, nil
	}
	for i := range count {
		if i > 0 {
			sb.WriteString(", ")
		}
		t := types >> (abi.ArgTypeBits * (i + 1)) & (1<<abi.ArgTypeBits - 1)
		if t == abi.ArgNone {
			sb.WriteString("?")
			continue
		}
		if k >= words {
			return "", fmt.Errorf("%w: an argument record shorter than its %d items (word %#016x)", ErrFormat, count, w0)
		}
		v := le.Uint64(rec[8*k:])
		k++
		switch t {
		case abi.ArgInt:
			sb.WriteString(strconv.FormatInt(int64(v), 10))
		case abi.ArgUdec:
			sb.WriteString(strconv.FormatUint(v, 10))
		case abi.ArgUint, abi.ArgPtr:
			sb.WriteString("0x" + strconv.FormatUint(v, 16))
		case abi.ArgDouble:
			sb.WriteString(strconv.FormatFloat(math.Float64frombits(v), 'g', -1, 64))
		case abi.ArgFloat:
			sb.WriteString(strconv.FormatFloat(float64(math.Float32frombits(uint32(v))), 'g', -1, 32))
		case abi.ArgChar:
			sb.WriteString(escape.Char(byte(v)))
		case abi.ArgBool:
			switch byte(v) {
			case 0:
				sb.WriteString("false")
			case 1:
				sb.WriteString("true")
			default:
				sb.WriteString(strconv.Itoa(int(byte(v))))
			}
		case abi.ArgEnum:
			if k >= words {
				return "", fmt.Errorf("%w: an enum without its name (word %#016x)", ErrFormat, w0)
			}
			k++
			name, err := bytes(le.Uint64(rec[8*k-8:]), abi.ArgEnumMax)
			if err != nil {
				return "", err
			}
			if e := enums[name]; e != nil {
				sb.WriteString(e.Show(v))
			} else {
				sb.WriteString(strconv.FormatInt(int64(int32(v)), 10)) // a C enum's usual int
			}
		case abi.ArgString:
			if v&abi.ArgUnreadable != 0 {
				if k >= words {
					return "", fmt.Errorf("%w: an unreadable string without its pointer (word %#016x)", ErrFormat, w0)
				}
				sb.WriteString("<unreadable 0x" + strconv.FormatUint(le.Uint64(rec[8*k:]), 16) + ">")
				k++
				break
			}
			s, err := bytes(v, abi.ArgStringMax)
			if err != nil {
				return "", err
			}
			sb.WriteString(escape.Quote(s))
			if v&abi.ArgTruncated != 0 {
				sb.WriteString("...")
			}
		case abi.ArgF80, abi.ArgF128:
			if k >= words {
				return "", fmt.Errorf("%w: a long double of one word (word %#016x)", ErrFormat, w0)
			}
			b := rec[8*k-8 : 8*k+8]
			k++
			if t == abi.ArgF80 {
				sb.WriteString(showF80(b))
			} else {
				sb.WriteString(showF128(b))
			}
		case abi.ArgStruct:
			if v&abi.ArgUnreadable != 0 {
				if k >= words {
					return "", fmt.Errorf("%w: an unreadable struct without its address (word %#016x)", ErrFormat, w0)
				}
				sb.WriteString("<unreadable 0x" + strconv.FormatUint(le.Uint64(rec[8*k:]), 16) + ">")
				k++
				break
			}
			data, err := bytes(v, abi.ArgStructMax)
			if err == nil && k >= words {
				err = fmt.Errorf("%w: a struct without its layout (word %#016x)", ErrFormat, w0)
			}
			if err != nil {
				return "", err
			}
			k++
			text, err := bytes(le.Uint64(rec[8*k-8:]), abi.ArgLayoutMax)
			if err != nil {
				return "", err
			}
			l, err := ParseLayout(text)
			if err != nil {
				return "", fmt.Errorf("%w: %w (word %#016x)", ErrFormat, err, w0)
			}
			sb.WriteString(l.Show([]byte(data)))
		default:
			return "", fmt.Errorf("%w: an argument of type %d (word %#016x)", ErrFormat, t, w0)
		}
	}
	return sb.String(), nil
}

// decode2 decodes format 2: every record starts with kind << 62 | its
// 62-bit timestamp; a Call goes on with the site and the caller's return
// address, an Entry with the site (ctxMark | id: a context switch); an
// Exit or Unwound is that one word.
func decode2(b []byte, out []Record) (n, used int, err error) {
	le := binary.LittleEndian
	for n < len(out) && len(b)-used >= 8 {
		w0 := le.Uint64(b[used:])
		if w0 == 0 {
			return n, used, errZeroWord
		}
		r := Record{TS: w0 & tsMask, Info: w0 &^ tsMask}
		size := 8
		switch r.Kind() {
		case Call:
			size = 24
		case Entry:
			size = 16
		}
		if len(b)-used < size {
			return n, used, nil
		}
		switch r.Kind() {
		case Call:
			r.IP = le.Uint64(b[used+8:])
			r.Info |= le.Uint64(b[used+16:]) & tsMask
		case Entry:
			r.IP = le.Uint64(b[used+8:])
		}
		out[n] = r
		n++
		used += size
	}
	return n, used, nil
}
