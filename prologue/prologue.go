// Package prologue finds the functions of a linked file and says what
// site each can have: the compiler's (a -pg, -mfentry or patchable-entry
// site listed or decoded by package sites), or one made from its
// prologue (a plan of package move, from the ISA's PlanPrologue), or
// none, with the reason. `ftpatch sites --dynamic` lists it, `ftpatch
// instrument` writes it into a copy of the file, and `record -P` hands
// it to the runtime.
//
// Functions come from the file's symbol table, or from its debug file
// (found by build-id under elfx.DebugRoot) when the file is stripped, or
// else from .eh_frame's FDEs named through .dynsym where a dynamic
// symbol starts at the same address.
package prologue

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/funcs"
	"ftpatch/isa"
	"ftpatch/isa/arm64"
	"ftpatch/isa/move"
	"ftpatch/sites"
)

// What a function gets.
type What uint8

const (
	None     What = iota // no site: Func.Why says why
	Compiler             // the compiler made one (Func.Kind)
	Made                 // one made from its prologue (Func.Plan)
)

var whatNames = [...]string{"-", "compiler", "prologue"}

func (w What) String() string { return whatNames[w] }

// Where the functions were found (funcs.FileSymbols).
const (
	FromSymtab  = funcs.FromSymtab
	FromDebug   = funcs.FromDebug
	FromEHFrame = funcs.FromEHFrame
)

// Reasons a function is left alone that no ISA gives.
var (
	// ErrEntryPoint: the file's entry point (_start) is jumped to with
	// the process's arguments where a return address would be.
	ErrEntryPoint = errors.New("the entry point (no return address on its stack)")
	// ErrNoISA: the ISA makes no prologue sites.
	ErrNoISA = errors.New("no prologue sites on this instruction set")
	// ErrNotCode: the function lies outside the file's executable
	// segments' contents.
	ErrNotCode = errors.New("not in an executable segment")
	// ErrLandingPad: an arm64 function whose first instruction is a
	// paciasp or pacibsp, in a file marked for BTI: indirect calls land
	// there (it is a landing pad too), and would land on the jump.
	ErrLandingPad = errors.New("indirect calls land on its paciasp (BTI)")
	// ErrRuntime: a function of ftpatch's runtime, linked into the file:
	// the tracer's own code, never traced.
	ErrRuntime = errors.New("ftpatch's runtime")
	// ErrNotEntry: code that is jumped to, not called, so that no
	// return address is where a call leaves it: the cold part a
	// compiler split from a function (gcc's name.cold), a PLT stub, an
	// .eh_frame range starting mid-frame.
	ErrNotEntry = errors.New("not a function's entry (a split-off cold part or a stub)")
)

// A Func is one function and the site it can have.
type Func struct {
	Name string
	Addr uint64 // as in the file (load bias 0)
	Size uint64
	What What
	Kind sites.Kind // the compiler's site's kind (What == Compiler)
	Plan move.Plan  // What == Made
	Why  error      // What == None: wraps one of move.Reasons or this package's

}

// A Table is a file's functions, in address order.
type Table struct {
	Path    string
	BuildID string
	From    string // FromSymtab, FromDebug or FromEHFrame
	Debug   string // the debug file read, if From == FromDebug
	Funcs   []Func
	// ISA is the file's instruction set, which disassembles a plan's
	// moved instructions for a listing (Detail).
	ISA *isa.ISA
}

// Count returns how many functions got each What.
func (t *Table) Count() (compiler, made, none int) {
	for i := range t.Funcs {
		switch t.Funcs[i].What {
		case Compiler:
			compiler++
		case Made:
			made++
		default:
			none++
		}
	}
	return
}

// NotFunctions counts the entries that are code jumped to, not
// functions (ErrNotEntry): a coverage's denominator leaves them out.
func (t *Table) NotFunctions() int {
	n := 0
	for i := range t.Funcs {
		if t.Funcs[i].What == None && errors.Is(t.Funcs[i].Why, ErrNotEntry) {
			n++
		}
	}
	return n
}

// Reasons counts the functions left alone by reason, in move.Reasons'
// order and then this package's.
func (t *Table) Reasons() []ReasonCount {
	all := append(slices.Clone(move.Reasons), ErrEntryPoint, ErrLandingPad, ErrRuntime, ErrNotEntry, ErrNotCode, ErrNoISA)
	counts := make([]int, len(all)+1)
	for i := range t.Funcs {
		f := &t.Funcs[i]
		if f.What != None {
			continue
		}
		k := len(all)
		for j, r := range all {
			if errors.Is(f.Why, r) {
				k = j
				break
			}
		}
		counts[k]++
	}
	var out []ReasonCount
	for j, n := range counts {
		if n == 0 {
			continue
		}
		rc := ReasonCount{N: n, Reason: "other"}
		if j < len(all) {
			rc.Reason = all[j].Error()
		}
		out = append(out, rc)
	}
	return out
}

// A ReasonCount is how many functions one reason left alone.
type ReasonCount struct {
	Reason string
	N      int
}

// Find lists the functions of the linked file f and what site each can
// have.
func Find(f *elfx.File) (*Table, error) {
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, fmt.Errorf("%s: not a linked executable or shared object", f.Path)
	}
	t := &Table{Path: f.Path, BuildID: f.BuildID()}
	fns, err := t.functions(f)
	if err != nil {
		return nil, err
	}
	compiler := map[uint64]sites.Kind{}
	if l, err := sites.FindLinked(f); err == nil {
		for _, s := range l.Sites {
			compiler[s.Off-s.FuncOff] = s.Kind
		}
	} else if !errors.Is(err, sites.ErrNoTable) && !errors.Is(err, sites.ErrStripped) && !errors.Is(err, elfx.ErrNoSection) {
		return nil, fmt.Errorf("%s: its compiler sites: %w", f.Path, err)
	}
	is := isa.For(f.Arch)
	// Jump tables are read as the loader leaves them: in a PIE, a
	// table of addresses is filled by RELATIVE relocations.
	rel, err := f.Relatives()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	read := func(a uint64, n int) []byte {
		b, err := f.ReadAt(elfx.Addr(a), uint64(n))
		if err != nil {
			return nil
		}
		if rel.Len() == 0 {
			return b
		}
		b = slices.Clone(b)
		for w := (a + 7) &^ 7; w+8 <= a+uint64(n); w += 8 {
			if v, ok := rel.Lookup(elfx.Addr(w)); ok {
				binary.LittleEndian.PutUint64(b[w-a:], v)
			}
		}
		return b
	}
	bti := f.Arch == arch.ARM64 && f.AArch64BTI()
	var rt map[uint64]bool
	if _, syms, err := f.Symtab(); err == nil {
		rt = runtimeFuncs(syms)
	}
	// Each function is planned from the file's bytes alone, which
	// nothing writes: the functions are shared among the processors in
	// contiguous parts (a plan decodes the whole function; 10,000 of
	// them take tens of milliseconds on one processor).
	one := func(i int) {
		fn := &fns[i]
		if k, ok := compiler[fn.Addr]; ok {
			fn.What, fn.Kind = Compiler, k
			return
		}
		if rt[fn.Addr] {
			fn.Why = ErrRuntime
			return
		}
		fn.Why = plan(f, is, fn, fns[i+1:], read, bti)
		if fn.Why == nil {
			fn.What = Made
		}
	}
	parts := min(runtime.GOMAXPROCS(0), (len(fns)+255)/256)
	var wg sync.WaitGroup
	for k := range parts {
		wg.Go(func() {
			for i := k * len(fns) / parts; i < (k+1)*len(fns)/parts; i++ {
				one(i)
			}
		})
	}
	wg.Wait()
	t.Funcs, t.ISA = fns, is
	return t, nil
}

// plan plans fn's prologue site; next are the functions after it, whose
// start bounds the padding fn may use.
func plan(f *elfx.File, is *isa.ISA, fn *Func, next []Func, read func(uint64, int) []byte, bti bool) error {
	if is.PlanPrologue == nil {
		return ErrNoISA
	}
	if f.Entry != 0 && fn.Addr == uint64(f.Entry) {
		return ErrEntryPoint
	}
	if strings.HasSuffix(fn.Name, ".cold") || strings.Contains(fn.Name, ".cold.") {
		return ErrNotEntry
	}
	if sec := sectionAt(f, fn.Addr); sec != nil && (strings.HasPrefix(sec.Name, ".plt") || sec.Name == ".iplt") {
		return ErrNotEntry
	}
	seg := execSegment(f, fn.Addr)
	if seg == nil || fn.Addr+fn.Size > uint64(seg.Vaddr)+seg.Filesz {
		return ErrNotCode
	}
	end := uint64(seg.Vaddr) + seg.Filesz
	if len(next) > 0 && next[0].Addr < end && next[0].Addr >= fn.Addr+fn.Size {
		end = next[0].Addr
	}
	end = min(end, fn.Addr+fn.Size+16) // padding beyond 16 bytes is no function's
	code, err := f.ReadAt(elfx.Addr(fn.Addr), end-fn.Addr)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotCode, err)
	}
	if bti && len(code) >= 4 {
		if w := binary.LittleEndian.Uint32(code); w == arm64.PACIASP || w == arm64.PACIBSP {
			return ErrLandingPad
		}
	}
	p, err := is.PlanPrologue(code, fn.Addr, int(fn.Size), read)
	if err != nil {
		return err
	}
	fn.Plan = p
	return nil
}

// runtimeName says whether a symbol's name is one of ftpatch's
// runtime's (or module stub's): its functions and data are named ftrt_*
// or ftrace_*, its return handler return_to_handler. (Its hooks and the
// functions it wraps, __wrap_*, are not told by their names: the C
// library has an mcount of its own, and arm64's start file a local
// __wrap_main.)
func runtimeName(n string) bool {
	return strings.HasPrefix(n, "ftrt_") || strings.HasPrefix(n, "ftrace_") || n == "return_to_handler"
}

// runtimeFuncs are the addresses of the functions of ftpatch's runtime
// linked into a file (or of its module stub), from its symbol table:
// those its names give away, and the static functions of its source
// files, which are the local symbols that follow an STT_FILE symbol up
// to the next, in a run that names one of the runtime's symbols.
func runtimeFuncs(syms []elfx.Symbol) map[uint64]bool {
	out := map[uint64]bool{}
	runStart, runtime := 0, false
	flush := func(end int) {
		if runtime {
			for i := runStart; i < end; i++ {
				if funcs.IsFunc(&syms[i]) {
					out[uint64(syms[i].Value)] = true
				}
			}
		}
	}
	for i := range syms {
		s := &syms[i]
		if s.Type() == elf.STT_FILE || s.Bind() != elf.STB_LOCAL {
			if s.Bind() != elf.STB_LOCAL || s.Type() == elf.STT_FILE {
				flush(i)
				runStart, runtime = i, false
			}
		}
		if runtimeName(s.Name) {
			runtime = true
			if funcs.IsFunc(s) {
				out[uint64(s.Value)] = true
			}
		}
	}
	flush(len(syms))
	if len(out) > 0 {
		// The file links the runtime: its hooks and the functions it
		// wraps are its too.
		for i := range syms {
			if n := syms[i].Name; funcs.IsFunc(&syms[i]) && (n == "__fentry__" || n == "mcount" || n == "_mcount" || strings.HasPrefix(n, "__wrap_")) {
				out[uint64(syms[i].Value)] = true
			}
		}
	}
	return out
}

// sectionAt returns the allocated section holding a, or nil.
func sectionAt(f *elfx.File, a uint64) *elfx.Section {
	for _, s := range f.Sections[1:] {
		if s.Flags&elf.SHF_ALLOC != 0 && a >= uint64(s.Addr) && a < uint64(s.Addr)+s.Size {
			return s
		}
	}
	return nil
}

// execSegment returns the executable PT_LOAD segment holding a.
func execSegment(f *elfx.File, a uint64) *elfx.Prog {
	for i := range f.Progs {
		p := &f.Progs[i]
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && a >= uint64(p.Vaddr) && a < uint64(p.Vaddr)+p.Filesz {
			return p
		}
	}
	return nil
}

// functions lists the file's functions, one per address, sorted, from
// the best source it has (funcs.FileSymbols).
func (t *Table) functions(f *elfx.File) ([]Func, error) {
	syms, from, debug, err := funcs.FileSymbols(f)
	if err != nil {
		return nil, err
	}
	t.From, t.Debug = from, debug
	return fromSymbols(syms), nil
}

// fromSymbols picks the function symbols of a table by funcs' rules:
// one per address (the name funcs.Rank prefers), those of size 0 left
// out (an assembler's label, no extent to plan in).
func fromSymbols(syms []elfx.Symbol) []Func {
	var es []funcs.Entry
	for i := range syms {
		s := &syms[i]
		if !funcs.IsFunc(s) || s.Size == 0 {
			continue
		}
		es = append(es, funcs.Entry{Start: uint64(s.Value), End: uint64(s.Value) + s.Size, ID: int32(i), Rank: funcs.Rank(s.Bind())})
	}
	idx := funcs.New(es)
	out := make([]Func, 0, idx.Len())
	for _, e := range idx.Entries() {
		out = append(out, Func{Name: syms[e.ID].Name, Addr: e.Start, Size: e.End - e.Start})
	}
	return out
}
