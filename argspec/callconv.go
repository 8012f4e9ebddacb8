package argspec

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"

	"ftpatch/arch"
	"ftpatch/trace"
)

// Placing a function's parameters and return value in registers, as the
// C calling convention of each architecture does, and choosing each one's
// format from its type.
//
// x86-64 (the System V ABI, 3.2.3): each parameter is classified by its
// eightbytes. An integer, pointer, enum, bool or char takes the next
// integer register, a float or double the next vector register; a long
// double (class X87) and a struct or union over 16 bytes, or with a
// long double or an unaligned member, go on the stack (class MEMORY) and
// take no register. A struct or union of at most 16 bytes takes, for
// each eightbyte, an integer register if any member there is an integer
// (INTEGER) or else a vector register (SSE), and goes on the stack whole
// when the registers it needs are not all left; __int128 takes two
// integer registers, complex float one vector register, complex double
// two. A function that returns a struct in memory takes the address of
// its return value as a hidden first integer argument.
//
// arm64 (AAPCS64, 6.8.2): integers and pointers take x0-x7 (NGRN),
// floating-point values v0-v7 (NSRN), a long double (128-bit) one vector
// register; a homogeneous floating-point aggregate (1-4 members of one
// floating type) takes a vector register per member when they are all
// left, else goes on the stack and no vector register is used after it;
// another aggregate over 16 bytes is passed by reference (a pointer in
// an integer register); one of at most 16 bytes takes one or two
// integer registers (an even first one when 16-byte aligned), or the
// stack, after which no integer register is used. The address of a
// struct returned in memory goes in x8, no argument register.
//
// Each value in registers gets an item (a struct one per register: an
// integer one /x64, a vector one /f32 or /f64 when one float or double
// fills it); a value that takes no register, or that no format shows
// (long double, __int128, a complex, two floats in one register), gets
// "?", and the registers it took are counted, so the items after it read
// the right ones. A parameter whose type the DWARF does not give ends
// the items (with "?"): what it takes cannot be told.

// A placer counts the registers a function's parameters have taken.
type placer struct {
	arch      arch.Arch
	ints, fps int // taken so far
	maxInt    int
	maxFP     int
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
// register left for the caller to set), ok false when t is no such
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

// floatBits is the bits of a float or double, 16 for a long double, 0
// when t is not a floating-point scalar.
func floatBits(t godwarf.Type) int {
	if f, ok := strip(t).(*godwarf.FloatType); ok {
		return int(8 * f.ByteSize)
	}
	return 0
}

// intReg and fpReg take the next register of their kind for it; "?" when
// none is left (the value is on the stack).
func (p *placer) intReg(it Item) Item {
	if p.ints == p.maxInt {
		return unknown
	}
	p.ints++
	it.N, it.FP = p.ints, false
	return it
}

func (p *placer) fpReg(it Item) Item {
	if p.fps == p.maxFP {
		return unknown
	}
	p.fps++
	it.N, it.FP = p.fps, true
	return it
}

// param places a parameter of type t (nil: the DWARF gives none):
// its items, and done when nothing after it can be placed.
func (p *placer) param(t godwarf.Type) (items []Item, done bool) {
	if t == nil {
		return []Item{unknown}, true
	}
	if it, ok := p.scalarFormat(t); ok {
		return []Item{p.intReg(it)}, false
	}
	switch fb := floatBits(t); fb {
	case 32, 64:
		return []Item{p.fpReg(Item{Fmt: Float, Bits: fb})}, false
	case 80, 128:
		if p.arch == arch.ARM64 && fb == 128 {
			p.fpReg(unknown) // a quad in a vector register
		}
		return []Item{unknown}, false // x86-64: class X87, on the stack
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
				p.ints = p.maxInt
			}
			return []Item{unknown}, false
		}
		p.ints += 2
		return []Item{unknown}, false
	case *godwarf.ComplexType:
		half := &godwarf.FloatType{BasicType: godwarf.BasicType{CommonType: godwarf.CommonType{ByteSize: u.ByteSize / 2}}}
		return p.aggregate([]member{{half, 0}, {half, u.ByteSize / 2}}, u.ByteSize, u.ByteSize/2)
	case *godwarf.StructType:
		if u.Incomplete {
			return []Item{unknown}, true
		}
		var ms []member
		if !flatten(u, 0, &ms) {
			return []Item{unknown}, true
		}
		return p.aggregate(ms, u.ByteSize, alignOf(ms))
	}
	return []Item{unknown}, true
}

// A member is a scalar inside an aggregate, at its byte offset.
type member struct {
	t   godwarf.Type
	off int64
}

// flatten lists the scalars of struct, union or array t at off into ms;
// false when a member's type is not known.
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
		half := &godwarf.FloatType{BasicType: godwarf.BasicType{CommonType: godwarf.CommonType{ByteSize: u.ByteSize / 2}}}
		*ms = append(*ms, member{half, off}, member{half, off + u.ByteSize/2})
		return true
	}
	if u := strip(t); u.Size() > 0 {
		*ms = append(*ms, member{u, off})
		return true
	}
	return false
}

// alignOf is the alignment of an aggregate of ms: its largest scalar's.
func alignOf(ms []member) int64 {
	a := int64(1)
	for _, m := range ms {
		a = max(a, min(m.t.Size(), 16))
	}
	return a
}

// aggregate places a struct, union, array or complex of the scalars ms,
// size bytes, aligned to align.
func (p *placer) aggregate(ms []member, size, align int64) ([]Item, bool) {
	if p.arch == arch.ARM64 {
		return p.arm64Aggregate(ms, size, align), false
	}
	return p.x86Aggregate(ms, size), false
}

// x86Aggregate classifies an aggregate's eightbytes (System V 3.2.3).
func (p *placer) x86Aggregate(ms []member, size int64) []Item {
	if size == 0 {
		return []Item{unknown}
	}
	if size > 16 {
		return []Item{unknown} // MEMORY
	}
	const (
		none = iota
		sse
		integer
	)
	class := make([]int, (size+7)/8)
	var only [2]godwarf.Type // the one scalar filling an SSE eightbyte, if one does
	count := [2]int{}
	for _, m := range ms {
		sz := m.t.Size()
		if sz <= 0 || m.off%min(sz, 8) != 0 || (m.off%8)+sz > 8 && sz <= 8 {
			return []Item{unknown} // unaligned: MEMORY
		}
		if fb := floatBits(m.t); fb > 64 {
			return []Item{unknown} // a long double: X87, MEMORY
		}
		e := m.off / 8
		if floatBits(m.t) == 0 {
			class[e] = integer
		} else if class[e] == none {
			class[e] = sse
		}
		count[e]++
		only[e] = m.t
	}
	needInt, needFP := 0, 0
	for _, c := range class {
		if c == sse {
			needFP++
		} else {
			needInt++
		}
	}
	if p.ints+needInt > p.maxInt || p.fps+needFP > p.maxFP {
		return []Item{unknown} // not all in registers: on the stack, whole
	}
	var items []Item
	for e, c := range class {
		switch {
		case c != sse:
			items = append(items, p.intReg(p.word(ms, int64(e))))
		case count[e] == 1:
			items = append(items, p.fpReg(Item{Fmt: Float, Bits: floatBits(only[e])}))
		default:
			p.fpReg(unknown) // two floats in one register: no format shows them
			items = append(items, unknown)
		}
	}
	return items
}

// arm64Aggregate places an aggregate as AAPCS64 does (6.8.2, stages B
// and C).
func (p *placer) arm64Aggregate(ms []member, size, align int64) []Item {
	if hfa := floatBits(firstOr(ms)); hfa > 0 && len(ms) >= 1 && len(ms) <= 4 && sameFloat(ms, hfa) {
		if p.fps+len(ms) > p.maxFP {
			p.fps = p.maxFP
			return []Item{unknown}
		}
		var items []Item
		for range ms {
			if hfa > 64 {
				p.fpReg(unknown)
				items = append(items, unknown)
				continue
			}
			items = append(items, p.fpReg(Item{Fmt: Float, Bits: hfa}))
		}
		return items
	}
	if size > 16 {
		return []Item{p.intReg(Item{Fmt: Ptr})} // by reference
	}
	if size == 0 {
		return []Item{unknown}
	}
	words := int((size + 7) / 8)
	if align == 16 {
		p.ints += p.ints & 1
	}
	if p.ints+words > p.maxInt {
		p.ints = p.maxInt
		return []Item{unknown}
	}
	var items []Item
	for w := range words {
		items = append(items, p.intReg(p.word(ms, int64(w))))
	}
	return items
}

// word is the item of the eightbyte w of an aggregate of ms in an
// integer register: the format of the one integer-class scalar it holds
// at its start, as that scalar alone would have; else its bits in hex.
func (p *placer) word(ms []member, w int64) Item {
	var in []member
	for _, m := range ms {
		if m.off/8 == w {
			in = append(in, m)
		}
	}
	if len(in) == 1 && in[0].off == 8*w {
		if it, ok := p.scalarFormat(in[0].t); ok {
			return it
		}
	}
	return Item{Fmt: Hex, Bits: 64}
}

func firstOr(ms []member) godwarf.Type {
	if len(ms) == 0 {
		return nil
	}
	return ms[0].t
}

// sameFloat says whether every member of ms is a float of fb bits.
func sameFloat(ms []member, fb int) bool {
	for _, m := range ms {
		if floatBits(m.t) != fb {
			return false
		}
	}
	return true
}

// ret is the item of a return value of type t (nil: void), and whether
// its address is passed as a hidden first argument (x86-64's MEMORY
// class).
func (p *placer) ret(t godwarf.Type) (it *Item, hidden bool) {
	if t == nil {
		return nil, false
	}
	if _, void := strip(t).(*godwarf.VoidType); void {
		return nil, false
	}
	if f, ok := p.scalarFormat(t); ok {
		return &f, false
	}
	switch fb := floatBits(t); fb {
	case 32, 64:
		return &Item{Fmt: Float, Bits: fb, FP: true}, false
	case 0:
	default:
		return &unknown, false
	}
	if st, ok := strip(t).(*godwarf.StructType); ok && p.arch == arch.X86_64 {
		var ms []member
		memory := st.ByteSize > 16 || !flatten(st, 0, &ms)
		for _, m := range ms {
			memory = memory || floatBits(m.t) > 64 || m.off%max(min(m.t.Size(), 8), 1) != 0
		}
		return &unknown, memory
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
	if a.Size != b.Size || a.Signed != b.Signed || len(a.Values) != len(b.Values) {
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
