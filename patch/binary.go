package patch

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"

	"ftpatch/elfx"
	"ftpatch/isa"
	"ftpatch/runtime/abi"
	"ftpatch/sites"
)

// A Tramp is one of the runtime's entry points an enabled site calls:
// 1 + its index among the file's ISA's trampolines (isa.ISA.Tramps), 0
// for none. Which one a site calls is fixed by its kind, its length and
// the tracer (isa.ISA.Tramp).
type Tramp uint8

// trampFor is the trampoline site s calls when enabled for tracer tr:
// by its kind and length, or, made from a prologue, the ISA's own for
// those where it has one.
func (b *Binary) trampFor(s *Slot, tr Tracer) Tramp {
	if s.Prologue && b.isa.PrologueTramp != nil {
		return Tramp(b.isa.PrologueTramp(tr == TracerNop) + 1)
	}
	return Tramp(b.isa.Tramp(s.Kind.AtEntry(), s.Kind == sites.X86Chain, int(s.Len), tr == TracerNop) + 1)
}

// trampName names trampoline t.
func (b *Binary) trampName(t Tramp) string {
	if t > 0 && int(t) <= len(b.isa.Tramps) {
		return b.isa.Tramps[t-1]
	}
	return fmt.Sprintf("tramp(%d)", uint8(t))
}

// A Slot is one entry of the site table that ftpatch writes: a live site
// (in a function), or a dead one (in the bytes of a weak function the
// linker discarded), which the runtime's table still lists and which
// ftpatch keeps a NOP so the runtime's check finds nothing unexpected.
//
// A program holds 100k slots or more: a Slot is 40 bytes, and what only a
// bad site needs (the description of its bytes) is kept aside.
type Slot struct {
	Addr   uint64      // the site's address (before any load bias)
	Off    elfx.Off    // its offset in the file
	Func   string      // the function holding it; "" for a dead slot
	Len    uint8       // bytes: 5 or 6 (x86-64), 4 or 8 (arm64)
	Kind   sites.Kind  // KindUnknown for a dead slot
	State  sites.State // what it holds now (see slot)
	Target Tramp       // for StateTraced: which trampoline
	Hook   Hook        // for StateHook: which hook
	// Prologue: the site starts a trampoline ftpatch instrument made
	// from a function's prologue (sites.FromPrologue).
	Prologue bool
}

// A Hook is one of the compiler's entry hooks, which the runtime defines:
// 1 + its index among the file's ISA's hooks (isa.ISA.Hooks), 0 for none.
type Hook uint8

// hookName names hook h.
func (b *Binary) hookName(h Hook) string {
	if h > 0 && int(h) <= len(b.isa.Hooks) {
		return b.isa.Hooks[h-1]
	}
	return fmt.Sprintf("hook(%d)", uint8(h))
}

// Dead reports whether the slot lies outside every live function.
func (s *Slot) Dead() bool { return s.Func == "" }

// Other reports whether the slot holds something patching never
// overwrites: neither NOPs, nor a call to a hook or a trampoline.
func (s *Slot) Other() bool { return s.State == sites.StateDirect || s.State == sites.StateUnknown }

// holds says what a slot that patching may write holds, for messages.
func (b *Binary) holds(s *Slot) string {
	switch s.State {
	case sites.StateHook:
		return fmt.Sprintf("the compiler's call to %s", b.hookName(s.Hook))
	case sites.StateTraced:
		return fmt.Sprintf("a call to %s", b.trampName(s.Target))
	case sites.StateNops:
		return "several NOPs"
	}
	return "a NOP"
}

// Detail describes what an Other slot holds, for messages.
func (b *Binary) Detail(s *Slot) string { return b.details[s.Addr] }

// A Binary is a linked file read for patching.
type Binary struct {
	File   *elfx.File
	Slots  []Slot // sorted by address: live and dead
	Live   int    // slots in functions
	Config Config // the record as the file holds it
	// Module: the file links the module stub (a shared object served by
	// the program's runtime), not the runtime itself.
	Module bool

	configOff elfx.Off
	isa       *isa.ISA          // the file's: its runtime's hooks and trampolines
	tramps    []uint64          // trampoline addresses, by Tramp-1
	hooks     map[uint64]Hook   // hook address -> which
	details   map[uint64]string // for Other slots, by address: what was found
}

// hintLink is how to link the runtime in: into a program, or the module
// stub into a shared object.
const hintLink = "link the runtime: cc ... $(ftpatch flags --libs) (a shared object: cc -shared ... $(ftpatch flags --libs --shared))"

// Load reads what patching needs from a linked file: its sites, what each
// holds, the config record and the runtime's entry points. progress, if
// not nil, is told how many sites are read.
func Load(f *elfx.File, progress func(done, total int)) (*Binary, error) {
	if f.Type == elf.ET_REL {
		return nil, fmt.Errorf("a relocatable object: link it first (ftpatch patches executables and shared objects; recordmcount handles objects)")
	}
	in := isa.For(f.Arch)
	if !in.PostLink {
		return nil, fmt.Errorf("%w: %v (ftpatch enable does not write %v sites yet; the runtime's load-time pass does, from FTRACE at start)", ErrArch, f.Arch, f.Arch)
	}
	_, syms, err := f.Symtab()
	if errors.Is(err, elfx.ErrNoSection) {
		return nil, fmt.Errorf("%w; ftpatch names functions from .symtab, so patch before stripping, or strip with --strip-debug, which keeps it", ErrStripped)
	}
	if err != nil {
		return nil, err
	}
	b := &Binary{File: f, isa: in, tramps: make([]uint64, len(in.Tramps)), hooks: map[uint64]Hook{}, details: map[uint64]string{}}
	// The symbols the patcher needs from the runtime: its hooks, its two
	// entry points (the runtime's, the module stub's) and the trampolines.
	runtimeSyms := append(append(append([]string{}, in.Hooks...), abi.Init, abi.ModuleInit), in.Tramps...)
	found := map[string]uint64{}
	for i := range syms {
		s := &syms[i]
		if !s.Defined() || s.Name == "" || (s.Type() != elf.STT_FUNC && s.Type() != elf.STT_NOTYPE) {
			continue
		}
		for _, n := range runtimeSyms {
			if s.Name == n {
				if a, ok := found[n]; ok && a != uint64(s.Value) {
					return nil, fmt.Errorf("%w: %s defined twice (0x%x and 0x%x): two runtimes linked?", ErrNoRuntime, n, a, uint64(s.Value))
				}
				found[n] = uint64(s.Value)
			}
		}
	}
	b.configOff, b.Config, err = findConfig(f)
	if err != nil {
		_, rt := found[abi.Init]
		_, stub := found[abi.ModuleInit]
		if (rt || stub) && errors.Is(err, ErrNoRuntime) {
			return nil, fmt.Errorf("%w: the linked runtime predates %s (no config record); relink with this ftpatch's: cc ... $(ftpatch flags --libs)", ErrNoRuntime, ConfigSection)
		}
		if errors.Is(err, ErrNoRuntime) {
			return nil, fmt.Errorf("%w (no %s section): %s", ErrNoRuntime, ConfigSection, hintLink)
		}
		return nil, err
	}
	_, rt := found[abi.Init]
	_, b.Module = found[abi.ModuleInit]
	switch {
	case rt && b.Module:
		return nil, fmt.Errorf("%w: both the runtime (%s) and the module stub (%s) are linked: link one, the runtime into a program, the stub into a shared object", ErrNoRuntime, abi.Init, abi.ModuleInit)
	case !rt && !b.Module:
		return nil, fmt.Errorf("%w: %s section present but neither %s nor %s: %s", ErrNoRuntime, ConfigSection, abi.Init, abi.ModuleInit, hintLink)
	}
	for i, n := range in.Hooks {
		a, ok := found[n]
		if !ok {
			return nil, fmt.Errorf("%w: %s section present but no %s symbol: %s", ErrNoRuntime, ConfigSection, n, hintLink)
		}
		b.hooks[a] = Hook(i + 1)
	}
	for i, n := range in.Tramps {
		a, ok := found[n]
		if !ok && (n == abi.PrologueCaller || n == abi.PrologueStub) {
			continue // needed only by prologue sites, which say so if they are enabled (plan.go)
		}
		if !ok {
			return nil, fmt.Errorf("%w: the linked runtime has no %s, which enabled sites call: relink with this ftpatch's: cc ... $(ftpatch flags --libs)", ErrNoRuntime, n)
		}
		b.tramps[i] = a
	}

	if tab := f.Section(sites.TableName); tab != nil && progress != nil {
		progress(0, int(tab.Size/8)) // reading the table is most of the time: show the bar now
	}
	l, err := sites.FindLinked(f)
	if err != nil {
		if errors.Is(err, sites.ErrNoTable) {
			return nil, fmt.Errorf("%w; compile with $(ftpatch flags --cflags) and run recordmcount on the objects before linking", err)
		}
		return nil, err
	}
	// The sites come classified: patching plans from what discovery read
	// (the bytes, and where each call leads through the GOT, the PLT and
	// the RELATIVE relocations), never reading them again.
	b.Slots = make([]Slot, 0, len(l.Sites)+len(l.Dead))
	for i := range l.Sites {
		b.Slots = append(b.Slots, b.slot(&l.Sites[i]))
	}
	b.Live = len(b.Slots)
	for i := range l.Dead {
		d := &l.Dead[i]
		if d.State == sites.StateUnknown {
			code, _ := f.ReadAt(elfx.Addr(d.Off), 6)
			return nil, &SiteError{Off: d.Off, Msg: fmt.Sprintf("table entry outside every function holds % x, neither a call nor NOPs", code)}
		}
		b.Slots = append(b.Slots, b.slot(d))
	}
	if len(l.Dead) > 0 {
		sort.Slice(b.Slots, func(i, j int) bool { return b.Slots[i].Addr < b.Slots[j].Addr })
	}
	for i := range b.Slots {
		s := &b.Slots[i]
		s.Off, err = f.AddrToOff(elfx.Addr(s.Addr), uint64(max(s.Len, 1)))
		if err != nil {
			return nil, fmt.Errorf("site 0x%x: %w", s.Addr, err)
		}
		if progress != nil && i%4096 == 0 {
			progress(i, len(b.Slots))
		}
	}
	if progress != nil {
		progress(len(b.Slots), len(b.Slots))
	}
	return b, nil
}

// slot is the Slot of a site discovery classified, which patching
// plans from. Discovery read what each site holds, and where each call
// leads through GOT slots, PLT stubs and RELATIVE relocations; slot
// checks a call against the addresses of this file's runtime: the
// compiler's (StateHook) when it reaches __fentry__ or mcount, directly
// or through a GOT slot or PLT stub the loader fills with one of them;
// ftpatch's (StateTraced) when it reaches a trampoline directly (or
// through a GOT slot); anything else is StateDirect, which patching
// never overwrites, nor StateUnknown.
func (b *Binary) slot(s *sites.Site) Slot {
	sl := Slot{Addr: s.Off, Len: uint8(s.Len), Func: s.Func, Kind: s.Kind, State: s.State, Prologue: s.Origin == sites.FromPrologue}
	switch {
	case s.State == sites.StateNop || s.State == sites.StateNops:
	case s.State.IsCall():
		c := s.Call
		if c == nil {
			c = &sites.Call{}
		}
		if h, ok := b.hooks[c.Addr]; ok && c.Addr != 0 {
			sl.State, sl.Hook = sites.StateHook, h
			return sl
		}
		if h := b.hookNamed(c.Name); c.Addr == 0 && h != 0 && (c.Via == sites.ViaGOT || c.Via == sites.ViaPLT) {
			// A slot the loader binds to a hook by name.
			sl.State, sl.Hook = sites.StateHook, h
			return sl
		}
		if c.Via == sites.ViaDirect || c.Via == sites.ViaGOT {
			for i, a := range b.tramps {
				if a == c.Addr && c.Addr != 0 {
					sl.State, sl.Target = sites.StateTraced, Tramp(i+1)
					return sl
				}
			}
		}
		to := c.String()
		if c.Addr != 0 && (c.Name != "" || c.Via != sites.ViaDirect) {
			to = fmt.Sprintf("0x%x (%s)", c.Addr, c)
		}
		sl.State, b.details[sl.Addr] = sites.StateDirect, fmt.Sprintf("a call to %s, which is neither a hook nor a trampoline of the runtime", to)
	default:
		sl.State, b.details[sl.Addr] = sites.StateUnknown, "neither a call nor NOPs"
	}
	return sl
}

// hookNamed is the hook of that name; 0 for any other.
func (b *Binary) hookNamed(name string) Hook {
	for i, n := range b.isa.Hooks {
		if n == name {
			return Hook(i + 1)
		}
	}
	return 0
}
