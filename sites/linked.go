package sites

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
)

// A Linked is what discovery found in a linked executable or shared
// object's __mcount_loc.
type Linked struct {
	Arch  arch.Arch
	Sites []Site // Off is the site's address (before any load bias); sorted
	// Zero counts table words that are 0: padding between the tables of
	// different objects, or entries of sections the linker discarded.
	Zero int
	// Dead are the entries outside every function symbol: sites in a
	// weak function the linker replaced by a strong one, whose bytes stay
	// in the file but are never run. Each holds what it was found to hold
	// (classifyDead), with no Func or Kind; sorted by address.
	Dead []Site
	// Dups counts entries listed twice (an object whose table was
	// written by both the compiler and recordmcount).
	Dups int
	// Notes say what was read only in part, and why (see AddSources).
	Notes []string

	funcs *funcIndex // the file's functions, for AddSources; nil if not built
}

// ErrNoTable: a linked file without __mcount_loc whose function entries
// hold no site either.
var ErrNoTable = fmt.Errorf("no %s section: the program was not built with recordmcount or -mrecord-mcount (build with -pg -mfentry, then run recordmcount on the objects, or compile with gcc -mrecord-mcount)", TableName)

// ErrStripped: a linked file without a symbol table (.symtab). Sites are
// checked and named against the function symbols, so they cannot be
// listed; the error FindLinked wraps it in says what to do instead.
var ErrStripped = errors.New("no symbol table (.symtab): the file is stripped")

// strippedHint is what FindLinked adds to ErrStripped: what works
// instead. The runtime reads the same symbols (from /proc/self/exe) to
// name and filter what it traces, so the hint promises nothing of the
// stripped file.
const strippedHint = "sites are checked against its function symbols, so list the sites of the unstripped file (and strip a copy afterwards if you must ship it stripped: the runtime reads .symtab too, to name what it traces)"

// FindLinked reads and checks the sites listed in a linked file's
// __mcount_loc, resolving the R_*_RELATIVE relocations a PIE's table is
// filled with. A file without __mcount_loc that defines or imports a hook
// is decoded instead (FindDecoded): built with -pg or -pg -mfentry but
// never through recordmcount, perhaps with patchable areas too (the
// patchable_function_entry attribute), which are not sites there.
//
// Patchable areas (__patchable_function_entries, which survives linking)
// are sites only where the table lists them: recordmcount lists an area
// only in a function with no call of a hook, and gcc never does.
func FindLinked(f *elfx.File) (*Linked, error) {
	if f.Type == elf.ET_REL {
		return nil, fmt.Errorf("relocatable object: use recordmcount --list")
	}
	tab := f.Section(TableName)
	if pro := f.Section(PrologueName); pro != nil {
		// A file ftpatch instrument wrote: the compiler's sites, if it
		// has any, and the trampolines'.
		var l *Linked
		var err error
		if tab != nil {
			l, err = findTable(f, tab)
		} else if l, err = findDecodedOrNoTable(f); errors.Is(err, ErrNoTable) {
			l, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
		return withPrologues(f, l, pro)
	}
	if tab == nil {
		return findDecodedOrNoTable(f)
	}
	return findTable(f, tab)
}

// findTable is FindLinked for a file with a table, tab.
func findTable(f *elfx.File, tab *elfx.Section) (*Linked, error) {
	_, syms, err := f.Symtab()
	if errors.Is(err, elfx.ErrNoSection) {
		return nil, fmt.Errorf("%w; %s", ErrStripped, strippedHint)
	}
	if err != nil {
		return nil, err
	}
	rel, err := f.Relatives()
	if err != nil {
		return nil, err
	}
	if tab.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("section %q has no contents (SHT_NOBITS)", TableName)
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
	calls := &callResolver{f: f, funcs: funcs.cursor(), rel: rel}
	secs := &sectionCache{}
	out := &Linked{Arch: f.Arch, Sites: make([]Site, 0, len(words)), funcs: funcs}
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
		// A discarded weak function's bytes stay in the code, so its
		// entry is counted below; an entry anywhere else is no site.
		if err := secs.checkCode(f, a); err != nil {
			return nil, err
		}
		fun, ok := funcs.containing(0, a)
		if !ok {
			out.Dead = append(out.Dead, classifyDead(f, a, calls))
			continue
		}
		st, err := classifyLinked(f, fun, a, areas, calls)
		if err != nil {
			return nil, err
		}
		out.Sites = append(out.Sites, *st)
	}
	return out, nil
}

// A sectionCache finds the section holding an address, remembering the
// last: table entries come sorted, so most fall in the same one.
type sectionCache struct {
	last *elfx.Section
}

// checkCode checks that the table entry a is in a code section.
func (c *sectionCache) checkCode(f *elfx.File, a uint64) error {
	s := c.last
	if s == nil || a < uint64(s.Addr) || a-uint64(s.Addr) >= s.Size {
		s = nil
		for _, x := range f.Sections {
			if x.Flags&elf.SHF_ALLOC != 0 && uint64(x.Addr) <= a && a-uint64(x.Addr) < x.Size {
				s = x
				break
			}
		}
		c.last = s
	}
	switch {
	case s == nil:
		if _, err := f.AddrToOff(elfx.Addr(a), 1); err != nil {
			return fmt.Errorf("section %q: entry 0x%x is not in any loaded segment: %w", TableName, a, ErrBadSite)
		}
		return fmt.Errorf("section %q: entry 0x%x is in no section: %w", TableName, a, ErrBadSite)
	case s.Flags&elf.SHF_EXECINSTR == 0:
		return fmt.Errorf("section %q: entry 0x%x is in section %q, which holds no code: %w", TableName, a, s.Name, ErrBadSite)
	}
	return nil
}

// maxSiteOff bounds how far into its function a site may be: -pg's call
// comes after a short prologue, and deciding that a site is at an
// instruction boundary decodes from the function's start, which must not
// take long on a hostile table.
const maxSiteOff = 4096

// classifyLinked decodes the site at address a in function fun, and
// where its call leads if it holds one.
func classifyLinked(f *elfx.File, fun fn, a uint64, areas map[uint64]bool, calls *callResolver) (*Site, error) {
	const window = 16
	if a-fun.start > maxSiteOff {
		return nil, &SiteError{"", a, fun.name, fmt.Sprintf("0x%x bytes into its function, past the %d bytes a prologue can take", a-fun.start, maxSiteOff), nil}
	}
	code, err := f.ReadAt(elfx.Addr(fun.start), a-fun.start+window)
	if err != nil {
		// The function may end within the window; read what there is.
		code, err = f.ReadAt(elfx.Addr(fun.start), a-fun.start+8)
		if err != nil {
			return nil, &SiteError{"", a, fun.name, "", err}
		}
	}
	off := a - fun.start
	site := &Site{Off: a, Func: fun.name, FuncOff: off, SecName: sectionOf(f, a), Rela: -1, RelaIdx: -1,
		Weak: fun.bind == elf.STB_WEAK, Origin: FromTable}
	bad := func(format string, args ...any) error {
		return &SiteError{"", a, fun.name, fmt.Sprintf(format, args...), nil}
	}
	return siteISAOf(f.Arch).linked(code, off, fun, site, areas, calls, bad)
}

// x86Linked is classifyLinked for x86-64: code holds the function from
// its start, the site off bytes in.
func x86Linked(code []byte, off uint64, fun fn, site *Site, areas map[uint64]bool, calls *callResolver, bad func(string, ...any) error) (*Site, error) {
	a := site.Off
	if err := x86.Boundary(code, 0, off); err != nil {
		return nil, bad("%v", err)
	}
	in, err := x86.Decode(code[off:])
	if err != nil {
		return nil, bad("%v", err)
	}
	switch {
	case (in.Len == 5 || in.Len == 6) && x86.IsNopInsn(in):
		// One NOP: what x86Nops would say, without decoding it again
		// (nor building x86.CheckCallOf's error message for it).
		site.State, site.Len = StateNop, in.Len
	case (in.Len == 5 || in.Len == 6) && x86.CheckCallOf(in, code[off:], in.Len) == nil:
		site.Len = in.Len
		if site.Call, err = calls.call(a, code[off:], in.Len); err != nil {
			return nil, bad("%v", err)
		}
		site.State = callState(x86HookKinds, x86Trampolines, site.Call)
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
	// The table lists a patchable area only where it is the site;
	// one beside a call of a hook (-pg -mfentry with
	// -fpatchable-function-entry) is not listed, and stays the
	// user's.
	switch lead := x86.SiteLead(code, off, site.Len); {
	case lead == x86.LeadChain:
		site.Kind = X86Chain
	case lead != x86.LeadEntry:
		site.Kind = X86Mcount
	case site.State == StateNops || areas[a]:
		site.Kind = X86Patchable
	default:
		site.Kind = X86Fentry
	}
	return site, nil
}

// arm64Linked is classifyLinked for arm64.
func arm64Linked(code []byte, off uint64, fun fn, site *Site, areas map[uint64]bool, calls *callResolver, bad func(string, ...any) error) (*Site, error) {
	a := site.Off
	var err error
	if off%4 != 0 || fun.start%4 != 0 {
		return nil, bad("misaligned site")
	}
	w := arm64.Word(code, off)
	entry := off == arm64.Entry(code, 0)
	switch {
	case !entry && arm64.IsBL(w):
		site.Kind, site.Len = ARM64Mcount, 4
		if site.Call, err = calls.call(a, code[off:], 4); err != nil {
			return nil, bad("%v", err)
		}
		site.State = callState(arm64HookKinds, arm64Trampolines, site.Call)
	case !entry && arm64.IsNop(w):
		site.Kind, site.State, site.Len = ARM64Mcount, StateNop, 4
	case entry && uint64(len(code)) >= off+8:
		site.Kind, site.Len = ARM64Patchable, 8
		w2 := arm64.Word(code, off+4)
		switch {
		case arm64.IsNop(w) && arm64.IsNop(w2):
			site.State = StateNops
		case arm64.IsBL(w2):
			if site.Call, err = calls.call(a+4, code[off+4:], 4); err != nil {
				return nil, bad("%v", err)
			}
			site.State = callState(arm64HookKinds, arm64Trampolines, site.Call)
		default:
			return nil, bad("entry holds %08x %08x, want NOPs or a call", w, w2)
		}
		// A patchable area starting the literal's size before an
		// 8-aligned function: the pre-function literal.
		if lit := fun.start - arm64.LiteralSize; fun.start%arm64.LiteralSize == 0 && areas[lit] {
			site.Kind, site.Pre = ARM64CallOps, arm64.LiteralSize
			// The runtime fills it at load; in a file it holds the
			// compiler's NOPs, unless something wrote there.
			if b, err := calls.f.ReadAt(elfx.Addr(lit), arm64.LiteralSize); err == nil && !(arm64.IsNop(arm64.Word(b, 0)) && arm64.IsNop(arm64.Word(b, 4))) {
				site.Literal = binary.LittleEndian.Uint64(b)
			}
		}
	default:
		return nil, bad("holds %08x, want bl or nop", w)
	}
	return site, nil
}

// classifyDead reads the table entry at a that lies outside every
// function: the bytes of a weak function the linker discarded, which
// nothing runs. Patching keeps them NOPs, so what they hold is read as a
// live site's is, without the checks against a function: the State and
// Len of the one call, NOP or run of NOPs found there, with the call's
// target (Call{} when it cannot be resolved); StateUnknown and Len 0 for
// anything else, which patching refuses to touch.
func classifyDead(f *elfx.File, a uint64, calls *callResolver) Site {
	site := Site{Off: a, SecName: sectionOf(f, a), Rela: -1, RelaIdx: -1, Origin: FromTable}
	var code []byte
	for n := uint64(16); n > 0 && code == nil; n-- {
		code, _ = f.ReadAt(elfx.Addr(a), n) // the code may end within the window
	}
	if dead := siteISAOf(f.Arch).dead; dead != nil && len(code) > 0 {
		dead(code, &site, calls)
	}
	return site
}

// x86Dead is classifyDead for x86-64: a call of 5 or 6 bytes, one NOP of
// 5 or 6, or NOPs over 5 bytes.
func x86Dead(code []byte, site *Site, calls *callResolver) {
	if c, ok := x86.CallAt(code[:min(len(code), 6)], site.Off); ok {
		site.Len = c.Len
		site.Call = deadCall(calls, site.Off, code, c.Len)
		site.State = callState(x86HookKinds, x86Trampolines, site.Call)
		return
	}
	if in, err := x86.Decode(code); err == nil && x86.IsNopInsn(in) && (in.Len == 5 || in.Len == 6) {
		site.State, site.Len = StateNop, in.Len
		return
	}
	if st, err := x86Nops(code, 5); err == nil {
		site.State, site.Len = st, 5
	}
}

// arm64Dead is classifyDead for arm64: a patchable entry's two words
// (`mov x9, x30; bl ...` enabled, two NOPs disabled: 8 bytes), or one bl
// or NOP (a -pg site: 4). Two NOPs are taken for an entry: were they a
// -pg site's NOP and the NOP after it, writing NOPs over both changes
// nothing.
func arm64Dead(code []byte, site *Site, calls *callResolver) {
	if len(code) < 4 || site.Off%4 != 0 {
		return
	}
	w := arm64.Word(code, 0)
	var w1 uint32
	if len(code) >= 8 {
		w1 = arm64.Word(code, 4)
	}
	switch {
	case len(code) >= 8 && w == arm64.MovX9X30 && arm64.IsBL(w1):
		site.Len = 8
		site.Call = deadCall(calls, site.Off+4, code[4:], 4)
		site.State = callState(arm64HookKinds, arm64Trampolines, site.Call)
	case arm64.IsBL(w):
		site.Len = 4
		site.Call = deadCall(calls, site.Off, code, 4)
		site.State = callState(arm64HookKinds, arm64Trampolines, site.Call)
	case len(code) >= 8 && arm64.IsNop(w) && arm64.IsNop(w1):
		site.State, site.Len = StateNops, 8
	case arm64.IsNop(w):
		site.State, site.Len = StateNop, 4
	}
}

// deadCall resolves a dead site's call, or says its target is unknown:
// a dead entry's bytes never run, so what its call cannot be resolved to
// is no error of the file's.
func deadCall(calls *callResolver, a uint64, code []byte, n int) *Call {
	c, err := calls.call(a, code, n)
	if err != nil {
		return &Call{}
	}
	return c
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
