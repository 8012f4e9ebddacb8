package argspec

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"

	"ftpatch/arch"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// Placing a function's parameters and return value where the C calling
// convention of each architecture puts them, and choosing each one's
// format from its type.
//
// x86-64 (the System V ABI, 3.2.3): each parameter is classified by its
// eightbytes. An integer, pointer, enum, bool or char takes the next
// integer register, a float or double the next vector register, a
// __float128 a whole one; a long double (class X87) and a struct or
// union over 16 bytes, or with a long double or an unaligned member, go
// on the stack (class MEMORY) and take no register. A struct or union of
// at most 16 bytes takes, for each eightbyte, an integer register if any
// member there is an integer (INTEGER) or else a vector register (SSE),
// and goes on the stack whole when the registers it needs are not all
// left; __int128 takes two integer registers, complex float one vector
// register, complex double two, complex long double the stack. A
// function that returns a struct in memory takes the address of its
// return value as a hidden first integer argument, and returns it in
// rax.
//
// arm64 (AAPCS64, 6.8.2): integers and pointers take x0-x7 (NGRN),
// floating-point values v0-v7 (NSRN), a long double (binary128) one
// vector register; a homogeneous floating-point aggregate (1-4 members
// of one floating type, a complex among them) takes a vector register
// per member when they are all left, else goes on the stack and no
// vector register is used after it; another aggregate over 16 bytes is
// passed by reference (a pointer in an integer register, or on the
// stack); one of at most 16 bytes takes one or two integer registers
// (an even first one when 16-byte aligned), or the stack, after which no
// integer register is used. The address of a struct returned in memory
// goes in x8, no argument register, and is not kept to the return.
//
// What takes no register goes on the stack, in the order of the
// parameters, each at the next offset its alignment allows (at least 8;
// a long double's, __int128's and such a struct's 16), its size rounded
// up to 8: its item is stack+OFF (argN when it is an integer or pointer
// and every stack word before it is one too, as argN counts them), or ?
// past the abi.ArgStackMax bytes an item reads.
//
// A struct's item shows its members (a layout: {i32,i32}, nested structs
// and arrays in braces), recorded whole: in its integer registers
// (argN/{...}), in its vector registers (fpargN/{...}: all floats), in
// both (x86-64: argN+fpargM/{...}), on the stack, or where arm64's
// pointer to it points (*argN/{...}); its first abi.ArgStructMax bytes,
// "..." after them. One whose members C would not place where they are
// (a packed struct, a bit-field, a union) shows its bytes as hex words.
// __int128 gets "?", its registers or stack counted, so the items after
// it read the right ones. A parameter whose type the DWARF does not give
// ends the items (with "?"): what it takes cannot be told.

// A placer counts what a function's parameters have taken: registers,
// and bytes of the stack.
type placer struct {
	arch      arch.Arch
	ints, fps int // registers taken so far
	maxInt    int
	maxFP     int
	stack     int  // bytes of the stack's arguments taken so far
	mixed     bool // a stack word so far holds no integer or pointer: argN cannot name those after it
	enums     *Enums
}

func newPlacer(a arch.Arch, enums *Enums) *placer {
	ints, fps := Regs(a)
	return &placer{arch: a, maxInt: ints, maxFP: fps, enums: enums}
}

// unknown is the "?" item.
var unknown = Item{}

// strip takes typedefs and qualifiers off t.
func strip(t godwarf.Type) godwarf.Type {
	for {
		switch u := t.(type) {
		case *godwarf.TypedefType:
			t = u.Type
		case *godwarf.QualType:
			t = u.Type
		default:
			return t
		}
	}
}

// scalarFormat is the item of an integer-class scalar of type t (its
// place left for the caller to set), ok false when t is no such
// scalar.
func (p *placer) scalarFormat(t godwarf.Type) (Item, bool) {
	switch u := strip(t).(type) {
	case *godwarf.IntType:
		return sized(Int, u.ByteSize)
	case *godwarf.UintType:
		return sized(Uint, u.ByteSize)
	case *godwarf.CharType:
		if u.Name == "char" {
			return Item{Fmt: Char}, u.ByteSize == 1
		}
		return sized(Int, u.ByteSize)
	case *godwarf.UcharType:
		if u.Name == "char" {
			return Item{Fmt: Char}, u.ByteSize == 1
		}
		return sized(Uint, u.ByteSize)
	case *godwarf.BoolType:
		return Item{Fmt: Bool}, u.ByteSize == 1
	case *godwarf.EnumType:
		if u.ByteSize < 1 || u.ByteSize > 8 || bits.OnesCount64(uint64(u.ByteSize)) != 1 {
			return Item{}, false
		}
		return Item{Fmt: Enum, Enum: p.enums.key(u)}, true
	case *godwarf.PtrType:
		if c, ok := strip(u.Type).(*godwarf.CharType); ok && c.Name == "char" {
			return Item{Fmt: String}, true
		}
		if c, ok := strip(u.Type).(*godwarf.UcharType); ok && c.Name == "char" {
			return Item{Fmt: String}, true // arm64's char is unsigned
		}
		return Item{Fmt: Ptr}, true
	case *godwarf.FuncType, *godwarf.UnspecifiedType: // a function (pointer), C++'s nullptr_t
		return Item{Fmt: Ptr}, u.Size() == 8 || u.Size() <= 0
	}
	return Item{}, false
}

func sized(f Format, size int64) (Item, bool) {
	switch size {
	case 1, 2, 4, 8:
		return Item{Fmt: f, Bits: int(8 * size)}, true
	}
	return Item{}, false
}

// floatBits is the bits a floating-point scalar of type t is recorded
// as: 32, 64, 80 (x86-64's long double: the x87's extended format, in
// 16 bytes) or 128 (binary128: arm64's long double, __float128); 0 when
// t is not a floating-point scalar.
func (p *placer) floatBits(t godwarf.Type) int {
	f, ok := strip(t).(*godwarf.FloatType)
	if !ok {
		return 0
	}
	switch f.ByteSize {
	case 4, 8:
		return int(8 * f.ByteSize)
	case 16:
		if p.arch == arch.X86_64 && !strings.Contains(f.Name, "128") {
			return 80
		}
		return 128
	}
	return 0
}

// intReg takes the next integer register for it, or else its word of
// the stack.
func (p *placer) intReg(it Item) Item {
	if p.ints == p.maxInt {
		return p.onStack(it, 8, 8)
	}
	p.ints++
	it.N, it.FP = p.ints, false
	return it
}

// fpReg takes the next vector register for it, or else its word of the
// stack (two: f128).
func (p *placer) fpReg(it Item) Item {
	if p.fps == p.maxFP {
		size := max(it.Bits/8, 8)
		return p.onStack(it, size, size)
	}
	p.fps++
	it.N, it.FP = p.fps, true
	return it
}

// onStack takes size bytes of the stack, aligned to align, for it:
// stack+OFF, or argN when it is an integer or pointer word and every
// stack word before it is one too (argN's count then names it); ? past
// what an item reads.
func (p *placer) onStack(it Item, size, align int) Item {
	align = max(align, 8)
	off := (p.stack + align - 1) / align * align
	word := it.Fmt != Unknown && it.Fmt != Float && (it.Fmt != Struct || it.Deref)
	named := word && !p.mixed && off == p.stack
	p.mixed = p.mixed || !word || off != p.stack
	p.stack = off + (size+7)/8*8
	read := size
	if it.Deref {
		read = 8 // the pointer
	}
	switch {
	case it.Fmt == Unknown || off+(read+7)/8*8 > abi.ArgStackMax:
		return unknown
	case named:
		it.N, it.FP, it.Stack, it.Off = p.maxInt+off/8+1, false, false, 0
		return it
	}
	it.N, it.FP, it.Stack, it.Off = 0, false, true, off
	return it
}

// checked is it, or ? when the grammar refuses it (as an argument, or a
// return value: ret): a shape of struct the rules above place where no
// format reads it (a packed struct of floats in vector registers) is
// shown as ?, not sent to the runtime to refuse the function's whole
// entry.
func (p *placer) checked(it Item, ret bool) Item {
	if it.Fmt == Unknown {
		return it
	}
	var bad string
	if ret {
		_, bad = parseRet(it.String(), p.arch)
	} else {
		_, bad = parseItem(it.String(), p.arch)
	}
	if bad != "" {
		return unknown
	}
	return it
}

// param places a parameter of type t (nil: the DWARF gives none):
// its items, and done when nothing after it can be placed.
func (p *placer) param(t godwarf.Type) (items []Item, done bool) {
	items, done = p.place1(t)
	for i := range items {
		items[i] = p.checked(items[i], false)
	}
	return items, done
}

func (p *placer) place1(t godwarf.Type) (items []Item, done bool) {
	if t == nil {
		return []Item{unknown}, true
	}
	if it, ok := p.scalarFormat(t); ok {
		return []Item{p.intReg(it)}, false
	}
	switch fb := p.floatBits(t); fb {
	case 32, 64, 128:
		return []Item{p.fpReg(Item{Fmt: Float, Bits: fb})}, false
	case 80:
		return []Item{p.onStack(Item{Fmt: Float, Bits: 80}, 16, 16)}, false // class X87
	}
	switch u := strip(t).(type) {
	case *godwarf.IntType, *godwarf.UintType: // __int128
		if u.Size() != 16 {
			return []Item{unknown}, true
		}
		if p.arch == arch.ARM64 {
			p.ints += p.ints & 1 // an even register first
		}
		if p.ints+2 > p.maxInt {
			if p.arch == arch.ARM64 {
				p.ints = p.maxInt // no integer register is used after it
			}
			p.onStack(unknown, 16, 16)
			return []Item{unknown}, false
		}
		p.ints += 2
		return []Item{unknown}, false
	case *godwarf.ComplexType, *godwarf.StructType, *godwarf.ArrayType:
		a, ok := p.aggregate(u)
		if !ok {
			return []Item{unknown}, true
		}
		return p.place(a), false
	}
	return []Item{unknown}, true
}

// An agg is an aggregate argument or return value: its layout (the
// struct format recorded) and what the calling convention asks of it.
type agg struct {
	layout    string  // {i32,i32}, its first abi.ArgStructMax bytes
	size      int64   // bytes
	align     int64   // its alignment
	memory    bool    // x86-64: class MEMORY (over 16 bytes, a long double or unaligned member)
	classes   []class // x86-64: each eightbyte's, when not in memory
	hfa       int     // arm64: members of a homogeneous floating-point aggregate (0: none)
	ms        []member
	floatOnly bool // every member is floating point
}

// An eightbyte's class (x86-64).
type class uint8

const (
	classNone class = iota
	classSSE
	classInteger
)

// A member is a scalar inside an aggregate, at its byte offset.
type member struct {
	t   godwarf.Type
	off int64
}

// aggregate reads struct, union, array or complex t; ok false when a
// member's type is not known.
func (p *placer) aggregate(t godwarf.Type) (agg, bool) {
	var ms []member
	if !flatten(t, 0, &ms) {
		return agg{}, false
	}
	a := agg{size: t.Size(), align: 1, ms: ms, floatOnly: len(ms) > 0}
	for _, m := range ms {
		a.align = max(a.align, min(m.t.Size(), 16))
		a.floatOnly = a.floatOnly && p.floatBits(m.t) != 0
	}
	a.layout = p.layoutOf(t)
	if p.arch == arch.ARM64 {
		if fb := p.floatBits(firstOr(ms)); fb > 0 && len(ms) <= 4 && p.sameFloat(ms, fb) {
			a.hfa = len(ms)
		}
		return a, true
	}
	a.memory = a.size > 16
	a.classes = make([]class, (a.size+7)/8)
	for _, m := range ms {
		sz := m.t.Size()
		if sz <= 0 || m.off%min(sz, 8) != 0 || (m.off%8)+sz > 8 && sz <= 8 || p.floatBits(m.t) > 64 {
			a.memory = true // unaligned, or a long double (X87): MEMORY
			continue
		}
		if e := m.off / 8; e < int64(len(a.classes)) {
			if p.floatBits(m.t) == 0 {
				a.classes[e] = classInteger
			} else if a.classes[e] == classNone {
				a.classes[e] = classSSE
			}
		}
	}
	return a, true
}

// place places aggregate a as a parameter: its items.
func (p *placer) place(a agg) []Item {
	st := Item{Fmt: Struct, Layout: a.layout}
	if a.size == 0 {
		return []Item{unknown} // an empty struct: nothing passed
	}
	if p.arch == arch.ARM64 {
		switch {
		case a.hfa > 0 && p.fps+a.hfa <= p.maxFP:
			p.fps += a.hfa
			st.N, st.FP = p.fps-a.hfa+1, true
			return []Item{st}
		case a.hfa > 0:
			p.fps = p.maxFP
			return []Item{p.onStack(st, int(a.size), int(a.align))}
		case a.size > 16:
			st.Deref = true // by reference
			return []Item{p.intReg(st)}
		}
		words := int((a.size + 7) / 8)
		if a.align == 16 {
			p.ints += p.ints & 1
		}
		if p.ints+words > p.maxInt {
			p.ints = p.maxInt
			return []Item{p.onStack(st, int(a.size), int(a.align))}
		}
		p.ints += words
		st.N = p.ints - words + 1
		return []Item{st}
	}
	if a.memory {
		return []Item{p.onStack(st, int(a.size), int(a.align))}
	}
	needInt, needFP := 0, 0
	for _, c := range a.classes {
		if c == classSSE {
			needFP++
		} else {
			needInt++
		}
	}
	switch {
	case p.ints+needInt > p.maxInt || p.fps+needFP > p.maxFP:
		return []Item{p.onStack(st, int(a.size), int(a.align))} // not all in registers: on the stack, whole
	case needFP == 0:
		p.ints += needInt
		st.N = p.ints - needInt + 1
		return []Item{st}
	case needInt == 0:
		p.fps += needFP
		st.N, st.FP = p.fps-needFP+1, true
		return []Item{st}
	}
	// In both kinds of registers: argN+fpargM, when the layout's
	// eightbytes are of the classes the struct's are (its members'
	// layout, not hex words in their place).
	st.N, st.FPN = p.ints+1, p.fps+1
	p.ints += needInt
	p.fps += needFP
	if !a.layoutClasses() {
		return []Item{unknown}
	}
	return []Item{st}
}

// layoutClasses says whether a's layout has a's eightbyte classes: the
// same eightbytes hold more than floats.
func (a agg) layoutClasses() bool {
	lay, err := trace.ParseLayout(a.layout)
	if err != nil {
		return false
	}
	var want uint64
	for e, c := range a.classes {
		if c != classSSE {
			want |= 1 << e
		}
	}
	return lay.Integers()&(1<<len(a.classes)-1) == want
}

// flatten lists the scalars of struct, union, array or complex t at off
// into ms; false when a member's type is not known.
func flatten(t godwarf.Type, off int64, ms *[]member) bool {
	switch u := strip(t).(type) {
	case *godwarf.StructType:
		if u.Incomplete {
			return false
		}
		for _, f := range u.Field {
			if !flatten(f.Type, off+f.ByteOffset, ms) {
				return false
			}
		}
		return true
	case *godwarf.ArrayType:
		elem := u.Type.Size()
		if u.Count < 0 {
			return false // char x[]: a flexible member, of no size
		}
		if elem <= 0 {
			return u.Count == 0
		}
		for i := range u.Count {
			if !flatten(u.Type, off+i*elem, ms) {
				return false
			}
		}
		return true
	case *godwarf.ComplexType:
		half := halfOf(u)
		*ms = append(*ms, member{half, off}, member{half, off + u.ByteSize/2})
		return true
	}
	if u := strip(t); u.Size() > 0 {
		*ms = append(*ms, member{u, off})
		return true
	}
	return false
}

// halfOf is the floating-point type of a complex's two parts.
func halfOf(c *godwarf.ComplexType) godwarf.Type {
	name := "double"
	switch {
	case c.ByteSize == 8:
		name = "float"
	case c.ByteSize == 32 || strings.Contains(c.Name, "long"):
		name = "long double"
	}
	return &godwarf.FloatType{BasicType: godwarf.BasicType{CommonType: godwarf.CommonType{ByteSize: c.ByteSize / 2, Name: name}}}
}

func firstOr(ms []member) godwarf.Type {
	if len(ms) == 0 {
		return nil
	}
	return ms[0].t
}

// sameFloat says whether every member of ms is a float of fb bits.
func (p *placer) sameFloat(ms []member, fb int) bool {
	for _, m := range ms {
		if p.floatBits(m.t) != fb {
			return false
		}
	}
	return true
}

// A part is a member of a layout being made: its text, bytes and
// alignment.
type part struct {
	text        string
	size, align int64
}

// layoutOf is the struct format of aggregate t: its members as a layout
// ({i32,{c,c}}), cut to what a record holds ("..." after); its bytes in
// hex words when C would not place those members where t has them.
func (p *placer) layoutOf(t godwarf.Type) string {
	parts, size, ok := p.parts(t)
	if !ok || size != sizeOf(t) {
		var ms []member
		flatten(t, 0, &ms)
		a := int64(1)
		for _, m := range ms {
			a = max(a, min(m.t.Size(), 8))
		}
		parts = hexWords(sizeOf(t), a)
	}
	return cut(parts, sizeOf(t))
}

// sizeOf is the bytes of type t; an array's, its elements' (godwarf
// may not know an array member's own).
func sizeOf(t godwarf.Type) int64 {
	if a, ok := strip(t).(*godwarf.ArrayType); ok {
		return max(a.Count, 0) * sizeOf(a.Type)
	}
	return t.Size()
}

// hexWords are parts of align bytes (1, 2, 4 or 8) in hex covering size
// bytes, the way C would place them.
func hexWords(size, align int64) []part {
	var out []part
	for size > 0 {
		n := min(align, size)
		for n&(n-1) != 0 {
			n &= n - 1
		}
		out = append(out, part{"x" + strconv.Itoa(int(8*n)), n, n})
		size -= n
	}
	return out
}

// cut is the layout of parts, size bytes, the first of them that fit a
// record (abi.ArgStructMax bytes, abi.ArgLayoutMax of text) with "..."
// after when not all do; the first bytes in hex words when none does.
func cut(parts []part, size int64) string {
	for n := len(parts); n > 0; n-- {
		var texts []string
		var at, align int64 = 0, 1
		for _, pt := range parts[:n] {
			at = (at+pt.align-1)/pt.align*pt.align + pt.size
			align = max(align, pt.align)
			texts = append(texts, pt.text)
		}
		at = (at + align - 1) / align * align
		if n < len(parts) {
			texts = append(texts, "...")
		}
		text := "{" + strings.Join(texts, ",") + "}"
		if at <= abi.ArgStructMax && len(text) <= abi.ArgLayoutMax {
			return text
		}
	}
	var texts []string
	for _, pt := range hexWords(min(size, abi.ArgStructMax), 8) {
		texts = append(texts, pt.text)
	}
	if size > abi.ArgStructMax {
		texts = append(texts, "...")
	}
	return "{" + strings.Join(texts, ",") + "}"
}

// parts are the members of aggregate t as a layout's, with the bytes C
// gives them; ok false when a member is not where C would place it (a
// packed struct, a bit-field, a union) or cannot be shown.
func (p *placer) parts(t godwarf.Type) (parts []part, size int64, ok bool) {
	var align int64 = 1
	add := func(pt part, at int64) bool {
		off := (size + pt.align - 1) / pt.align * pt.align
		if off != at {
			return false
		}
		parts = append(parts, pt)
		size, align = off+pt.size, max(align, pt.align)
		return true
	}
	switch u := strip(t).(type) {
	case *godwarf.StructType:
		if u.Kind == "union" || u.Incomplete {
			return nil, 0, false
		}
		for _, f := range u.Field {
			pt, ok := p.memberPart(f.Type)
			if !ok || f.BitSize != 0 || !add(pt, f.ByteOffset) {
				return nil, 0, false
			}
		}
	case *godwarf.ArrayType:
		pt, ok := p.memberPart(u.Type)
		if !ok || u.Count <= 0 {
			return nil, 0, false
		}
		for i := range u.Count {
			if !add(pt, i*pt.size) {
				return nil, 0, false
			}
		}
	case *godwarf.ComplexType:
		pt, ok := p.memberPart(halfOf(u))
		if !ok || !add(pt, 0) || !add(pt, pt.size) {
			return nil, 0, false
		}
	default:
		return nil, 0, false
	}
	return parts, (size + align - 1) / align * align, len(parts) > 0
}

// memberPart is the part of a member of type t: a scalar's format, or a
// nested aggregate's layout in braces.
func (p *placer) memberPart(t godwarf.Type) (part, bool) {
	if it, ok := p.scalarFormat(t); ok {
		size := strip(t).Size()
		switch it.Fmt {
		case Char, Bool:
			return part{it.String(), 1, 1}, true
		case Ptr, String:
			return part{"p", 8, 8}, true
		case Enum:
			e := p.enums.byKey[it.Enum]
			f := "u"
			if e.Signed {
				f = "i"
			}
			return part{f + strconv.Itoa(int(8*size)), size, size}, true
		}
		return part{it.String(), size, size}, true
	}
	if fb := p.floatBits(t); fb != 0 {
		size := int64(max(fb/8, 16*(fb/80)))
		return part{"f" + strconv.Itoa(fb), size, size}, true
	}
	parts, size, ok := p.parts(t)
	if !ok || size != sizeOf(t) {
		return part{}, false
	}
	texts := make([]string, len(parts))
	var align int64 = 1
	for i, pt := range parts {
		texts[i] = pt.text
		align = max(align, pt.align)
	}
	return part{"{" + strings.Join(texts, ",") + "}", size, align}, true
}

// ret is the item of a return value of type t (nil: void), and whether
// its address is passed as a hidden first argument (x86-64's MEMORY
// class).
func (p *placer) ret(t godwarf.Type) (it *Item, hidden bool) {
	it, hidden = p.ret1(t)
	if it != nil {
		c := p.checked(*it, true)
		it = &c
	}
	return it, hidden
}

func (p *placer) ret1(t godwarf.Type) (it *Item, hidden bool) {
	if t == nil {
		return nil, false
	}
	if _, void := strip(t).(*godwarf.VoidType); void {
		return nil, false
	}
	if f, ok := p.scalarFormat(t); ok {
		return &f, false
	}
	if fb := p.floatBits(t); fb != 0 {
		return &Item{Fmt: Float, Bits: fb, FP: true}, false
	}
	switch u := strip(t).(type) {
	case *godwarf.ComplexType, *godwarf.StructType, *godwarf.ArrayType:
		a, ok := p.aggregate(u)
		if !ok || a.size == 0 {
			return &unknown, p.arch == arch.X86_64 && u.Size() > 16
		}
		st := Item{Fmt: Struct, Layout: a.layout}
		if p.arch == arch.ARM64 {
			switch {
			case a.hfa > 0:
				st.FP = true
			case a.size > 16:
				return &unknown, false // its address, in x8, is not kept
			}
			return &st, false
		}
		if _, complexX87 := u.(*godwarf.ComplexType); complexX87 && a.memory {
			return &unknown, false // in st0 and st1
		}
		if a.memory {
			st.Deref = true // rax holds its address
			return &st, true
		}
		st.FP = a.floatOnly // xmm0, xmm1; else each eightbyte from the next register of its class
		if !a.layoutClasses() {
			return &unknown, false
		}
		return &st, false
	}
	return &unknown, false
}

// Enums are the enums the items of a recording name, each under one
// key (its C name, or NAME.N when two of one name differ; "anon" for
// one without a name): what the trace's enums file holds.
type Enums struct {
	byKey map[string]trace.Enum
	keys  []string
}

// NewEnums returns an empty set.
func NewEnums() *Enums { return &Enums{byKey: map[string]trace.Enum{}} }

// key is the key of enum type u, added if new.
func (s *Enums) key(u *godwarf.EnumType) string {
	e := trace.Enum{Name: u.EnumName, Size: int(u.ByteSize)}
	for _, v := range u.Val {
		e.Values = append(e.Values, trace.Enumerator{Name: v.Name, Value: v.Val})
		e.Signed = e.Signed || v.Val < 0
	}
	base := e.Name
	if base == "" {
		base = "anon"
	}
	if len(base) > 48 {
		base = base[:48]
	}
	for n := 1; ; n++ {
		k := base
		if n > 1 || e.Name == "" {
			k = base + "." + strconv.Itoa(n)
		}
		old, ok := s.byKey[k]
		if !ok {
			e.Name = k
			s.byKey[k] = e
			s.keys = append(s.keys, k)
			return k
		}
		if same(old, e) {
			return k
		}
	}
}

func same(a, b trace.Enum) bool {
	if a.Size != b.Size || a.Signed != b.Signed || a.Flags != b.Flags || a.Octal != b.Octal || len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Values {
		if a.Values[i] != b.Values[i] {
			return false
		}
	}
	return true
}

// List is the enums, in the order they were met.
func (s *Enums) List() []trace.Enum {
	out := make([]trace.Enum, len(s.keys))
	for i, k := range s.keys {
		out[i] = s.byKey[k]
	}
	return out
}

// Add adds e under its own name, when no other enum of the set holds
// it (package protos's sets of names for the C library's functions);
// false when a different one does.
func (s *Enums) Add(e trace.Enum) bool {
	if old, ok := s.byKey[e.Name]; ok {
		return same(old, e)
	}
	s.byKey[e.Name] = e
	s.keys = append(s.keys, e.Name)
	return true
}

// Lookup finds the enum named name in the set; ok false when none is.
func (s *Enums) Lookup(name string) (trace.Enum, bool) {
	e, ok := s.byKey[name]
	return e, ok
}

func (k Format) String() string {
	if int(k) < len(formatNames) {
		return formatNames[k]
	}
	return fmt.Sprintf("format(%d)", uint8(k))
}

var formatNames = [...]string{Unknown: "?", Int: "int", Uint: "uint", Hex: "hex", Ptr: "ptr", String: "string", Char: "char", Bool: "bool", Enum: "enum", Float: "float"}

// AddNamed adds the enums of the ELF file at file that names name (C
// names, or typedefs' of enums), each under that name, for -A and -R's
// e:NAME; missing are the names the file's DWARF has no enum of.
func (s *Enums) AddNamed(file string, names []string) (missing []string, err error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, ErrNoDWARF)
	}
	want := map[string]bool{}
	for _, n := range names {
		if _, ok := s.byKey[n]; !ok {
			want[n] = true
		}
	}
	cache := map[dwarf.Offset]godwarf.Type{}
	r := d.Reader()
	for len(want) > 0 {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: reading its DWARF: %w", file, err)
		}
		if e == nil {
			break
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if !want[name] || (e.Tag != dwarf.TagEnumerationType && e.Tag != dwarf.TagTypedef) {
			continue
		}
		t, err := godwarf.ReadType(d, 0, e.Offset, cache)
		if err != nil {
			continue
		}
		u, ok := strip(t).(*godwarf.EnumType)
		if !ok || len(u.Val) == 0 {
			continue
		}
		en := trace.Enum{Name: name, Size: int(u.ByteSize)}
		for _, v := range u.Val {
			en.Values = append(en.Values, trace.Enumerator{Name: v.Name, Value: v.Val})
			en.Signed = en.Signed || v.Val < 0
		}
		s.byKey[name] = en
		s.keys = append(s.keys, name)
		delete(want, name)
	}
	for _, n := range names {
		if want[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}
