package sites

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"strings"

	"ftpatch/elfx"
	"ftpatch/isa"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
	"ftpatch/runtime/abi"
)

// decodeWindow bounds the bytes of a function read to find its site. The
// longest stretch a compiler puts before an mcount call is clang -O0
// saving a varargs function's argument registers: about 100 bytes.
const decodeWindow = 256

// maxPrologue bounds the instructions decoded before an mcount call:
// clang puts up to about 25 there (callee-saved pushes, argument copies,
// the varargs register save area), gcc fewer than 10.
const maxPrologue = 48

// A callee is what a call in a function's entry may reach: a compiler
// hook, or a runtime trampoline that ftpatch enable or the runtime writes
// calls to in place of the hook's.
type callee struct {
	kind  Kind // the kind of site a call to it makes; KindUnknown: any kind
	n     int  // bytes of the call that may reach it; 0: any length
	tramp bool
}

// serves reports whether a call of n bytes to c is a site of kind k. A
// hook serves every kind that calls it (a chain site calls __fentry__).
func (c callee) serves(k Kind, n int) bool {
	kind := c.kind == k || c.kind == KindUnknown || (!c.tramp && c.kind == k.hookKind())
	return kind && (c.n == 0 || c.n == n)
}

// state is the state of a site calling c: the compiler's call to its
// hook, or an enabled one's to a trampoline.
func (c callee) state() State {
	if c.tramp {
		return StateTraced
	}
	return StateHook
}

// hookKind is the kind of site whose hook a site of kind k calls while it
// holds the compiler's call: X86Fentry for a chain site, k for the rest.
func (k Kind) hookKind() Kind {
	if k == X86Chain {
		return X86Fentry
	}
	return k
}

// trampolines are the runtime's entry points that an enabled site calls
// (runtime/src/<arch>/entry.S): a site calling one is traced
// (StateTraced). Each serves one kind and length of site, as the runtime
// writes them: `e8 rel32` to ftrace_caller5, `67 e8 rel32` to
// ftrace_caller6, the mcount and chain variants after the prologue and
// after a nested function's push %r10; ftrace_stub (FTRACE=nop) from any
// site; on arm64, ftrace_caller from a patchable area's second word,
// ftrace_ops_caller from one with a pre-function literal, and
// ftrace_mcount_caller from a -pg site (runtime/src/tracers/arm64/entry.S),
// ftrace_prologue_caller and ftrace_prologue_stub from a site made from a
// prologue.
var (
	x86Trampolines = map[string]callee{
		abi.Caller5:       {X86Fentry, 5, true},
		abi.Caller6:       {X86Fentry, 6, true},
		abi.McountCaller5: {X86Mcount, 5, true},
		abi.McountCaller6: {X86Mcount, 6, true},
		abi.ChainCaller5:  {X86Chain, 5, true},
		abi.ChainCaller6:  {X86Chain, 6, true},
		abi.Stub:          {KindUnknown, 0, true},
	}
	arm64Trampolines = map[string]callee{
		abi.ARM64Caller:       {ARM64Patchable, 4, true},
		abi.ARM64McountCaller: {ARM64Mcount, 4, true},
		abi.ARM64OpsCaller:    {ARM64CallOps, 4, true},
		abi.Stub:              {KindUnknown, 4, true},
		// A site made from a prologue (ftpatch instrument): `mov x17,
		// x30; bl` these, as the runtime writes it.
		abi.PrologueCaller: {ARM64Patchable, 4, true},
		abi.PrologueStub:   {ARM64Patchable, 4, true},
	}
)

// A decoder finds the sites of one linked file by decoding function
// entries.
type decoder struct {
	f   *elfx.File
	isa *siteISA
	// callees are the hooks and trampolines the file defines, by address.
	callees map[uint64]callee
	// calls resolves pointer slots as the loader fills them, as for the
	// sites' calls; slots remembers what each slot was found to hold.
	calls *callResolver
	slots map[uint64]pltEntry
	// defined says, per kind, whether the file defines that kind's hook.
	// A NOP of ours counts as a site only then: a program that can run a
	// site's hook call is one ftpatch may have rewritten.
	defined [ARM64Mcount + 1]bool
	plts    []*elfx.Section
	viaPLT  map[uint64]pltEntry // PLT stubs resolved so far
	// callForms records, per x86.CallForm, whether x/arch decoded it as
	// the call it must be (1) or not (2); 0 until first seen.
	callForms [x86.NumCallForms]uint8
}

type pltEntry struct {
	kind Kind
	ok   bool
}

// hookName is a symbol's name without the version a static link leaves on
// an imported symbol in .symtab ("__fentry__@GLIBC_2.13").
func hookName(name string) string {
	if i := strings.IndexByte(name, '@'); i >= 0 {
		return name[:i]
	}
	return name
}

func newDecoder(f *elfx.File, syms []elfx.Symbol, calls *callResolver) *decoder {
	d := &decoder{f: f, isa: siteISAOf(f.Arch), calls: calls, callees: map[uint64]callee{}, slots: map[uint64]pltEntry{}, viaPLT: map[uint64]pltEntry{}}
	hooks, tramps := d.isa.hooks, d.isa.tramps
	for i := range syms {
		s := &syms[i]
		if !s.Defined() || s.Type() == elf.STT_SECTION || s.Type() == elf.STT_FILE {
			continue
		}
		name := hookName(s.Name)
		if k, ok := hooks[name]; ok {
			d.callees[uint64(s.Value)] = callee{kind: k}
			d.defined[k] = true
		} else if c, ok := tramps[name]; ok {
			if _, hook := d.callees[uint64(s.Value)]; !hook {
				d.callees[uint64(s.Value)] = c
			}
		}
	}
	for _, s := range f.Sections {
		if isa.IsPLT(s.Name) && s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS {
			d.plts = append(d.plts, s)
		}
	}
	return d
}

// usesHooks reports whether f defines or imports a tracing hook (in
// .symtab or .dynsym), which makes decoding its function entries
// worthwhile.
func usesHooks(f *elfx.File) bool {
	hooks := siteISAOf(f.Arch).hooks
	has := func(syms []elfx.Symbol) bool {
		for i := range syms {
			if _, ok := hooks[hookName(syms[i].Name)]; ok {
				return true
			}
		}
		return false
	}
	if _, syms, err := f.Symtab(); err == nil && has(syms) {
		return true
	}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_DYNSYM {
			if syms, err := f.Symbols(s); err == nil && has(syms) {
				return true
			}
		}
	}
	return false
}

// callee resolves the target of a direct call: a hook or trampoline the
// file defines, or a PLT stub jumping through a slot that holds a hook.
func (d *decoder) callee(t uint64) (callee, bool) {
	if c, ok := d.callees[t]; ok {
		return c, true
	}
	if len(d.plts) == 0 {
		return callee{}, false
	}
	e, seen := d.viaPLT[t]
	if !seen {
		e = d.plt(t)
		d.viaPLT[t] = e
	}
	return callee{kind: e.kind}, e.ok
}

// plt decodes the PLT stub at t: `[endbr64] [bnd] jmp *disp32(%rip)` on
// x86-64, `[bti c] adrp x16, page; ldr x17, [x16, #off]` on arm64.
func (d *decoder) plt(t uint64) pltEntry {
	for _, s := range d.plts {
		if t < uint64(s.Addr) || t >= uint64(s.Addr)+s.Size {
			continue
		}
		b := d.f.SectionData(s)[t-uint64(s.Addr):]
		slot, ok := isa.For(d.f.Arch).PLTSlot(b, t)
		if !ok {
			return pltEntry{}
		}
		k, ok := d.slot(slot)
		return pltEntry{k, ok}
	}
	return pltEntry{}
}

// slot reports whether the pointer slot at s holds a hook once loaded,
// as the sites' calls are resolved (callResolver.slot): a RELATIVE
// relocation or a dynamic one against a symbol this file defines stores
// the hook's address, a dynamic one against an undefined hook binds it
// to another module's, or a static link wrote the address into the file.
func (d *decoder) slot(s uint64) (Kind, bool) {
	if e, ok := d.slots[s]; ok {
		return e.kind, e.ok
	}
	var e pltEntry
	if c, err := d.calls.slot(s, ViaGOT); err == nil {
		if c.Addr != 0 {
			cl, ok := d.callees[c.Addr]
			e = pltEntry{cl.kind, ok && !cl.tramp}
		} else if k, ok := d.isa.hooks[hookName(c.Name)]; ok && c.Name != "" {
			e = pltEntry{k, true}
		}
	}
	d.slots[s] = e
	return e.kind, e.ok
}

// A found site, relative to its function.
type found struct {
	off   uint64 // bytes from the function's start
	n     int    // bytes
	kind  Kind
	state State
}

// x86Site reports whether b, at address pc, holds a site of kind k, and
// how long it is and what it holds: a call to k's hook (`e8 rel32`, `67
// e8 rel32`, `ff 15 disp32` through a slot that holds it, or `e8` to its
// PLT stub), a call as the runtime writes it to a trampoline serving k
// and that length, or, in a file defining k's hook, one of our NOPs of 5
// or 6 bytes.
func (d *decoder) x86Site(b []byte, pc uint64, k Kind) (int, State, bool) {
	call, isCall := x86.CallAt(b, pc)
	if !isCall {
		if d.defined[k.hookKind()] {
			if m, nop := x86.SiteNopAt(b); nop {
				return m, StateNop, true
			}
		}
		return 0, 0, false
	}
	var c callee
	var ok bool
	if call.Form == x86.FormRIP {
		c.kind, ok = d.slot(call.Addr)
	} else {
		c, ok = d.callee(call.Addr)
	}
	if !ok || !c.serves(k, call.Len) || (c.tramp && call.Form == x86.FormRIP) || !d.x86CallDecodes(b, call) {
		return 0, 0, false
	}
	return call.Len, c.state(), true
}

// x86CallDecodes checks with x/arch's decoder that b is the call its
// first bytes say. How a call decodes depends on its opcode bytes, not
// on its displacement, so one decode per form serves every site.
func (d *decoder) x86CallDecodes(b []byte, c x86.CallInsn) bool {
	if d.callForms[c.Form] == 0 {
		d.callForms[c.Form] = 2
		if x86.CheckCall(b[:c.Len], c.Len) == nil {
			d.callForms[c.Form] = 1
		}
	}
	return d.callForms[c.Form] == 1
}

// x86Func finds the site of the function fn (its bytes) at address start:
// at the entry (after endbr64 and the NOPs of a patchable area, see
// x86.SiteLead), after a nested function's `push %r10` (a chain
// site), or, for -pg without -mfentry, the first call after `push %rbp;
// mov %rsp,%rbp` and the rest of the prologue.
func (d *decoder) x86Func(fn []byte, start uint64) (found, bool) {
	code := fn[:min(len(fn), decodeWindow)]
	e := int(x86.Entry(code, 0))
	if bytes.HasPrefix(code[e:], x86.PushR10) {
		p := e + len(x86.PushR10)
		if x86.IsEndbr64(code[p:]) {
			p += len(x86.Endbr64)
		}
		s, _, ok := d.x86EntrySite(fn, code, start, p, X86Chain)
		if !ok || x86.SiteLead(code, s.off, s.n) != x86.LeadChain {
			return found{}, false
		}
		return s, true
	}
	s, e, ok := d.x86EntrySite(fn, code, start, e, X86Fentry)
	if ok {
		return s, true
	}
	if !bytes.HasPrefix(code[e:], x86.FrameSetup) {
		return found{}, false
	}
	// Before the site: anything but a call elsewhere or a jump away.
	// Before a NOP, which is not self-evidently a site as a call to the
	// hook is, only what a prologue does (push, store, copy a register,
	// adjust %rsp, clang's varargs `test %al,%al; je`), and jumps that
	// land before it; and the NOP must not be a loop's alignment padding.
	onlyPrologue := true
	var reach uint64 // the furthest a forward conditional jump lands
	pos := uint64(e + len(x86.FrameSetup))
	for i := 0; i < maxPrologue && pos < uint64(len(code)); i++ {
		if n, st, ok := d.x86Site(code[pos:], start+pos, X86Mcount); ok {
			if st == StateNop && (!onlyPrologue || reach > pos || x86.LoopHead(fn, start, int(pos)+n)) {
				return found{}, false
			}
			return found{pos, n, X86Mcount, st}, true
		}
		n, class, target := x86.Step(code[pos:])
		switch class {
		case x86.ClassStop:
			return found{}, false
		case x86.ClassJcc:
			to := pos + uint64(n) + target
			if to <= pos {
				return found{}, false // backwards: a loop
			}
			reach = max(reach, to)
		case x86.ClassOther:
			onlyPrologue = false
		}
		pos += uint64(n)
	}
	return found{}, false
}

// x86EntrySite finds a site of kind k at the entry of the function fn
// (at address start; code is its first bytes): at p, or after the entry
// NOPs (x86.EntryNop) from p on, which a patchable area leaves before
// the compiler's call; NOPs of ours are tried as the site before they are
// passed over. When there is none, end is where the NOPs end.
func (d *decoder) x86EntrySite(fn, code []byte, start uint64, p int, k Kind) (s found, end int, ok bool) {
	for p < len(code) {
		if n, st, ok := d.x86Site(code[p:], start+uint64(p), k); ok {
			if st == StateNop && x86.LoopHead(fn, start, p+n) {
				return found{}, p, false
			}
			return found{uint64(p), n, k, st}, p, true
		}
		n := x86.EntryNop(code[p:])
		if n == 0 {
			break
		}
		p += n
	}
	return found{}, p, false
}

// arm64Func finds the -pg site of the function fn (its bytes) at address
// start: the first `bl` after the frame record is stored, if it calls
// _mcount: gcc's `stp x29, x30, [sp, #-N]!; mov x29, sp; ...; mov x0,
// x30; bl _mcount`, or clang's shape without `mov x0, x30`. A `b _mcount`
// (a tail call) is never a site. A NOP in that place, not self-evidently
// a site as a call to the hook is, counts only in gcc's whole shape: the
// frame record and frame pointer set up, then `mov x0, x30` (the return
// address as mcount's argument, which code not built with -pg has no
// reason to write) and nothing after it that may overwrite x0
// (arm64.McountNopFound, the rule ftpatch enable asks before it makes a
// site of a file without a table a NOP).
func (d *decoder) arm64Func(fn []byte, start uint64) (found, bool) {
	code := fn[:min(len(fn), decodeWindow)]
	var frame, fp bool
	for pos := 0; pos+4 <= len(code) && pos/4 < maxPrologue; pos += 4 {
		w := arm64.Word(code, uint64(pos))
		switch {
		case arm64.IsBLWord(w):
			if !frame {
				return found{}, false
			}
			t, _, _ := arm64.BranchTarget(start+uint64(pos), w)
			c, ok := d.callee(t)
			if !ok || !c.serves(ARM64Mcount, 4) || !arm64.IsBL(w) {
				return found{}, false
			}
			return found{uint64(pos), 4, ARM64Mcount, c.state()}, true
		case w == arm64.NOP:
			if frame && fp && d.defined[ARM64Mcount] && arm64.McountNopFound(code, uint64(pos)) {
				return found{uint64(pos), 4, ARM64Mcount, StateNop}, true
			}
			return found{}, false
		case arm64.EndsPrologue(w):
			return found{}, false
		case arm64.StoresFrameRecord(w):
			frame = true
		case arm64.SetsFramePointer(w):
			fp = true
		}
	}
	return found{}, false
}

// errNoDecoded: a linked file without a site table whose function
// entries hold no site either.
var errNoDecoded = errors.New("no function entry calls a tracing hook")

// FindDecoded finds the sites of a linked file that has no site table,
// built with -pg -mfentry, or -pg, without recordmcount: it decodes the
// entry of every function symbol with a size in an executable section
// (golang.org/x/arch) and takes as a site a call to the hook
// (__fentry__ at the entry, after endbr64; mcount or _mcount after the
// prologue) whose target the symbol table, the PLT or the dynamic
// relocations confirm. A call to the runtime's trampoline in that place,
// or one of the nops package's NOPs where the file defines the hook, is
// a site too, so a file ftpatch enable wrote into gives the same sites.
// A function that calls anything else first has none.
//
// Only the first instructions of each function are decoded: a file of
// 200,000 functions takes a fraction of a second.
func FindDecoded(f *elfx.File) (*Linked, error) {
	if f.Type == elf.ET_REL {
		return nil, fmt.Errorf("relocatable object: use recordmcount --list")
	}
	_, syms, err := f.Symtab()
	if err != nil {
		return nil, fmt.Errorf("decoding function entries: %w", err)
	}
	rel, err := f.Relatives()
	if err != nil {
		return nil, fmt.Errorf("decoding function entries: %w", err)
	}
	funcs := newFuncIndex(syms, true)
	// The decoder knows a call reaches a hook or trampoline; where it
	// leads, as TARGET shows it, is read as for a table's sites.
	calls := &callResolver{f: f, funcs: funcs.cursor(), rel: rel}
	d := newDecoder(f, syms, calls)
	out := &Linked{Arch: f.Arch}
	for _, e := range funcs.section(0) {
		sym := &syms[e.ID]
		sec := f.Sections[sym.Shndx]
		if e.End <= e.Start || sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_EXECINSTR == 0 || e.Start < uint64(sec.Addr) {
			continue
		}
		data := f.SectionData(sec)
		lo := e.Start - uint64(sec.Addr)
		if lo >= uint64(len(data)) {
			continue
		}
		fn := data[lo:min(uint64(len(data)), e.End-uint64(sec.Addr))]
		s, ok := d.isa.findFunc(d, fn, e.Start)
		if !ok {
			continue
		}
		fun := funcs.fn(e)
		site := Site{Off: e.Start + s.off, FuncOff: s.off, Func: fun.name, SecName: sec.Name,
			Len: s.n, Kind: s.kind, State: s.state, Rela: -1, RelaIdx: -1, Weak: fun.bind == elf.STB_WEAK, Origin: FromDecode}
		if s.state.IsCall() {
			// A site in a linked file that holds a call always says where
			// it leads.
			var err error
			if site.Call, err = calls.call(site.Off, fn[s.off:], s.n); err != nil {
				return nil, &SiteError{"", site.Off, fun.name, "", err}
			}
		}
		out.Sites = append(out.Sites, site)
	}
	return out, nil
}

// findDecodedOrNoTable is FindLinked's answer for a file without a table:
// the decoded sites when the file uses a hook and some function calls it,
// else ErrNoTable.
func findDecodedOrNoTable(f *elfx.File) (*Linked, error) {
	if !usesHooks(f) {
		return nil, ErrNoTable
	}
	l, err := FindDecoded(f)
	if err != nil {
		return nil, err
	}
	if len(l.Sites) == 0 {
		return nil, fmt.Errorf("%w; and %v", ErrNoTable, errNoDecoded)
	}
	return l, nil
}
