package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"

	"ftpatch/internal/escape"
	"ftpatch/runtime/abi"
)

// A Layout is the members of a struct as a struct format names them,
// the text the runtime records beside the struct's bytes (ARG_STRUCT)
// and `ftpatch record -A` is given:
//
//	layout = "{" member { "," member } [ "," "..." ] "}"
//	member = ("d" | "i" | "u" | "x") [ bits ] | "p" | "c" | "b" | "f" [ fbits ] | layout
//	bits   = "8" | "16" | "32" | "64"     fbits = "32" | "64" | "80" | "128"
//
// Each member lies at the next offset its alignment allows, as C lays
// out a struct of those types: an integer, char, bool or float is
// aligned to its size (f80 and f128, a long double, to 16), a pointer
// is 8 bytes, and a nested layout (a struct member, or an array's
// elements) is aligned to its largest member and padded to a multiple
// of that. "..." says that members not recorded follow (a struct larger
// than abi.ArgStructMax bytes). A layout's text is at most
// abi.ArgLayoutMax bytes and its members at most abi.ArgStructMax.
type Layout struct {
	members []member
	more    bool // "...": members not recorded follow
	size    int  // bytes, with the padding after the last member
	align   int
}

// A member is one member of a Layout at its offset: a scalar of a kind
// ('i' signed, 'u' unsigned, 'x' hex, 'p' pointer, 'c' char, 'b' bool,
// 'f' floating point) and bits, or a nested layout.
type member struct {
	kind byte
	bits int
	off  int
	sub  *Layout
}

// ErrLayout: a struct format's text is not what the grammar allows.
var ErrLayout = errors.New("bad struct layout")

// ParseLayout reads a struct format's text ({i32,i32}).
func ParseLayout(s string) (*Layout, error) {
	if len(s) > abi.ArgLayoutMax {
		return nil, fmt.Errorf("%w: %q: %d bytes, more than %d", ErrLayout, s, len(s), abi.ArgLayoutMax)
	}
	l, rest, err := parseLayout(s, true)
	if err == nil && rest != "" {
		err = fmt.Errorf("%q after the struct", rest)
	}
	if err == nil && l.size > abi.ArgStructMax {
		err = fmt.Errorf("%d bytes: a struct's recorded members are at most %d (end with ... for the rest)", l.size, abi.ArgStructMax)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrLayout, s, err)
	}
	return l, nil
}

// parseLayout reads a layout at the start of s, and what follows it;
// "..." is allowed only in the outermost (top).
func parseLayout(s string, top bool) (*Layout, string, error) {
	rest, ok := strings.CutPrefix(s, "{")
	if !ok {
		return nil, "", errors.New("want {")
	}
	l := &Layout{align: 1}
	for {
		if top && strings.HasPrefix(rest, "...}") && len(l.members) > 0 {
			l.more = true
			rest = rest[3:]
		} else {
			m, r, err := parseMember(rest)
			if err != nil {
				return nil, "", err
			}
			a := m.alignment()
			l.size = (l.size + a - 1) / a * a
			m.off = l.size
			l.size += m.size()
			l.align = max(l.align, a)
			l.members = append(l.members, m)
			rest = r
		}
		switch {
		case strings.HasPrefix(rest, "}"):
			l.size = (l.size + l.align - 1) / l.align * l.align
			return l, rest[1:], nil
		case strings.HasPrefix(rest, ",") && !l.more:
			rest = rest[1:]
		default:
			return nil, "", fmt.Errorf("want , or } after member %d", len(l.members))
		}
	}
}

// parseMember reads one member at the start of s.
func parseMember(s string) (member, string, error) {
	if strings.HasPrefix(s, "{") {
		sub, rest, err := parseLayout(s, false)
		return member{kind: '{', sub: sub}, rest, err
	}
	end := strings.IndexAny(s, ",}")
	if end < 0 {
		end = len(s)
	}
	f, rest := s[:end], s[end:]
	if f == "" {
		return member{}, "", errors.New("an empty member")
	}
	letter, bits := f[0], f[1:]
	m := member{kind: letter}
	switch letter {
	case 'd', 'i', 'u', 'x':
		if letter == 'd' {
			m.kind = 'i'
		}
		m.bits = 64
		switch bits {
		case "":
		case "8", "16", "32", "64":
			m.bits, _ = strconv.Atoi(bits)
		default:
			return member{}, "", fmt.Errorf("member %q: bits are 8, 16, 32 or 64", f)
		}
	case 'f':
		m.bits = 64
		switch bits {
		case "":
		case "32", "64", "80", "128":
			m.bits, _ = strconv.Atoi(bits)
		default:
			return member{}, "", fmt.Errorf("member %q: a float has 32, 64, 80 or 128 bits", f)
		}
	case 'p', 'c', 'b':
		if bits != "" {
			return member{}, "", fmt.Errorf("member %q: %c takes no bits", f, letter)
		}
		m.bits = 8
		if letter == 'p' {
			m.bits = 64
		}
	default:
		return member{}, "", fmt.Errorf("member %q: want d i u x (and bits), p, c, b, f32 f64 f80 f128, or {...}", f)
	}
	return m, rest, nil
}

func (m member) size() int {
	switch {
	case m.sub != nil:
		return m.sub.size
	case m.bits > 64:
		return 16
	}
	return m.bits / 8
}

func (m member) alignment() int {
	if m.sub != nil {
		return m.sub.align
	}
	return m.size()
}

// Size is the bytes of the struct's recorded members, with C's padding.
func (l *Layout) Size() int { return l.size }

// Floats says what floating-point members the struct holds, when it
// holds nothing else (count 0 when it does): their count, and the
// fewest and most bits of one (a homogeneous aggregate's are equal).
func (l *Layout) Floats() (count, minBits, maxBits int) {
	minBits = 128
	for _, m := range l.members {
		n, lo, hi := 1, m.bits, m.bits
		if m.sub != nil {
			n, lo, hi = m.sub.Floats()
		} else if m.kind != 'f' {
			n = 0
		}
		if n == 0 {
			return 0, 0, 0
		}
		count, minBits, maxBits = count+n, min(minBits, lo), max(maxBits, hi)
	}
	return count, minBits, maxBits
}

// Integers says which of the struct's eightbytes (bit e: its bytes 8e
// to 8e+7) hold a member that is not floating point: those x86-64 passes
// in integer registers (class INTEGER), the others in vector ones (SSE).
func (l *Layout) Integers() uint64 {
	var words uint64
	for b := l.nonFloat(); b != 0; b &= b - 1 {
		words |= 1 << (bits.TrailingZeros64(b) / 8)
	}
	return words
}

// nonFloat marks the struct's bytes (bit b: byte b, of its first 64)
// that hold a member that is not floating point.
func (l *Layout) nonFloat() uint64 {
	var mask uint64
	for _, m := range l.members {
		var own uint64
		switch {
		case m.sub != nil:
			own = m.sub.nonFloat()
		case m.kind != 'f':
			own = 1<<m.size() - 1
		}
		if m.off < 64 {
			mask |= own << m.off
		}
	}
	return mask
}

// String is the layout's canonical text: every member as i, u or x with
// its bits, p, c, b, or f with its bits.
func (l *Layout) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range l.members {
		if i > 0 {
			b.WriteByte(',')
		}
		switch m.kind {
		case '{':
			b.WriteString(m.sub.String())
		case 'p', 'c', 'b':
			b.WriteByte(m.kind)
		default:
			b.WriteByte(m.kind)
			b.WriteString(strconv.Itoa(m.bits))
		}
	}
	if l.more {
		b.WriteString(",...")
	}
	b.WriteByte('}')
	return b.String()
}

// Show is the struct whose bytes are b as C's initializer would write
// it: {5, -6}, {1, {2.5, 'c'}, ...}; a member b does not hold is ?.
func (l *Layout) Show(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('{')
	for i, m := range l.members {
		if i > 0 {
			sb.WriteString(", ")
		}
		if m.off+m.size() > len(b) {
			sb.WriteByte('?')
			continue
		}
		v := b[m.off : m.off+m.size()]
		if m.sub != nil {
			sb.WriteString(m.sub.Show(v))
			continue
		}
		sb.WriteString(showScalar(m.kind, m.bits, v))
	}
	if l.more {
		sb.WriteString(", ...")
	}
	sb.WriteByte('}')
	return sb.String()
}

// showScalar is a member of kind and bits whose bytes are v.
func showScalar(kind byte, bits int, v []byte) string {
	var u uint64
	if bits <= 64 {
		var w [8]byte
		copy(w[:], v)
		u = binary.LittleEndian.Uint64(w[:])
	}
	switch kind {
	case 'i':
		shift := 64 - bits
		return strconv.FormatInt(int64(u<<shift)>>shift, 10)
	case 'u':
		return strconv.FormatUint(u, 10)
	case 'x', 'p':
		return "0x" + strconv.FormatUint(u, 16)
	case 'c':
		return escape.Char(byte(u))
	case 'b':
		switch u {
		case 0:
			return "false"
		case 1:
			return "true"
		}
		return strconv.FormatUint(u, 10)
	}
	switch bits {
	case 32:
		return strconv.FormatFloat(float64(math.Float32frombits(uint32(u))), 'g', -1, 32)
	case 64:
		return strconv.FormatFloat(math.Float64frombits(u), 'g', -1, 64)
	case 80:
		return showF80(v)
	}
	return showF128(v)
}

// showF80 is an x87 extended-precision value, its 10 bytes in memory
// (a 64-bit significand with its integer bit, then sign and a 15-bit
// exponent) first in b, as strconv's 'g' with the shortest digits that
// read back as it: 2.5, 1e+4000, -0, +Inf, NaN.
func showF80(b []byte) string {
	mant := binary.LittleEndian.Uint64(b)
	se := binary.LittleEndian.Uint16(b[8:])
	neg, exp := se>>15 != 0, int(se&0x7fff)
	switch {
	case exp == 0x7fff && mant<<1 == 0:
		return signed(neg, "Inf", true)
	case exp == 0x7fff || exp != 0 && mant>>63 == 0: // a NaN, or an unnormal (no value)
		return "NaN"
	}
	prec := uint(64)
	if exp == 0 { // a denormal: as many digits as its bits need
		exp, prec = 1, uint(max(bits.Len64(mant), 1))
	}
	x := new(big.Float).SetPrec(prec).SetUint64(mant)
	return showBig(x.SetMantExp(x, exp-16383-63), neg)
}

// showF128 is an IEEE binary128 value, its 16 bytes in memory (little
// endian) in b, as showF80 shows its.
func showF128(b []byte) string {
	lo, hi := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	neg, exp := hi>>63 != 0, int(hi>>48&0x7fff)
	frac := new(big.Int).Lsh(new(big.Int).SetUint64(hi&(1<<48-1)), 64)
	frac.Or(frac, new(big.Int).SetUint64(lo))
	switch {
	case exp == 0x7fff && frac.Sign() == 0:
		return signed(neg, "Inf", true)
	case exp == 0x7fff:
		return "NaN"
	}
	prec := uint(113)
	if exp == 0 { // a subnormal: as many digits as its bits need
		exp, prec = 1, uint(max(frac.BitLen(), 1))
	} else {
		frac.SetBit(frac, 112, 1)
	}
	x := new(big.Float).SetPrec(prec).SetInt(frac)
	return showBig(x.SetMantExp(x, exp-16383-112), neg)
}

func showBig(x *big.Float, neg bool) string {
	if x.Sign() == 0 {
		return signed(neg, "0", false)
	}
	if neg {
		x.Neg(x)
	}
	return x.Text('g', -1)
}

// signed is s with its sign: "-" when neg, else "+" when plus (as
// strconv writes an infinity).
func signed(neg bool, s string, plus bool) string {
	switch {
	case neg:
		return "-" + s
	case plus:
		return "+" + s
	}
	return s
}
