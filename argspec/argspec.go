// Package argspec is the one home of what ftpatch knows of arguments
// and return values: the grammar of the runtime's FTRACE_ARGS and
// FTRACE_RETVAL (spec.go, which `ftpatch record -A` and `-R` are checked
// against before the program runs), and how `ftpatch record --auto-args`
// makes them from a module's DWARF: for each function with a site that
// the globs choose, an item per parameter by its type, placed in the
// registers or on the stack as the calling convention of the file's
// architecture puts it (callconv.go), and the return value's format.
//
//	int parse(int n, const char *s)        parse@arg1/i32,arg2/s       parse/i32
//	double ratio(double a, long k, float b) ratio@fparg1/f64,arg1/i64,fparg2/f32  ratio/f64
//	int f(long double x, struct pt p)      f@stack+0/f80,arg1/{i32,i32} f/i32  (x86-64)
//	long double g(struct big b)            g@*arg1/{i64,i64,i64}        g/f128 (arm64)
//	enum color pick(bool b)                pick@arg1/b                  pick/e:color
//
// A function's parameters come from its DW_TAG_subprogram's
// DW_TAG_formal_parameter children, their types read with
// github.com/go-delve/delve/pkg/dwarf/godwarf.
package argspec

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/infile"
	"ftpatch/runtime/abi"
	"ftpatch/sites"
)

// ErrNoDWARF: the file has no DWARF to take types from (built without
// -g, or stripped).
var ErrNoDWARF = errors.New("no DWARF debugging information (build with -g)")

// maxEntryArea bounds the bytes between a function's symbol and its
// DW_AT_low_pc: a patchable area's entry NOPs.
const maxEntryArea = 256

// A Func is one function's items: Args its parameters' in order, Ret
// its return value's (nil: void).
type Func struct {
	Name string
	Args []Item
	Ret  *Item
}

// A Module is what Read found in one file.
type Module struct {
	Funcs []Func // by name
	// Ambiguous are the names of functions that two functions of the
	// file share (static ones of different sources) with different
	// parameters: the runtime chooses by name, so they get no items.
	Ambiguous []string
}

// Read returns the functions of the ELF file at file that have a site
// and that one of globs chooses (path.Match syntax; "!glob" leaves out
// what it matches), in name order, each once; their enums are added to
// enums. Functions without a site are left out: their calls are never
// traced (the runtime's own functions among them: it is built without
// sites).
func Read(file string, globs []string, enums *Enums) (*Module, error) {
	m, ef, err := mapELF(file)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	l, err := sites.FindLinked(ef)
	if err != nil {
		return nil, fmt.Errorf("%s: its sites: %w", file, err)
	}
	// The chosen functions with sites, by address. A subprogram's
	// DW_AT_low_pc may lie after its symbol (arm64's gcc puts it after
	// the patchable area's entry NOPs), so each subprogram is the function
	// of its name that starts at or shortly before its low_pc.
	type start struct {
		addr uint64
		name string
	}
	var starts []start
	for _, s := range l.Sites {
		if Chooses(globs, s.Func) {
			starts = append(starts, start{s.Off - s.FuncOff, s.Func})
		}
	}
	slices.SortFunc(starts, func(a, b start) int { return cmp.Compare(a.addr, b.addr) })
	funcAt := func(lo uint64, names ...string) (string, bool) {
		i, _ := slices.BinarySearchFunc(starts, lo+1, func(s start, a uint64) int { return cmp.Compare(s.addr, a) })
		if i == 0 || lo-starts[i-1].addr > maxEntryArea || !slices.Contains(names, starts[i-1].name) {
			return "", false
		}
		return starts[i-1].name, true
	}
	f, err := elf.NewFile(bytes.NewReader(m.Data))
	if err != nil {
		return nil, err
	}
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, ErrNoDWARF)
	}
	return readFuncs(file, d, ef.Arch, enums, func(e *dwarf.Entry, lo uint64, dn, ln string) (string, bool) {
		name, ok := funcAt(lo, dn, ln)
		return name, ok && lo != 0
	})
}

// ReadLibrary returns the functions of the shared object at file whose
// names are among names (the functions a traced program calls in it),
// from the DWARF of file itself or, where its distribution installs it
// apart, of its debug file found by build-id
// (/usr/lib/debug/.build-id/NN/REST.debug): the definitions it exports
// (DW_AT_external), in name order; their enums are added to enums.
// ErrNoDWARF when neither has DWARF.
func ReadLibrary(file string, names []string, enums *Enums) (*Module, error) {
	m, ef, err := mapELF(file)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	var d *dwarf.Data
	if f, err := elf.NewFile(bytes.NewReader(m.Data)); err == nil {
		d, _ = f.DWARF()
	}
	if d == nil {
		id, err := BuildID(file)
		if err != nil || len(id) < 3 {
			return nil, fmt.Errorf("%s: %w", file, ErrNoDWARF)
		}
		dbg := elfx.DebugPath(id)
		f, err := elf.Open(dbg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, ErrNoDWARF)
		}
		defer f.Close()
		if d, err = f.DWARF(); err != nil {
			return nil, fmt.Errorf("%s (%s): %w", file, dbg, ErrNoDWARF)
		}
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	return readFuncs(file, d, ef.Arch, enums, func(e *dwarf.Entry, lo uint64, dn, ln string) (string, bool) {
		if ext, _ := e.Val(dwarf.AttrExternal).(bool); !ext || lo == 0 {
			return "", false
		}
		if want[ln] {
			return ln, true
		}
		return dn, want[dn]
	})
}

// mapELF maps the ELF file at file and parses it; the caller closes the
// mapping.
func mapELF(file string) (*infile.Mapped, *elfx.File, error) {
	m, err := infile.Map(file)
	if err != nil {
		return nil, nil, err
	}
	ef, err := elfx.Parse(file, m.Data)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, ef, nil
}

// readFuncs reads the subprograms of d that choose names (by the
// entry, its low_pc, its name and its linkage name), each under that
// name; two of one name with different parameters are Ambiguous.
func readFuncs(file string, d *dwarf.Data, a arch.Arch, enums *Enums, choose func(e *dwarf.Entry, lo uint64, dn, ln string) (string, bool)) (*Module, error) {
	found := map[string][]Func{}
	cache := map[dwarf.Offset]godwarf.Type{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: reading its DWARF: %w", file, err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagSubprogram || !e.Children {
			continue
		}
		lo, _ := e.Val(dwarf.AttrLowpc).(uint64)
		dn, _ := e.Val(dwarf.AttrName).(string)
		ln, _ := e.Val(dwarf.AttrLinkageName).(string)
		name, ok := choose(e, lo, dn, ln)
		if !ok || dn == "" && ln == "" {
			r.SkipChildren()
			continue
		}
		fn, err := function(d, r, e, name, cache, newPlacer(a, enums))
		if err != nil {
			return nil, fmt.Errorf("%s: reading its DWARF: %w", file, err)
		}
		found[name] = append(found[name], fn)
	}
	out := &Module{}
	for name, fns := range found {
		if slices.ContainsFunc(fns[1:], func(g Func) bool { return !sameFunc(g, fns[0]) }) {
			out.Ambiguous = append(out.Ambiguous, name)
			continue
		}
		if len(fns[0].Args) > 0 || fns[0].Ret != nil {
			out.Funcs = append(out.Funcs, fns[0])
		}
	}
	slices.SortFunc(out.Funcs, func(a, b Func) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(out.Ambiguous)
	return out, nil
}

// function reads the parameters of the subprogram e, whose children r
// is at.
func function(d *dwarf.Data, r *dwarf.Reader, e *dwarf.Entry, name string, cache map[dwarf.Offset]godwarf.Type, p *placer) (Func, error) {
	fn := Func{Name: name}
	var rt godwarf.Type = &godwarf.VoidType{}
	if off, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok {
		rt = typeAt(d, off, cache)
	}
	var hidden bool
	fn.Ret, hidden = p.ret(rt)
	if hidden {
		p.intReg(Item{}) // the return value's address, in the first integer register
	}
	done := false
	for {
		c, err := r.Next()
		if err != nil {
			return fn, err
		}
		if c == nil || c.Tag == 0 {
			break
		}
		if c.Children {
			r.SkipChildren()
		}
		if c.Tag != dwarf.TagFormalParameter || done {
			continue
		}
		var t godwarf.Type
		if off, ok := c.Val(dwarf.AttrType).(dwarf.Offset); ok {
			t = typeAt(d, off, cache)
		}
		items, end := p.param(t)
		if len(fn.Args)+len(items) > abi.ArgMax {
			fn.Args = append(fn.Args[:min(len(fn.Args), abi.ArgMax-1)], unknown) // a record holds no more
			done = true
			continue
		}
		fn.Args = append(fn.Args, items...)
		done = end
	}
	return fn, nil
}

// typeAt is the type at off, nil when it cannot be read. A C++
// reference is a pointer.
func typeAt(d *dwarf.Data, off dwarf.Offset, cache map[dwarf.Offset]godwarf.Type) godwarf.Type {
	r := d.Reader()
	r.Seek(off)
	if e, err := r.Next(); err == nil && e != nil && (e.Tag == dwarf.TagReferenceType || e.Tag == dwarf.TagRvalueReferenceType) {
		return &godwarf.PtrType{CommonType: godwarf.CommonType{ByteSize: 8}, Type: &godwarf.VoidType{}}
	}
	t, err := godwarf.ReadType(d, 0, off, cache)
	if err != nil {
		return nil
	}
	return t
}

func sameFunc(a, b Func) bool {
	if !slices.Equal(a.Args, b.Args) || (a.Ret == nil) != (b.Ret == nil) {
		return false
	}
	return a.Ret == nil || *a.Ret == *b.Ret
}

// Chooses says whether globs choose name: one plain glob matches (or
// there is none) and no "!glob" does.
func Chooses(globs []string, name string) bool {
	plain, in := false, false
	for _, g := range globs {
		for _, one := range strings.Split(g, ",") {
			if one == "" {
				continue
			}
			if neg, ok := strings.CutPrefix(one, "!"); ok {
				if m, _ := path.Match(neg, name); m {
					return false
				}
				continue
			}
			plain = true
			if m, _ := path.Match(one, name); m {
				in = true
			}
		}
	}
	return in || !plain
}

// Settings are FTRACE_ARGS's and FTRACE_RETVAL's texts for funcs.
func Settings(funcs []Func) (args, retval string) {
	var a, r []Entry
	for _, f := range funcs {
		if len(f.Args) > 0 {
			a = append(a, Entry{f.Name, f.Args})
		}
		if f.Ret != nil {
			r = append(r, Entry{f.Name, []Item{*f.Ret}})
		}
	}
	return Text(a, false), Text(r, true)
}
