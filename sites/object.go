package sites

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
	"ftpatch/runtime/abi"
)

// TableName is the section that lists the sites of an object or linked
// file: one 8-byte address per site.
const TableName = abi.TableSection

// PatchableName is the section in which GCC and Clang record
// -fpatchable-function-entry areas.
const PatchableName = "__patchable_function_entries"

// x86HookKinds and arm64HookKinds map the symbols compilers call at
// function entry to the kind of site a call to them makes (siteISA.hooks).
var (
	x86HookKinds   = map[string]Kind{abi.Fentry: X86Fentry, abi.Mcount: X86Mcount}
	arm64HookKinds = map[string]Kind{abi.ARM64Mcount: ARM64Mcount}
)

// A TableForm says whether an object already has a site table and whose.
type TableForm uint8

// The forms of an existing table.
const (
	TableNone TableForm = iota
	// TableOurs: written by recordmcount (writable, entries of 8 bytes).
	TableOurs
	// TableCompiler: written by gcc -mrecord-mcount (read-only).
	TableCompiler
)

func (t TableForm) String() string {
	return [...]string{"none", "recordmcount", "compiler"}[t]
}

// An Object is what discovery found in a relocatable object.
type Object struct {
	Arch  arch.Arch
	Sites []Site // sorted by section, then offset
	// Table says whether the object already carries __mcount_loc; when it
	// does, Sites start with the table's entries, sorted.
	Table TableForm
	// Untabled counts the sites no table lists yet: the last Untabled of
	// Sites (all of them when Table is TableNone).
	Untabled int
	// Notes are things found and deliberately not taken as sites, such as
	// a `b _mcount` tail call.
	Notes []string
	// Warnings are sites taken with a limitation the user can fix.
	Warnings []string
}

type objScan struct {
	f      *elfx.File
	isa    *siteISA
	syms   []elfx.Symbol
	symtab int // section index of syms
	funcs  *funcIndex
	groups map[int]int // member section index -> group section index
	obj    *Object
	// found holds the sites from relocations and patchable entries, in
	// discovery order; sorted by (section, offset) once discovery ends.
	found []Site
	// lastCall holds the bytes of the last call instruction that decoded
	// as a valid site. In an object every call to a hook has the same
	// bytes (the target lives in the relocation), and decoding is a pure
	// function of them, so one decode serves them all.
	lastCall    [8]byte
	lastCallLen int
	// listed marks the found sites an existing table lists.
	listed []bool
	// notes collects Object.Notes while relocations are scanned (per
	// worker when they are scanned in parallel).
	notes []string
	// areas are the patchable areas that are no site (see dropAreas).
	areas []area
}

// checkCall decodes the n-byte call at b (see x86.CheckCall), once per distinct
// byte pattern.
func (s *objScan) checkCall(b []byte, n int) error {
	if n == s.lastCallLen && string(b[:n]) == string(s.lastCall[:n]) {
		return nil
	}
	// Only the n bytes are given to the decoder: a longer instruction
	// fails rather than reading past the site.
	if err := x86.CheckCall(b[:n], n); err != nil {
		return err
	}
	copy(s.lastCall[:], b[:n])
	s.lastCallLen = n
	return nil
}

// FindObject finds every patch site of a relocatable object and checks it.
// A relocation against a hook that is not a recognised call, a call that
// is not where its kind says, two sites in one function: each is an error
// (a *SiteError, errors.Is ErrBadSite), since writing a table with it would
// patch the wrong bytes later.
func FindObject(f *elfx.File) (*Object, error) {
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("file type %v: recordmcount reads relocatable objects (.o)", f.Type)
	}
	symSec, syms, err := f.Symtab()
	if err != nil {
		return nil, err
	}
	s := &objScan{f: f, isa: siteISAOf(f.Arch), syms: syms, symtab: symSec.Index, funcs: newFuncIndex(syms, false), groups: map[int]int{},
		obj: &Object{Arch: f.Arch}}
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_GROUP {
			continue
		}
		d := f.SectionData(sec)
		for i := 4; i+4 <= len(d); i += 4 {
			m := int(binary.LittleEndian.Uint32(d[i:]))
			if m <= 0 || m >= len(f.Sections) {
				return nil, fmt.Errorf("%s: member %d out of range", sec, m)
			}
			s.groups[m] = sec.Index
		}
	}
	if err := s.relocs(); err != nil {
		return nil, err
	}
	if err := s.patchable(); err != nil {
		return nil, err
	}
	sortSites(s.found)
	for i := 1; i < len(s.found); i++ {
		a, b := &s.found[i-1], &s.found[i]
		if a.Section == b.Section && a.Off == b.Off {
			return nil, &SiteError{b.SecName, b.Off, b.Func, fmt.Sprintf("found twice: from %v and from %v", a.Origin, b.Origin), nil}
		}
	}
	s.obj.Notes = append(s.obj.Notes, s.notes...)
	s.listed = make([]bool, len(s.found))
	if err := s.table(); err != nil {
		return nil, err
	}
	if err := s.dropAreas(); err != nil {
		return nil, err
	}
	if s.obj.Table == TableNone {
		s.obj.Sites = s.found
		s.obj.Untabled = len(s.found)
	} else {
		// Sites the table does not list (an object made by `ld -r` from
		// processed and unprocessed ones) still need recording: they come
		// last in Sites until the caller adds them to a table.
		for i := range s.found {
			if !s.listed[i] {
				s.obj.Sites = append(s.obj.Sites, s.found[i])
				s.obj.Untabled++
			}
		}
		tabled := s.obj.Sites[:len(s.obj.Sites)-s.obj.Untabled]
		sortSites(tabled)
		tabled = slices.CompactFunc(tabled, func(a, b Site) bool { return a.Section == b.Section && a.Off == b.Off })
		s.obj.Sites = append(tabled, s.obj.Sites[len(s.obj.Sites)-s.obj.Untabled:]...)
	}
	// One site per function: a second would be traced twice per call.
	all := s.obj.Sites
	if s.obj.Untabled > 0 && s.obj.Table != TableNone {
		all = slices.Clone(all)
		sortSites(all)
	}
	for i := 1; i < len(all); i++ {
		a, b := &all[i-1], &all[i]
		if a.Section == b.Section && a.Func == b.Func && a.Off-a.FuncOff == b.Off-b.FuncOff {
			return nil, &SiteError{b.SecName, b.Off, b.Func, fmt.Sprintf("second patch site in the function (the first is at +0x%x)", a.FuncOff), nil}
		}
	}
	return s.obj, nil
}

func siteLess(a, b *Site) int {
	if a.Section != b.Section {
		return cmp.Compare(a.Section, b.Section)
	}
	return cmp.Compare(a.Off, b.Off)
}

// sortSites orders sites by section and offset. Relocations come in
// offset order, so the usual input is sorted already and costs one pass.
func sortSites(ss []Site) {
	for i := 1; i < len(ss); i++ {
		if siteLess(&ss[i-1], &ss[i]) > 0 {
			slices.SortFunc(ss, func(a, b Site) int { return siteLess(&a, &b) })
			return
		}
	}
}

// lookup finds the index of the site at (sec, off) among the sorted found
// sites.
func (s *objScan) lookup(sec int, off uint64) (int, bool) {
	return slices.BinarySearchFunc(s.found, Site{Section: sec, Off: off}, func(a, b Site) int { return siteLess(&a, &b) })
}

type hookSym struct {
	name string
	kind Kind
}

// relas reads a relocation section whose symbols must be those of the
// symbol table the scan uses.
func (s *objScan) relas(rs *elfx.Section) (elfx.RelaTable, error) {
	if int(rs.Link) != s.symtab {
		return elfx.RelaTable{}, fmt.Errorf("%s: links to section %d for its symbols, not the symbol table (section %d)", rs, rs.Link, s.symtab)
	}
	return s.f.RelaTable(rs)
}

// relocs finds calls to the hooks through the relocations of executable
// sections.
func (s *objScan) relocs() error {
	f := s.f
	hooks := s.isa.hooks
	var hookSyms []hookRef
	for i := range s.syms {
		// A hook is called, not defined, by an instrumented object (the
		// runtime that defines it is built without instrumentation).
		if s.syms[i].Shndx != uint32(elf.SHN_UNDEF) {
			continue
		}
		if k, ok := hooks[s.syms[i].Name]; ok {
			hookSyms = append(hookSyms, hookRef{uint32(i), hookSym{s.syms[i].Name, k}})
		}
	}
	if len(hookSyms) == 0 {
		return nil
	}
	for _, rs := range f.Sections {
		if rs.Type != elf.SHT_RELA || int(rs.Info) >= len(f.Sections) {
			continue
		}
		t := f.Sections[rs.Info]
		if t.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		rels, err := s.relas(rs)
		if err != nil {
			return err
		}
		// Count the calls first, so each worker can fill its own part of
		// one slice.
		n, mid := 0, 0
		for i := 0; i < rels.Len(); i++ {
			if _, ok := findHook(hookSyms, rels.Sym(i)); ok {
				n++
			}
		}
		if n == 0 {
			continue
		}
		half := n / 2
		for i, c := 0, 0; i < rels.Len(); i++ {
			if _, ok := findHook(hookSyms, rels.Sym(i)); ok {
				if c == half {
					mid = i
					break
				}
				c++
			}
		}
		if s.found == nil {
			// Usually one site per function: size for that at once.
			s.found = make([]Site, 0, max(s.funcs.count+1, n))
		}
		base := len(s.found)
		s.found = slices.Grow(s.found, n)[:base+n]
		region := s.found[base:]
		if n < parallelMin || runtime.GOMAXPROCS(0) < 2 {
			k, err := s.scan(rs, t, rels, hookSyms, 0, rels.Len(), region)
			if err != nil {
				return err
			}
			s.found = s.found[:base+k]
			continue
		}
		// Large sections are checked on two cores, each half with its own
		// function cursor and decode memo.
		w := [2]struct {
			s   objScan
			k   int
			err error
		}{{s: *s}, {s: *s}}
		for j := range w {
			w[j].s.funcs = s.funcs.cursor()
			w[j].s.notes = nil
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			w[1].k, w[1].err = w[1].s.scan(rs, t, rels, hookSyms, mid, rels.Len(), region[half:])
		}()
		w[0].k, w[0].err = w[0].s.scan(rs, t, rels, hookSyms, 0, mid, region[:half])
		wg.Wait()
		for j := range w {
			if w[j].err != nil {
				return w[j].err
			}
			s.notes = append(s.notes, w[j].s.notes...)
		}
		// Relocations that were not sites (arm64 tail calls) leave holes.
		copy(region[w[0].k:], region[half:half+w[1].k])
		s.found = s.found[:base+w[0].k+w[1].k]
	}
	return nil
}

// parallelMin is the number of calls in one relocation section from which
// they are checked on two cores.
const parallelMin = 8192

type hookRef struct {
	sym uint32
	hookSym
}

// findHook looks a symbol index up among the (at most three) hooks.
func findHook(hs []hookRef, sym uint32) (hookSym, bool) {
	for i := range hs {
		if hs[i].sym == sym {
			return hs[i].hookSym, true
		}
	}
	return hookSym{}, false
}

// scan checks the calls among relocations [lo, hi) of rs and writes the
// sites into out, returning how many it wrote.
func (s *objScan) scan(rs, t *elfx.Section, rels elfx.RelaTable, hooks []hookRef, lo, hi int, out []Site) (int, error) {
	text := s.f.SectionData(t)
	k := 0
	for i := lo; i < hi; i++ {
		r := rels.At(i)
		hook, ok := findHook(hooks, r.Sym)
		if !ok {
			continue
		}
		var st Site
		var err error
		st, ok, err = s.isa.reloc(s, t, text, r, hook)
		if err != nil {
			return k, err
		}
		if !ok {
			continue
		}
		st.Rela, st.RelaIdx, st.Origin = int32(rs.Index), int32(i), FromReloc
		if len(s.groups) > 0 {
			st.Group = int32(s.groups[st.Section])
		}
		out[k] = st
		k++
	}
	return k, nil
}

func (s *objScan) add(st Site) {
	if len(s.groups) > 0 {
		st.Group = int32(s.groups[st.Section])
	}
	if s.found == nil {
		// Usually one site per function: size for that at once.
		s.found = make([]Site, 0, s.funcs.count+1)
	}
	s.found = append(s.found, st)
}

// fnAt returns the function holding off in section t, or an error naming
// the place.
func (s *objScan) fnAt(t *elfx.Section, off uint64) (fn, error) {
	fun, ok := s.funcs.containing(uint32(t.Index), off)
	if !ok {
		return fn{}, &SiteError{t.Name, off, "", "not inside any function symbol", nil}
	}
	return fun, nil
}

func (s *objScan) newSite(t *elfx.Section, off uint64, fun fn, k Kind, n int, st State) Site {
	return Site{Section: t.Index, SecName: t.Name, Off: off, Len: n, Kind: k, State: st,
		Func: fun.name, FuncOff: off - fun.start, Rela: -1, RelaIdx: -1, Weak: fun.bind == elf.STB_WEAK}
}

// x86Reloc turns a relocation against a hook into a site: `e8 rel32` with
// R_X86_64_PLT32/PC32 at site+1, or `ff 15 disp32` with
// R_X86_64_GOTPCRELX/GOTPCREL at site+2.
func (s *objScan) x86Reloc(t *elfx.Section, text []byte, r elfx.Rela, hook string, k Kind) (Site, bool, error) {
	back, n, ok := x86.CallReloc(r.Type)
	if !ok {
		return Site{}, false, &SiteError{t.Name, r.Off, "", fmt.Sprintf("relocation %v against %s is not a call", x86.RelocName(r.Type), hook), nil}
	}
	site := r.Off - back
	if r.Off < uint64(n-4) || site+uint64(n) > uint64(len(text)) {
		return Site{}, false, &SiteError{t.Name, r.Off, "", fmt.Sprintf("relocation against %s outside its section", hook), nil}
	}
	if r.Addend != x86.CallAddend {
		return Site{}, false, &SiteError{t.Name, site, "", fmt.Sprintf("call to %s with addend %d, want %d", hook, r.Addend, x86.CallAddend), nil}
	}
	fun, err := s.fnAt(t, site)
	if err != nil {
		return Site{}, false, err
	}
	if err := s.checkCall(text[site:], n); err != nil {
		return Site{}, false, &SiteError{t.Name, site, fun.name, fmt.Sprintf("call to %s", hook), err}
	}
	if err := x86.Boundary(text, fun.start, site); err != nil {
		return Site{}, false, &SiteError{t.Name, site, fun.name, "", err}
	}
	if k == X86Fentry {
		switch x86.SiteLead(text[fun.start:], site-fun.start, n) {
		case x86.LeadEntry:
		case x86.LeadChain:
			k = X86Chain
		default:
			return Site{}, false, &SiteError{t.Name, site, fun.name, fmt.Sprintf("call to %s at +0x%x, not at the function entry "+
				"(only endbr64, NOPs, or a nested function's `push %%r10` may come before it)", hook, site-fun.start), nil}
		}
	}
	return s.newSite(t, site, fun, k, n, StateHook), true, nil
}

// arm64Reloc turns a relocation against _mcount into a site: `bl _mcount`
// with R_AARCH64_CALL26. A `b _mcount` (R_AARCH64_JUMP26) is a tail call,
// which traces nothing of this function's own: noted, not a site.
func (s *objScan) arm64Reloc(t *elfx.Section, text []byte, r elfx.Rela, hook string) (Site, bool, error) {
	switch arm64.CallReloc(r.Type) {
	case arm64.BLCall:
	case arm64.TailCall:
		s.notes = append(s.notes, fmt.Sprintf("section %q+0x%x: tail call `b %s` is not a site", t.Name, r.Off, hook))
		return Site{}, false, nil
	default:
		return Site{}, false, &SiteError{t.Name, r.Off, "", fmt.Sprintf("relocation %v against %s is not a call", arm64.RelocName(r.Type), hook), nil}
	}
	if r.Off%4 != 0 || r.Off+4 > uint64(len(text)) {
		return Site{}, false, &SiteError{t.Name, r.Off, "", fmt.Sprintf("relocation against %s is misaligned or outside its section", hook), nil}
	}
	fun, err := s.fnAt(t, r.Off)
	if err != nil {
		return Site{}, false, err
	}
	if fun.start%4 != 0 {
		return Site{}, false, &SiteError{t.Name, r.Off, fun.name, "function start is not 4-byte aligned", nil}
	}
	if !arm64.IsBL(arm64.Word(text, r.Off)) {
		return Site{}, false, &SiteError{t.Name, r.Off, fun.name, fmt.Sprintf("found %08x, want `bl %s`", arm64.Word(text, r.Off), hook), nil}
	}
	return s.newSite(t, r.Off, fun, ARM64Mcount, 4, StateHook), true, nil
}

// patchable finds the areas recorded in __patchable_function_entries.
// Each entry points at the first NOP of an area: Pre bytes before the
// function symbol, then the entry NOPs (after endbr64 / bti c). An area
// that is no site (too few NOPs at the entry) is kept aside, with why, in
// s.areas: in a function whose site is a call of a hook it is no error
// (dropAreas).
func (s *objScan) patchable() error {
	return s.entries(func(t *elfx.Section) bool { return t.Name == PatchableName }, func(sec int, off uint64) error {
		t := s.f.Sections[sec]
		fun, err := s.areaFunc(t, off)
		if err != nil {
			return err
		}
		st, err := s.patchSite(t, off, fun)
		if err != nil {
			s.areas = append(s.areas, area{sec, fun, err})
			return nil
		}
		st.Origin = FromPatchable
		s.add(*st)
		return nil
	})
}

// An area is a patchable area that is no site, in its function.
type area struct {
	sec int
	fun fn
	err error // why it is no site
}

// dropAreas settles the patchable areas of functions whose site is the
// compiler's call of a hook: -pg or -pg -mfentry together with
// -fpatchable-function-entry or the patchable_function_entry attribute
// leave both in one function. The call is the site, as it is what the
// runtime's hooks and tracers are built for (and what gcc's own
// -mrecord-mcount table lists); the area stays as it is for whoever
// asked for it (a hot-patching tool of the user's), noted once per
// object. An area a table already lists is kept (two sites are then an
// error, as for any table listing two); an area that is no site is an
// error only in a function without such a call. Called once the table is
// read, so that a call a table lists counts too (an object whose calls
// an earlier `recordmcount --nop` turned into NOPs).
func (s *objScan) dropAreas() error {
	if len(s.areas) == 0 && !slices.ContainsFunc(s.found, func(st Site) bool { return st.Origin == FromPatchable }) {
		return nil // no area: the common object, and its sites need no index
	}
	type key struct {
		sec   int
		start uint64
	}
	hooked := map[key]bool{}
	for _, ss := range [][]Site{s.found, s.obj.Sites} {
		for i := range ss {
			if ss[i].Origin != FromPatchable {
				hooked[key{ss[i].Section, ss[i].Off - ss[i].FuncOff}] = true
			}
		}
	}
	var left []string
	for _, a := range s.areas {
		if !hooked[key{a.sec, a.fun.start}] {
			return a.err
		}
		left = append(left, a.fun.name)
	}
	k := 0
	for i := range s.found {
		st := &s.found[i]
		if st.Origin == FromPatchable && !s.listed[i] && hooked[key{st.Section, st.Off - st.FuncOff}] {
			left = append(left, st.Func)
			continue
		}
		s.found[k], s.listed[k] = s.found[i], s.listed[i]
		k++
	}
	s.found, s.listed = s.found[:k], s.listed[:k]
	if len(left) > 0 {
		slices.Sort(left)
		names := strings.Join(left[:min(len(left), 3)], ", ")
		if len(left) > 3 {
			names += ", ..."
		}
		areas := "patchable area"
		if len(left) > 1 {
			areas += "s"
		}
		s.obj.Notes = append(s.obj.Notes, fmt.Sprintf("%d %s (-fpatchable-function-entry, patchable_function_entry) left as they are "+
			"for whoever asked for them: the call of __fentry__ or mcount is the site of %s", len(left), areas, names))
	}
	return nil
}

// entries calls each for every entry of the address tables (sections of
// absolute addresses, like __mcount_loc) that match accepts, resolved to a
// code section and offset through the table's relocations.
func (s *objScan) entries(match func(*elfx.Section) bool, each func(sec int, off uint64) error) error {
	f := s.f
	for _, rs := range f.Sections {
		if rs.Type != elf.SHT_RELA || int(rs.Info) >= len(f.Sections) || !match(f.Sections[rs.Info]) {
			continue
		}
		rels, err := s.relas(rs)
		if err != nil {
			return err
		}
		for i := 0; i < rels.Len(); i++ {
			sec, off, err := s.target(rs, i, rels.At(i))
			if err != nil {
				return err
			}
			if err := each(sec, off); err != nil {
				return err
			}
		}
	}
	return nil
}

// target resolves an absolute table entry (symbol + addend) to a section
// and offset.
func (s *objScan) target(rs *elfx.Section, i int, r elfx.Rela) (int, uint64, error) {
	if r.Type != elfx.Abs64(s.f.Arch) {
		return 0, 0, fmt.Errorf("%s: relocation %d: type %s, want %s", rs, i, s.f.RelocTypeString(r.Type), s.f.RelocTypeString(elfx.Abs64(s.f.Arch)))
	}
	sym := &s.syms[r.Sym]
	if !sym.Defined() {
		return 0, 0, fmt.Errorf("%s: relocation %d: symbol %q is not defined in this object", rs, i, sym.Name)
	}
	t := s.f.Sections[sym.Shndx]
	off := uint64(sym.Value) + uint64(r.Addend)
	if t.Flags&elf.SHF_EXECINSTR == 0 || off >= uint64(len(s.f.SectionData(t))) {
		return 0, 0, fmt.Errorf("%s: relocation %d: %s+0x%x is not code", rs, i, t, off)
	}
	return t.Index, off, nil
}

// areaFunc finds the function of the patchable area starting at e: the
// one it starts the entry of (at its start, after endbr64 or bti c, or,
// in a nested function also built with -pg -mfentry, after gcc's `push
// %r10`), or the next, when the area begins with NOPs before the symbol.
func (s *objScan) areaFunc(t *elfx.Section, e uint64) (fn, error) {
	text := s.f.SectionData(t)
	fun, ok := s.funcs.containing(uint32(t.Index), e)
	if ok && e >= fun.start {
		if s.isa.areaStart(text, fun.start, e) {
			return fun, nil
		}
	}
	// The area starts before the function: the entry is Pre bytes of
	// NOPs ahead of the function symbol.
	fun, ok = s.funcs.next(uint32(t.Index), e)
	if !ok || fun.start-e > 64 {
		return fn{}, &SiteError{t.Name, e, "", "patchable entry is not at or just before a function", nil}
	}
	return fun, nil
}

// patchSite checks the patchable area starting at e in function fun and
// makes it a site.
func (s *objScan) patchSite(t *elfx.Section, e uint64, fun fn) (*Site, error) {
	text := s.f.SectionData(t)
	pre := 0
	if e < fun.start {
		pre = int(fun.start - e)
	}
	site := max(e, s.isa.entry(text, fun.start))
	return s.isa.patchSite(s, t, text, e, site, pre, fun)
}

// x86PatchSite is patchSite for x86-64: the area from e, whose entry
// part starts at site after pre bytes before the function.
func x86PatchSite(s *objScan, t *elfx.Section, text []byte, e, site uint64, pre int, fun fn) (*Site, error) {
	if pre > 0 {
		if _, err := x86Nops(text[e:], pre); err != nil {
			return nil, &SiteError{t.Name, e, fun.name, "pre-function area", err}
		}
	}
	if site+5 > uint64(len(text)) {
		return nil, &SiteError{t.Name, site, fun.name, "patchable area runs past the section", nil}
	}
	st, err := x86Nops(text[site:], 5)
	if err != nil {
		return nil, &SiteError{t.Name, site, fun.name, "need 5 bytes of NOPs at entry for a call (-fpatchable-function-entry=5, or N,M with N-M >= 5)", err}
	}
	out := s.newSite(t, site, fun, X86Patchable, 5, st)
	out.Pre = int32(pre)
	return &out, nil
}

// arm64PatchSite is patchSite for arm64.
func arm64PatchSite(s *objScan, t *elfx.Section, text []byte, e, site uint64, pre int, fun fn) (*Site, error) {
	if e%4 != 0 || fun.start%4 != 0 || site+8 > uint64(len(text)) {
		return nil, &SiteError{t.Name, e, fun.name, "patchable area misaligned or past the section", nil}
	}
	for o := e; o < fun.start; o += 4 {
		if !arm64.IsNop(arm64.Word(text, o)) {
			return nil, &SiteError{t.Name, o, fun.name, fmt.Sprintf("pre-function area: found %08x, want nop", arm64.Word(text, o)), nil}
		}
	}
	if !arm64.IsNop(arm64.Word(text, site)) || !arm64.IsNop(arm64.Word(text, site+4)) {
		return nil, &SiteError{t.Name, site, fun.name, fmt.Sprintf("need 2 NOPs at entry (-fpatchable-function-entry=2 or 4,2): found %08x %08x", arm64.Word(text, site), arm64.Word(text, site+4)), nil}
	}
	k := ARM64Patchable
	if pre == arm64.LiteralSize {
		if arm64.LiteralAt(e, pre, t.Align) {
			k = ARM64CallOps
		} else {
			hint := "build with -falign-functions=8"
			if t.Name == ".text.unlikely" || strings.HasPrefix(t.Name, ".text.unlikely.") {
				hint = "gcc does not apply -falign-functions to cold functions; GCC 14 and later have -fmin-function-alignment=8"
			}
			s.obj.Warnings = append(s.obj.Warnings, fmt.Sprintf("section %q+0x%x (%s): the pre-function slot is not 8-byte aligned, so it cannot hold an ops pointer: %s", t.Name, e, fun.name, hint))
		}
	}
	out := s.newSite(t, site, fun, k, 8, StateNops)
	out.Pre = int32(pre)
	return &out, nil
}

// table reads an existing __mcount_loc: the object was processed before
// (by recordmcount, or gcc wrote it with -mrecord-mcount). Its entries are
// the sites; each is classified from the bytes it points at, since an
// earlier --nop pass may have turned calls into NOPs and dropped their
// relocations.
func (s *objScan) table() error {
	f := s.f
	for _, ts := range f.Sections {
		if ts.Name != TableName {
			continue
		}
		// gcc's own table is read-only; ours is writable. (Not entsize:
		// `ld -r` with GNU ld resets it to 0.)
		form := TableCompiler
		if ts.Flags&elf.SHF_WRITE != 0 {
			form = TableOurs
		}
		if s.obj.Table == TableNone || form == TableOurs {
			s.obj.Table = form
		}
		err := s.entries(func(t *elfx.Section) bool { return t == ts }, func(sec int, off uint64) error {
			if i, ok := s.lookup(sec, off); ok {
				s.listed[i] = true
				s.obj.Sites = append(s.obj.Sites, s.found[i])
				return nil
			}
			st, err := s.classify(f.Sections[sec], off)
			if err != nil {
				return err
			}
			st.Origin = FromTable
			st.Group = int32(s.groups[sec])
			s.obj.Sites = append(s.obj.Sites, *st)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// classify reads a table entry whose site no relocation or patchable
// entry explains: a site NOP'd by an earlier pass.
func (s *objScan) classify(t *elfx.Section, off uint64) (*Site, error) {
	text := s.f.SectionData(t)
	fun, err := s.fnAt(t, off)
	if err != nil {
		return nil, err
	}
	return s.isa.classify(s, t, text, off, fun)
}

// x86Classify is classify for x86-64.
func x86Classify(s *objScan, t *elfx.Section, text []byte, off uint64, fun fn) (*Site, error) {
	if err := x86.Boundary(text, fun.start, off); err != nil {
		return nil, &SiteError{t.Name, off, fun.name, "", err}
	}
	in, err := x86.Decode(text[off:])
	if err != nil || (in.Len != 5 && in.Len != 6) {
		return nil, &SiteError{t.Name, off, fun.name, "table entry is not a 5- or 6-byte call or NOP", nil}
	}
	st := StateNop
	if err := x86.CheckCall(text[off:], in.Len); err == nil {
		st = StateHook
	} else if got, err := x86Nops(text[off:], in.Len); err != nil || got != StateNop {
		return nil, &SiteError{t.Name, off, fun.name, fmt.Sprintf("table entry is neither a call nor a NOP: %q", in.String()), nil}
	}
	k := X86Mcount
	switch x86.SiteLead(text[fun.start:], off-fun.start, in.Len) {
	case x86.LeadEntry:
		k = X86Fentry
	case x86.LeadChain:
		k = X86Chain
	}
	out := s.newSite(t, off, fun, k, in.Len, st)
	return &out, nil
}

// arm64Classify is classify for arm64.
func arm64Classify(s *objScan, t *elfx.Section, text []byte, off uint64, fun fn) (*Site, error) {
	if off%4 != 0 || off+4 > uint64(len(text)) {
		return nil, &SiteError{t.Name, off, fun.name, "table entry misaligned", nil}
	}
	w := arm64.Word(text, off)
	switch {
	case arm64.IsBL(w):
		out := s.newSite(t, off, fun, ARM64Mcount, 4, StateHook)
		return &out, nil
	case arm64.IsNop(w) && off != arm64.Entry(text, fun.start):
		out := s.newSite(t, off, fun, ARM64Mcount, 4, StateNop)
		return &out, nil
	}
	return nil, &SiteError{t.Name, off, fun.name, fmt.Sprintf("table entry holds %08x, neither bl nor a NOP'd mcount call", w), nil}
}
