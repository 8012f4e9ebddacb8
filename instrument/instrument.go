// Package instrument writes a copy of a linked file with prologue sites
// made in it (ftpatch instrument): for each chosen function that has no
// compiler site, its first instructions move into a trampoline (an
// ordinary disabled site, the moved instructions rewritten, a jump
// back), and a jump to the trampoline takes their place. The
// trampolines, their table (abi.PrologueSection) and the program header
// table go into one new loadable segment (elfx.Extension); each
// trampoline gets a local function symbol of its function's name, so
// that the runtime, the trace reader, a debugger and a profiler all name
// what runs there as the function it came from.
//
// The copy runs untraced as the input does, at the cost of one direct
// jump per instrumented function; the runtime (linked, or preloaded)
// finds the table at load and treats each trampoline's site as any
// other: ftpatch sites, enable, disable and verify work on it.
package instrument

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"ftpatch/elfx"
	"ftpatch/isa"
	"ftpatch/prologue"
	"ftpatch/runtime/abi"
)

// TextSection is the new section holding the trampolines.
const TextSection = ".ftrt.text"

// trampAlign aligns each trampoline: a site must not cross a cache line
// on x86-64 (its call is written while other threads may run it), and
// arm64 instructions are 4-aligned.
const trampAlign = 16

// ErrInstrumented: the file already holds prologue sites; instrument the
// original instead.
var ErrInstrumented = errors.New("already instrumented (it has a " + abi.PrologueSection + " table)")

// ErrPacked: the file's code is unpacked at run time (UPX and its
// like leave no section headers, and their "UPX!" mark): what runs is
// not in the file to instrument.
var ErrPacked = errors.New("packed: its code is unpacked when it runs (instrument the unpacked file: upx -d)")

// ErrSigned: the file carries a signature over its bytes (a kernel
// module's appended one), which any rewrite breaks.
var ErrSigned = errors.New("signed: a signature is appended to it, which a rewrite would break")

// ErrNothing: no chosen function can have a prologue site.
var ErrNothing = errors.New("no function to instrument")

// Stats counts what Rewrite did.
type Stats struct {
	Made     int // functions instrumented
	Compiler int // chosen functions left to their compiler site
	Skipped  int // chosen functions without a site (Table says why), cold parts and stubs not counted
	Bytes    int // the new segment's size
}

// Rewrite returns the bytes of a copy of f with a prologue site made in
// every function of t for which choose says yes (nil: every function).
func Rewrite(f *elfx.File, t *prologue.Table, choose func(*prologue.Func) bool) ([]byte, Stats, error) {
	var st Stats
	if err := Check(f); err != nil {
		return nil, st, err
	}
	is := isa.For(f.Arch)
	if is.Trampoline == nil {
		return nil, st, fmt.Errorf("%s: %w", f.Path, prologue.ErrNoISA)
	}
	var chosen []*prologue.Func
	for i := range t.Funcs {
		fn := &t.Funcs[i]
		if choose != nil && !choose(fn) {
			continue
		}
		switch fn.What {
		case prologue.Made:
			chosen = append(chosen, fn)
		case prologue.Compiler:
			st.Compiler++
		default:
			if !errors.Is(fn.Why, prologue.ErrNotEntry) { // not a function at all
				st.Skipped++
			}
		}
	}
	if len(chosen) == 0 {
		return nil, st, fmt.Errorf("%s: %w", f.Path, ErrNothing)
	}
	x, err := f.Extend(elf.PF_R | elf.PF_X)
	if err != nil {
		return nil, st, fmt.Errorf("%s: %w", f.Path, err)
	}
	table := make([]byte, len(chosen)*abi.PrologueEntry)
	x.AddSection(abi.PrologueSection, elf.SHT_PROGBITS, 0, 8, uint64(len(table)))
	// Each trampoline's length may depend on where it lies (what its
	// rewritten operands reach), so they are made in address order at
	// the addresses the section will have.
	start := x.Next(trampAlign)
	var text []byte
	for i, fn := range chosen {
		pad := (trampAlign - len(text)%trampAlign) % trampAlign
		text = append(text, make([]byte, pad)...)
		at := uint64(start) + uint64(len(text))
		b, err := is.Trampoline(&fn.Plan, at)
		if err != nil {
			return nil, st, fmt.Errorf("%s: %s: its trampoline at 0x%x: %w", f.Path, fn.Name, at, err)
		}
		jump, err := is.PrologueJump(&fn.Plan, at)
		if err != nil {
			return nil, st, fmt.Errorf("%s: %s: the jump to its trampoline at 0x%x: %w", f.Path, fn.Name, at, err)
		}
		if err := checkOrig(f, fn); err != nil {
			return nil, st, err
		}
		if err := x.Patch(elfx.Addr(fn.Plan.Patch), jump); err != nil {
			return nil, st, fmt.Errorf("%s: %s: %w", f.Path, fn.Name, err)
		}
		binary.LittleEndian.PutUint64(table[i*abi.PrologueEntry:], at)
		binary.LittleEndian.PutUint64(table[i*abi.PrologueEntry+8:], fn.Addr)
		x.AddFunc(fn.Name, TextSection, elfx.Addr(at), uint64(len(b)))
		text = append(text, b...)
	}
	if got := x.AddSection(TextSection, elf.SHT_PROGBITS, elf.SHF_EXECINSTR, trampAlign, uint64(len(text))); got != start {
		return nil, st, fmt.Errorf("%s: trampolines placed at 0x%x, made for 0x%x", f.Path, uint64(got), uint64(start))
	}
	if err := x.SetData(abi.PrologueSection, table); err != nil {
		return nil, st, err
	}
	if err := x.SetData(TextSection, text); err != nil {
		return nil, st, err
	}
	out, err := x.Bytes()
	if err != nil {
		return nil, st, fmt.Errorf("%s: %w", f.Path, err)
	}
	st.Made = len(chosen)
	st.Bytes = int(x.Size())
	return out, st, nil
}

// Check says why f cannot be instrumented: it is instrumented already
// (ErrInstrumented), packed (ErrPacked) or signed (ErrSigned); nil when
// none of these.
func Check(f *elfx.File) error {
	switch {
	case f.Section(abi.PrologueSection) != nil:
		return fmt.Errorf("%s: %w", f.Path, ErrInstrumented)
	case len(f.Sections) <= 1 && bytes.Contains(f.Data[:min(len(f.Data), 4096)], []byte("UPX!")):
		return fmt.Errorf("%s: %w", f.Path, ErrPacked)
	case len(f.Sections) <= 1:
		return fmt.Errorf("%s: %w (it has no section headers)", f.Path, ErrPacked)
	case bytes.HasSuffix(f.Data, []byte("~Module signature appended~\n")):
		return fmt.Errorf("%s: %w", f.Path, ErrSigned)
	}
	return nil
}

// checkOrig checks that the bytes a plan moves are still those it was
// made from.
func checkOrig(f *elfx.File, fn *prologue.Func) error {
	b, err := f.ReadAt(elfx.Addr(fn.Plan.Patch), uint64(fn.Plan.Len))
	if err != nil {
		return fmt.Errorf("%s: %s: %w", f.Path, fn.Name, err)
	}
	if string(b) != string(fn.Plan.Orig) {
		return fmt.Errorf("%s: %s: bytes at 0x%x are % x, planned from % x", f.Path, fn.Name, fn.Plan.Patch, b, fn.Plan.Orig)
	}
	return nil
}
