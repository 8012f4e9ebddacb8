package argspec

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"ftpatch/arch"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// The grammar of FTRACE_ARGS and FTRACE_RETVAL (`ftpatch record -A`,
// `-R`), the one the runtime's parser (runtime/src/tracers/argspec.c) reads;
// TestRuntimeParser holds the two to the same verdicts:
//
//	FTRACE_ARGS   = entry { ";" entry }     entry = GLOB "@" item { "," item }
//	FTRACE_RETVAL = entry { ";" entry }     entry = GLOB [ "/" ( format | "*" LAYOUT ) ]
//	item   = [ "*" ] "arg" N [ "/" format ] | "fparg" N [ "/" format ]
//	       | [ "*" ] "stack+" OFF [ "/" format ] | "arg" N "+fparg" M "/" LAYOUT | "?"
//	format = ("d" | "i" | "u" | "x") [ bits ] | "p" | "s" | "c" | "b" | "e:" ENUM
//	       | "f" [ fbits ] | LAYOUT
//	bits   = "8" | "16" | "32" | "64"     fbits = "32" | "64" | "80" | "128"
//
// Empty entries are skipped. A GLOB (fnmatch's) holds no ';', '@', ',',
// '/', space or control character. N counts from 1 (no leading 0).
//
// argN is the Nth integer or pointer argument: the registers the
// architecture passes them in (x86-64 6, arm64 8), then the stack's
// words in order, as if every argument on the stack before it were one
// (true of a function whose stack arguments are all integers and
// pointers; elsewhere stack+OFF says where). fpargN is the Nth
// floating-point argument register (8 on both). stack+OFF is the stack
// argument at byte OFF of the stack arguments (a multiple of 8; 0 is
// the first, as the calling convention counts them: x86-64 just above
// the return address, arm64 at the stack pointer at the entry). What
// an item reads of the stack lies in its first abi.ArgStackMax bytes.
// An entry holds at most abi.ArgMax items.
//
// Formats: integers of each width (d and i signed, u unsigned, x hex,
// 64 bits unless said), p a pointer, s the C string it points to, c a
// char, b a bool, e:ENUM an enum by name (a C identifier, with ".N"
// after it when two enums of one name differ, of at most
// abi.ArgEnumMax bytes); f a floating-point value (64 bits unless
// said): f32 and f64 in a vector register or a stack word, f128 (IEEE
// binary128: arm64's long double, x86-64's __float128) in a whole
// vector register or two stack words, f80 (x86-64's long double, the
// x87's extended format) in two stack words, as x86-64 passes it; a
// LAYOUT (package ftpatch/trace's: {i32,i32}) the struct whose members
// it lists: in argN's register and the next (at most 16 bytes), in
// vector registers from fpargN's on (only floats: x86-64 an eightbyte a
// register, arm64 a member a register, a homogeneous aggregate of at
// most 4), at stack+OFF, or, after "*", where the pointer in argN or at
// stack+OFF points (arm64's struct over 16 bytes, passed by reference).
// argN+fpargM/LAYOUT is x86-64's struct in both kinds of registers (at
// most 16 bytes): each eightbyte from the next register of its class,
// those holding only floats from fpargM on, the others from argN on.
//
// In FTRACE_RETVAL a format f reads the floating-point return register
// (f80: x86-64's st0), a LAYOUT the return registers (16 bytes at most:
// x86-64 each eightbyte from the next of its class, rax and rdx or, when
// it holds only floats, xmm0 and xmm1; arm64 x0 and x1, or v0-v3 for a
// homogeneous aggregate), "*" LAYOUT (x86-64) the struct returned in
// memory, whose address rax holds; any other format the integer
// register; "?" shows that there is a value not shown.

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
	Float                 // f, f32, f64, f80, f128: a floating-point value
	Struct                // {...}: a struct's members, by its layout
)

// An Item is one value to record: an argument, or a return value.
type Item struct {
	Fmt    Format
	FP     bool   // in floating-point registers (fpargN; a return value's f, or a layout of floats)
	N      int    // argN, fpargN: N; 0 for a return value, stack+OFF or Unknown
	FPN    int    // argN+fpargM: M, where the floating-point eightbytes of an x86-64 struct in both kinds of registers start
	Stack  bool   // stack+OFF
	Off    int    // stack+OFF: OFF, in bytes
	Deref  bool   // "*": the struct the pointer there points to
	Bits   int    // Int, Uint, Hex: 8, 16, 32 or 64; Float: 32, 64, 80 or 128; else 0
	Enum   string // Enum: the enum's name in the trace's enums
	Layout string // Struct: its layout, canonical ({i32,i32})
}

// String is the item's canonical form (argN/i32, fpargN/f64,
// stack+16/f80, *arg2/{i64,i64,i64}, ?): every spelling of one item has
// one. A return value's lacks the place and its "/".
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
	case Struct:
		f = it.Layout
	}
	deref := ""
	if it.Deref {
		deref = "*"
	}
	switch {
	case it.Stack:
		return fmt.Sprintf("%sstack+%d/%s", deref, it.Off, f)
	case it.N == 0:
		return deref + f
	case it.FP:
		return fmt.Sprintf("fparg%d/%s", it.N, f)
	case it.FPN > 0:
		return fmt.Sprintf("arg%d+fparg%d/%s", it.N, it.FPN, f)
	}
	return fmt.Sprintf("%sarg%d/%s", deref, it.N, f)
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
// arguments in: argN up to ints is a register, fpargN up to fps.
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
			return nil, &SpecError{e, "want FUNC@ITEMS (argN[/FMT], fpargN[/FMT], stack+OFF[/FMT], ?), separated by commas"}
		}
		if err := checkGlob(glob); err != "" {
			return nil, &SpecError{e, err}
		}
		var its []Item
		for _, one := range splitItems(items) {
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

// splitItems splits items at the commas outside a layout's braces.
func splitItems(items string) []string {
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(items); i++ {
		switch items[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, items[from:i])
				from = i + 1
			}
		}
	}
	return append(out, items[from:])
}

// ParseRetval reads an FTRACE_RETVAL text for a program of arch a.
func ParseRetval(s string, a arch.Arch) ([]Entry, error) {
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
			if it, err = parseRet(f, a); err != "" {
				return nil, &SpecError{e, err}
			}
		}
		out = append(out, Entry{glob, []Item{it}})
	}
	return out, nil
}

// parseRet reads a return value's format.
func parseRet(f string, a arch.Arch) (Item, string) {
	if f == "?" {
		return Item{}, ""
	}
	if l, ok := strings.CutPrefix(f, "*"); ok {
		if a != arch.X86_64 {
			return Item{}, fmt.Sprintf("format %q: %v returns no address of a struct it returns in memory", f, a)
		}
		if !strings.HasPrefix(l, "{") {
			return Item{}, fmt.Sprintf("format %q: * is for a struct ({...}) returned in memory", f)
		}
		it, err := parseFormat(l, inRet, a)
		it.Deref = true
		return it, err
	}
	it, err := parseFormat(f, inRet, a)
	if err != "" || it.Fmt != Struct {
		return it, err
	}
	lay, _ := trace.ParseLayout(it.Layout)
	count, lo, hi := lay.Floats()
	switch {
	case a == arch.ARM64 && count >= 1 && count <= 4 && lo == hi:
		it.FP = true // a homogeneous aggregate: v0-v3, a member each
	case a == arch.X86_64 && count > 0 && hi <= 64:
		it.FP = true // SSE eightbytes: xmm0, xmm1
	case a == arch.X86_64 && count > 0:
		return Item{}, fmt.Sprintf("format %q: x86_64 returns a struct with a long double in memory (*{...})", f)
	}
	if lay.Size() > 16 && !it.FP {
		return Item{}, fmt.Sprintf("format %q: %d bytes: a struct in registers has at most 16", f, lay.Size())
	}
	if lay.Size() > 16 && a == arch.X86_64 {
		return Item{}, fmt.Sprintf("format %q: %d bytes: x86_64 returns a struct over 16 bytes in memory (*{...})", f, lay.Size())
	}
	return it, ""
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

// wantItem is what parseItem says of an item it cannot read.
const wantItem = "want argN[/FMT], fpargN[/FMT], stack+OFF[/FMT], *argN/{...}, *stack+OFF/{...}, argN+fpargM/{...} or ?"

// parseItem reads one FTRACE_ARGS item.
func parseItem(s string, a arch.Arch) (Item, string) {
	if s == "?" {
		return Item{}, ""
	}
	ints, fps := Regs(a)
	rest, deref := strings.CutPrefix(s, "*")
	var it Item
	name, w := "arg", inInt
	switch {
	case strings.HasPrefix(rest, "fparg") && !deref:
		it.FP, name, w = true, "fparg", inFP
	case strings.HasPrefix(rest, "arg"):
	case strings.HasPrefix(rest, "stack+"):
		it.Stack, name, w = true, "stack+", inStack
	default:
		return Item{}, fmt.Sprintf("item %q: %s", s, wantItem)
	}
	num, f, hasF := strings.Cut(rest[len(name):], "/")
	fpn, mixed := "", false
	if name == "arg" && !deref {
		num, fpn, mixed = strings.Cut(num, "+fparg")
	}
	first := "1"
	if it.Stack {
		first = "0"
	}
	if !number(num, it.Stack) {
		return Item{}, fmt.Sprintf("item %q: want a number from %s after %q", s, first, name)
	}
	if mixed {
		if !number(fpn, false) {
			return Item{}, fmt.Sprintf("item %q: want a number from 1 after \"+fparg\"", s)
		}
		if it.FPN, _ = strconv.Atoi(fpn); len(fpn) > 2 || it.FPN > fps {
			return Item{}, fmt.Sprintf("item %q: %v passes %d floating-point arguments in registers (fparg1-fparg%d)", s, a, fps, fps)
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n > 1<<20 {
		n = 1 << 20 // past every limit, and a multiple of 8
	}
	switch {
	case it.Stack && n%8 != 0:
		return Item{}, fmt.Sprintf("item %q: the stack's arguments are 8-byte words: OFF is a multiple of 8", s)
	case it.Stack:
		it.Off = n
	case it.FP && n > fps:
		return Item{}, fmt.Sprintf("item %q: %v passes %d floating-point arguments in registers (fparg1-fparg%d); one on the stack is stack+OFF/f64", s, a, fps, fps)
	default:
		it.N = n
	}
	it.Fmt, it.Bits = Int, 64
	if it.FP {
		it.Fmt = Float
	}
	if hasF {
		g, msg := parseFormat(f, w, a)
		if msg != "" {
			return Item{}, fmt.Sprintf("item %q: %s", s, msg)
		}
		g.FP, g.N, g.FPN, g.Stack, g.Off = it.FP, it.N, it.FPN, it.Stack, it.Off
		it = g
	}
	if deref && it.Fmt != Struct {
		return Item{}, fmt.Sprintf("item %q: * reads the struct a pointer points to: its format is {...}", s)
	}
	if mixed {
		if msg := fitMixed(it, a, ints, fps); msg != "" {
			return Item{}, fmt.Sprintf("item %q: %s", s, msg)
		}
		return it, ""
	}
	it.Deref = deref
	// What the item reads: size bytes, of the stack from stack when it
	// lies there (argN past the registers, stack+OFF).
	size, stack := 8, -1
	switch {
	case it.Stack:
		stack = it.Off
	case !it.FP && it.N > ints:
		stack = 8 * (it.N - ints - 1)
	}
	if it.Fmt == Float && it.Bits > 64 {
		size = 16
	}
	if it.Fmt == Struct && !it.Deref {
		lay, _ := trace.ParseLayout(it.Layout)
		size = (lay.Size() + 7) / 8 * 8
		if msg := fitLayout(lay, it, a, fps); msg != "" {
			return Item{}, fmt.Sprintf("item %q: %s", s, msg)
		}
	}
	if stack >= 0 && stack+size > abi.ArgStackMax {
		if it.Stack {
			return Item{}, fmt.Sprintf("item %q: it reads past the first %d bytes of the stack's arguments, the most an item reads", s, abi.ArgStackMax)
		}
		return Item{}, fmt.Sprintf("item %q: %v's arg1-arg%d are registers, arg%d-arg%d the stack's words after them, in the first %d bytes of its arguments there", s, a, ints, ints+1, ints+(abi.ArgStackMax-size)/8+1, abi.ArgStackMax)
	}
	return it, ""
}

// number says whether s is a decimal number without a leading zero (0
// itself when zero).
func number(s string, zero bool) bool {
	return s != "" && strings.Trim(s, "0123456789") == "" && (s[0] != '0' || zero && len(s) == 1)
}

// fitMixed says what is wrong with argN+fpargM item it on arch a (ints
// and fps registers of each kind), or "".
func fitMixed(it Item, a arch.Arch, ints, fps int) string {
	if a != arch.X86_64 {
		return fmt.Sprintf("%v passes a struct in one kind of register: argN/{...} or fpargN/{...}", a)
	}
	if it.Fmt != Struct {
		return "argN+fpargM is a struct in both kinds of registers: its format is {...}"
	}
	lay, _ := trace.ParseLayout(it.Layout)
	words := (lay.Size() + 7) / 8
	inInts := bits.OnesCount64(lay.Integers() & (1<<words - 1))
	switch {
	case lay.Size() > 16:
		return fmt.Sprintf("%d bytes: a struct in registers has at most 16 (two)", lay.Size())
	case it.N > ints || it.N+inInts-1 > ints:
		return fmt.Sprintf("its integer eightbytes take arg%d-arg%d, past arg%d", it.N, it.N+inInts-1, ints)
	case it.FPN+words-inInts-1 > fps:
		return fmt.Sprintf("its floating-point eightbytes take fparg%d-fparg%d, past fparg%d", it.FPN, it.FPN+words-inInts-1, fps)
	}
	return ""
}

// fitLayout says what is wrong with struct item it, of layout lay, in
// the registers it names on arch a (fps vector registers), or "".
func fitLayout(lay *trace.Layout, it Item, a arch.Arch, fps int) string {
	count, lo, hi := lay.Floats()
	words := (lay.Size() + 7) / 8
	switch {
	case it.Stack:
	case it.FP && a == arch.ARM64 && (count > 4 || lo != hi):
		return "in vector registers, arm64 passes a struct of 1 to 4 floating-point members of one type, one a register"
	case it.FP && a == arch.ARM64 && it.N+count-1 > fps:
		return fmt.Sprintf("its %d members take fparg%d-fparg%d, past fparg%d", count, it.N, it.N+count-1, fps)
	case it.FP && a == arch.ARM64:
	case it.FP && hi > 64:
		return "in vector registers, x86_64 passes a struct of floats and doubles, an eightbyte a register"
	case lay.Size() > 16:
		return fmt.Sprintf("%d bytes: a struct in registers has at most 16 (two)", lay.Size())
	case it.FP && it.N+words-1 > fps:
		return fmt.Sprintf("its %d bytes take fparg%d-fparg%d, past fparg%d", lay.Size(), it.N, it.N+words-1, fps)
	}
	return ""
}

// Where a format's value is: an integer argument register, a
// floating-point one, the stack, or a return value.
type place uint8

const (
	inInt place = iota
	inFP
	inStack
	inRet
)

// parseFormat reads a format of a value in w, on arch a.
func parseFormat(f string, w place, a arch.Arch) (Item, string) {
	if strings.HasPrefix(f, "{") {
		l, err := trace.ParseLayout(f)
		if err != nil {
			return Item{}, strings.TrimPrefix(err.Error(), trace.ErrLayout.Error()+": ")
		}
		if count, _, _ := l.Floats(); w == inFP && count == 0 {
			return Item{}, fmt.Sprintf("format %q: a struct in vector registers holds only floating-point members", f)
		}
		return Item{Fmt: Struct, Layout: l.String()}, ""
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
			return Item{}, "format f is for fpargN or stack+OFF: an integer register holds no float"
		}
		it.Fmt, it.FP = Float, w != inStack
	case "d", "i", "u", "x", "p", "s", "c", "b":
		if w == inFP {
			return Item{}, fmt.Sprintf("format %q: a floating-point argument's is f, f32, f64, f128 or {...}", f)
		}
		it.Fmt = map[string]Format{"d": Int, "i": Int, "u": Uint, "x": Hex, "p": Ptr, "s": String, "c": Char, "b": Bool}[letter]
	default:
		return Item{}, fmt.Sprintf("unknown format %q: want d i u x (8 16 32 or 64 bits after: i32), p s c b, e:ENUM, f f32 f64 f80 f128 (floating point) or {...} (a struct)", f)
	}
	switch it.Fmt {
	case Int, Uint, Hex, Float:
		it.Bits = 64
		switch bits {
		case "":
		case "8", "16", "32", "64":
			it.Bits, _ = strconv.Atoi(bits)
			if it.Fmt == Float && it.Bits < 32 {
				return Item{}, fmt.Sprintf("format %q: a float has 32, 64, 80 or 128 bits", f)
			}
		case "80", "128":
			if it.Fmt != Float {
				return Item{}, fmt.Sprintf("format %q: bits are 8, 16, 32 or 64", f)
			}
			it.Bits, _ = strconv.Atoi(bits)
			if it.Bits == 80 && a != arch.X86_64 {
				return Item{}, fmt.Sprintf("format %q: %v has no 80-bit long double (its long double is f128)", f, a)
			}
			if it.Bits == 80 && w == inFP {
				return Item{}, fmt.Sprintf("format %q: no vector register holds one: x86_64 passes a long double on the stack (stack+OFF/f80)", f)
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
