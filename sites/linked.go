package sites

import (
	"debug/elf"
	"fmt"
	"sort"

	"ftpatch/arch"
	"ftpatch/elfx"
)

// A Linked is what discovery found in a linked executable or shared
// object's __mcount_loc.
type Linked struct {
	Arch  arch.Arch
	Sites []Site // Off is the site's address (before any load bias); sorted
	// Zero counts table words that are 0: padding between the tables of
	// different objects, or entries of sections the linker discarded.
	Zero int
	// Dead counts entries outside every function symbol: sites in a weak
	// function the linker replaced by a strong one, whose bytes stay in
	// the file but are never run.
	Dead int
	// Dups counts entries listed twice (an object whose table was
	// written by both the compiler and recordmcount).
	Dups int
}

// ErrNoTable: a linked file without __mcount_loc whose function entries
// hold no site either.
var ErrNoTable = fmt.Errorf("no %s section: the program was not built with recordmcount or -mrecord-mcount (build with -pg -mfentry, then run recordmcount on the objects, or compile with gcc -mrecord-mcount)", TableName)

// FindLinked reads and checks the sites listed in a linked file's
// __mcount_loc, resolving the R_*_RELATIVE relocations a PIE's table is
// filled with. A file with neither __mcount_loc nor
// __patchable_function_entries that defines or imports a hook is decoded
// instead (FindDecoded).
func FindLinked(f *elfx.File) (*Linked, error) {
	if f.Type == elf.ET_REL {
		return nil, fmt.Errorf("relocatable object: use recordmcount --list")
	}
	tab := f.Section(TableName)
	if tab == nil {
		if f.Section(PatchableName) == nil {
			// Built with -pg but never through recordmcount: decode.
			return findDecodedOrNoTable(f)
		}
		return nil, ErrNoTable
	}
	_, syms, err := f.Symtab()
	if err != nil {
		return nil, err
	}
	rel, err := f.Relatives()
	if err != nil {
		return nil, err
	}
	words, err := f.Words(tab, rel)
	if err != nil {
		return nil, err
	}
	// The compiler's own list of patchable areas survives linking (it is
	// SHF_ALLOC); it tells where each area starts, so NOPs before a
	// function are known to be its pre-function slot, not alignment
	// padding.
	areas := map[uint64]bool{}
	for _, s := range f.Sections {
		if s.Name != PatchableName {
			continue
		}
		ws, err := f.Words(s, rel)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			areas[w] = true
		}
	}
	funcs := newFuncIndex(syms, true)
	out := &Linked{Arch: f.Arch}
	sort.Slice(words, func(i, j int) bool { return words[i] < words[j] })
	for i, a := range words {
		if a == 0 {
			out.Zero++
			continue
		}
		if i > 0 && words[i-1] == a {
			out.Dups++
			continue
		}
		fun, ok := funcs.containing(0, a)
		if !ok {
			out.Dead++
			continue
		}
		st, err := classifyLinked(f, fun, a, areas)
		if err != nil {
			return nil, err
		}
		out.Sites = append(out.Sites, *st)
	}
	return out, nil
}

// classifyLinked decodes the site at address a in function fun.
func classifyLinked(f *elfx.File, fun fn, a uint64, areas map[uint64]bool) (*Site, error) {
	const window = 16
	code, err := f.ReadAt(elfx.Addr(fun.start), a-fun.start+window)
	if err != nil {
		// The function may end within the window; read what there is.
		code, err = f.ReadAt(elfx.Addr(fun.start), a-fun.start+8)
		if err != nil {
			return nil, &SiteError{".text", a, fun.name, err.Error()}
		}
	}
	off := a - fun.start
	site := &Site{Off: a, Func: fun.name, FuncOff: off, SecName: sectionOf(f, a), Rela: -1, RelaIdx: -1,
		Weak: fun.bind == elf.STB_WEAK, Discover: FromTable}
	bad := func(format string, args ...any) error {
		return &SiteError{site.SecName, a, fun.name, fmt.Sprintf(format, args...)}
	}
	if f.Arch == arch.X86_64 {
		if err := x86Boundary(code, 0, off); err != nil {
			return nil, bad("%v", err)
		}
		in, err := x86Decode(code[off:])
		if err != nil {
			return nil, bad("%v", err)
		}
		entry := off == x86Entry(code, 0)
		switch {
		case x86Call(code[off:], in.Len) == nil && (in.Len == 5 || in.Len == 6):
			site.State, site.Len = StateCall, in.Len
		case in.Len == 5 || in.Len == 6:
			st, err := x86Nops(code[off:], in.Len)
			if err != nil {
				return nil, bad("want a call or a NOP: %v", err)
			}
			site.State, site.Len = st, in.Len
		default:
			st, err := x86Nops(code[off:], 5)
			if err != nil {
				return nil, bad("want a call or a NOP of 5 or 6 bytes: %v", err)
			}
			site.State, site.Len = st, 5
		}
		switch {
		case !entry:
			site.Kind = X86Mcount
		case site.State == StateNops || areas[a]:
			site.Kind = X86Patchable
		default:
			site.Kind = X86Fentry
		}
		return site, nil
	}
	if off%4 != 0 || fun.start%4 != 0 {
		return nil, bad("misaligned site")
	}
	w := word(code, off)
	entry := off == arm64Entry(code, 0)
	switch {
	case !entry && arm64IsBL(w):
		site.Kind, site.State, site.Len = ARM64Mcount, StateCall, 4
	case !entry && arm64IsNop(w):
		site.Kind, site.State, site.Len = ARM64Mcount, StateNop, 4
	case entry && uint64(len(code)) >= off+8:
		site.Kind, site.Len = ARM64Patchable, 8
		w2 := word(code, off+4)
		switch {
		case arm64IsNop(w) && arm64IsNop(w2):
			site.State = StateNops
		case arm64IsBL(w2):
			site.State = StateCall
		default:
			return nil, bad("entry holds %08x %08x, want NOPs or a call", w, w2)
		}
		if fun.start%8 == 0 && areas[fun.start-8] {
			site.Kind, site.Pre = ARM64CallOps, 8
		}
	default:
		return nil, bad("holds %08x, want bl or nop", w)
	}
	return site, nil
}

// sectionOf names the section holding address a, for messages and lists.
func sectionOf(f *elfx.File, a uint64) string {
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && uint64(s.Addr) <= a && a < uint64(s.Addr)+s.Size {
			return s.Name
		}
	}
	return ""
}
