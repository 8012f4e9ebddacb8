package argspec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"ftpatch/arch"
	"ftpatch/runtime/abi"
)

// The grammar of FTRACE_ARGS and FTRACE_RETVAL (`ftpatch record -A`,
// `-R`), the one the runtime's parser (runtime/src/argspec.c) reads;
// TestRuntimeParser holds the two to the same verdicts:
//
//	FTRACE_ARGS   = entry { ";" entry }     entry = GLOB "@" item { "," item }
//	FTRACE_RETVAL = entry { ";" entry }     entry = GLOB [ "/" format ]
//	item   = "arg" N [ "/" format ] | "fparg" N [ "/" ffmt ] | "?"
//	format = ("d" | "i" | "u" | "x") [ bits ] | "p" | "s" | "c" | "b" | "e:" ENUM
//	ffmt   = "f" [ bits ]        bits = "8" | "16" | "32" | "64" (f: 32 or 64)
//
// Empty entries are skipped. A GLOB (fnmatch's) holds no ';', '@', ',',
// '/', space or control character. N counts from 1 (no leading 0) among
// the integer and pointer arguments (argN: x86-64 passes 6 in registers,
// arm64 8) or the floating-point ones (fparg: 8 on both); only registers
// are read, so a higher N is refused. An entry holds at most abi.ArgMax
// items. ENUM is a C identifier, with ".N" after it when two enums of
// one name differ, of at most abi.ArgEnumMax bytes. In FTRACE_RETVAL a
// format f reads the floating-point return register, any other the
// integer one; "?" shows that there is a value not shown.

// A Format is how an item's value is read and shown.
type Format uint8

// The formats.
const (
	Unknown Format = iota // "?": a value not read (one the calling convention puts where no item reads)
	Int                   // d, i, iN: signed decimal, sign-extended from its bits
	Uint                  // u, uN: unsigned decimal, zero-extended
	Hex                   // x, xN: hex, zero-extended
	Ptr                   // p: a pointer, in hex
	String                // s: the C string it points to
	Char                  // c: a char
	Bool                  // b: false or true
	Enum                  // e:NAME: the enumerator's name
	Float                 // f, f32, f64: a float or a double
)

// An Item is one value to record: an argument, or a return value.
type Item struct {
	Fmt  Format
	FP   bool   // in a floating-point register (fpargN; a return value's f)
	N    int    // the register, from 1 among its kind; 0 for a return value or Unknown
	Bits int    // Int, Uint, Hex: 8, 16, 32 or 64; Float: 32 or 64; else 0
	Enum string // Enum: the enum's name in the trace's enums
}

// String is the item's canonical form (argN/i32, fpargN/f64, ?): every
// spelling of one item has one. A return value's lacks the "argN/".
func (it Item) String() string {
	f := ""
	switch it.Fmt {
	case Unknown:
		return "?"
	case Int:
		f = "i" + strconv.Itoa(it.Bits)
	case Uint:
		f = "u" + strconv.Itoa(it.Bits)
	case Hex:
		f = "x" + strconv.Itoa(it.Bits)
	case Ptr:
		f = "p"
	case String:
		f = "s"
	case Char:
		f = "c"
	case Bool:
		f = "b"
	case Enum:
		f = "e:" + it.Enum
	case Float:
		f = "f" + strconv.Itoa(it.Bits)
	}
	switch {
	case it.N == 0:
		return f
	case it.FP:
		return fmt.Sprintf("fparg%d/%s", it.N, f)
	}
	return fmt.Sprintf("arg%d/%s", it.N, f)
}

// An Entry chooses functions by Glob and says what to record of them:
// Items, their arguments in order (FTRACE_ARGS), or the one return value
// (FTRACE_RETVAL).
type Entry struct {
	Glob  string
	Items []Item
}

// ErrSpec: an FTRACE_ARGS or FTRACE_RETVAL text (a -A or -R flag) is
// not what the grammar allows; the *SpecError that wraps it says where.
var ErrSpec = errors.New("bad argument spec")

// A SpecError is a spec the grammar refuses: Entry is the entry as
// given, Msg what is wrong with it.
type SpecError struct {
	Entry string
	Msg   string
}

func (e *SpecError) Error() string { return fmt.Sprintf("%q: %s", e.Entry, e.Msg) }

// Unwrap makes a SpecError an ErrSpec.
func (e *SpecError) Unwrap() error { return ErrSpec }

// Regs are how many argument registers of each kind arch a passes
// arguments in, the items a spec may name: argN up to Ints, fpargN up
// to FPs.
func Regs(a arch.Arch) (ints, fps int) {
	if a == arch.ARM64 {
		return 8, 8 // x0-x7, v0-v7
	}
	return 6, 8 // rdi rsi rdx rcx r8 r9, xmm0-xmm7
}

// ParseArgs reads an FTRACE_ARGS text for a program of arch a.
func ParseArgs(s string, a arch.Arch) ([]Entry, error) {
	var out []Entry
	for e := range strings.SplitSeq(s, ";") {
		if e == "" {
			continue
		}
		glob, items, ok := strings.Cut(e, "@")
		if !ok {
			return nil, &SpecError{e, "want FUNC@ITEMS (argN[/FMT], fpargN[/f32|f64], ?), separated by commas"}
		}
		if err := checkGlob(glob); err != "" {
			return nil, &SpecError{e, err}
		}
		var its []Item
		for one := range strings.SplitSeq(items, ",") {
			it, err := parseItem(one, a)
			if err != "" {
				return nil, &SpecError{e, err}
			}
			its = append(its, it)
		}
		if len(its) > abi.ArgMax {
			return nil, &SpecError{e, fmt.Sprintf("%d items: a function's are at most %d", len(its), abi.ArgMax)}
		}
		out = append(out, Entry{glob, its})
	}
	return out, nil
}

// ParseRetval reads an FTRACE_RETVAL text.
func ParseRetval(s string) ([]Entry, error) {
	var out []Entry
	for e := range strings.SplitSeq(s, ";") {
		if e == "" {
			continue
		}
		glob, f, ok := strings.Cut(e, "/")
		if err := checkGlob(glob); err != "" {
			return nil, &SpecError{e, err}
		}
		it := Item{Fmt: Int, Bits: 64}
		if ok {
			var err string
			if it, err = parseFormat(f, inRet); err != "" {
				return nil, &SpecError{e, err}
			}
		}
		out = append(out, Entry{glob, []Item{it}})
	}
	return out, nil
}

// checkGlob says what is wrong with a glob, or "".
func checkGlob(g string) string {
	if g == "" {
		return "no function glob"
	}
	for i := 0; i < len(g); i++ {
		if c := g[i]; c <= ' ' || c == 0x7f || c == ',' || c == '/' || c == '@' {
			return fmt.Sprintf("function glob %q holds %q", g, c)
		}
	}
	return ""
}

// parseItem reads one FTRACE_ARGS item.
func parseItem(s string, a arch.Arch) (Item, string) {
	if s == "?" {
		return Item{}, ""
	}
	ints, fps := Regs(a)
	fp, max, kind := false, ints, "integer or pointer"
	rest, ok := strings.CutPrefix(s, "fparg")
	if ok {
		fp, max, kind = true, fps, "floating-point"
	} else if rest, ok = strings.CutPrefix(s, "arg"); !ok {
		return Item{}, fmt.Sprintf("item %q: want argN[/FMT], fpargN[/f32|f64] or ?", s)
	}
	num, f, hasF := strings.Cut(rest, "/")
	if num == "" || num[0] < '1' || num[0] > '9' || strings.Trim(num, "0123456789") != "" {
		return Item{}, fmt.Sprintf("item %q: want a number from 1 after %q", s, strings.TrimSuffix(s, rest))
	}
	n, err := strconv.Atoi(num)
	if err != nil || n > max {
		return Item{}, fmt.Sprintf("item %q: %v passes %d %s arguments in registers (%s1-%s%d), the only ones recorded", s, a, max, kind, strings.TrimSuffix(s, rest), strings.TrimSuffix(s, rest), max)
	}
	it := Item{Fmt: Int, Bits: 64, FP: fp, N: n}
	if fp {
		it.Fmt = Float
	}
	if hasF {
		w := inInt
		if fp {
			w = inFP
		}
		g, msg := parseFormat(f, w)
		if msg != "" {
			return Item{}, fmt.Sprintf("item %q: %s", s, msg)
		}
		g.FP, g.N = fp, n
		it = g
	}
	return it, ""
}

// Where a format's value is: an integer argument register, a
// floating-point one, or a return value (either, by the format).
type place uint8

const (
	inInt place = iota
	inFP
	inRet
)

// parseFormat reads a format of a value in w.
func parseFormat(f string, w place) (Item, string) {
	if w == inRet && f == "?" {
		return Item{}, ""
	}
	if name, ok := strings.CutPrefix(f, "e:"); ok && w != inFP {
		if !enumName(name) {
			return Item{}, fmt.Sprintf("enum %q: want a C identifier (and .N), of at most %d bytes", name, abi.ArgEnumMax)
		}
		return Item{Fmt: Enum, Enum: name}, ""
	}
	letter, bits := f, ""
	if len(f) > 1 {
		letter, bits = f[:1], f[1:]
	}
	it := Item{}
	switch letter {
	case "f":
		if w == inInt {
			return Item{}, "format f is for fpargN: an integer register holds no float"
		}
		it.Fmt, it.FP = Float, true
	case "d", "i", "u", "x", "p", "s", "c", "b":
		if w == inFP {
			return Item{}, fmt.Sprintf("format %q: a floating-point argument's is f, f32 or f64", f)
		}
		it.Fmt = map[string]Format{"d": Int, "i": Int, "u": Uint, "x": Hex, "p": Ptr, "s": String, "c": Char, "b": Bool}[letter]
	default:
		return Item{}, fmt.Sprintf("unknown format %q: want d i u x (8 16 32 or 64 bits after: i32), p s c b, e:ENUM, or f f32 f64 (floating point)", f)
	}
	switch it.Fmt {
	case Int, Uint, Hex, Float:
		it.Bits = 64
		switch bits {
		case "":
		case "8", "16", "32", "64":
			it.Bits, _ = strconv.Atoi(bits)
			if it.Fmt == Float && it.Bits < 32 {
				return Item{}, fmt.Sprintf("format %q: a float has 32 or 64 bits", f)
			}
		default:
			return Item{}, fmt.Sprintf("format %q: bits are 8, 16, 32 or 64", f)
		}
	default:
		if bits != "" {
			return Item{}, fmt.Sprintf("unknown format %q: %s takes no bits", f, letter)
		}
	}
	return it, ""
}

// enumName says whether s is an enum's name in the trace: a C
// identifier, perhaps with ".N" after it, of at most abi.ArgEnumMax
// bytes.
func enumName(s string) bool {
	id, n, dot := strings.Cut(s, ".")
	if s == "" || len(s) > abi.ArgEnumMax || (dot && (n == "" || strings.Trim(n, "0123456789") != "")) {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return id != ""
}

// Text is entries as FTRACE_ARGS (ret false) or FTRACE_RETVAL text, in
// canonical form.
func Text(entries []Entry, ret bool) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(e.Glob)
		if ret {
			b.WriteString("/" + e.Items[0].String())
			continue
		}
		b.WriteByte('@')
		for k, it := range e.Items {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(it.String())
		}
	}
	return b.String()
}
