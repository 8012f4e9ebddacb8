package sites

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"ftpatch/elfx"
	"ftpatch/runtime/abi"
)

// PrologueName is the table of the prologue sites ftpatch instrument
// makes (abi.PrologueSection): per function, its trampoline's site and
// the function's address, neither relocated.
const PrologueName = abi.PrologueSection

// withPrologues is FindLinked for a file that ftpatch instrument wrote:
// the sites of its compiler's table or decoded entries (l, nil when it
// has none), and each trampoline's site, an ordinary patchable site at
// the start of a function symbol named as the function it came from.
func withPrologues(f *elfx.File, l *Linked, pro *elfx.Section) (*Linked, error) {
	_, syms, err := f.Symtab()
	if errors.Is(err, elfx.ErrNoSection) {
		return nil, fmt.Errorf("%w; %s", ErrStripped, strippedHint)
	}
	if err != nil {
		return nil, err
	}
	d := f.SectionData(pro)
	if len(d)%abi.PrologueEntry != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not a whole number of %d-byte entries", pro, len(d), abi.PrologueEntry)
	}
	if l == nil {
		l = &Linked{Arch: f.Arch}
	}
	if l.funcs == nil {
		l.funcs = newFuncIndex(syms, true)
	}
	rel, err := f.Relatives()
	if err != nil {
		return nil, err
	}
	calls := &callResolver{f: f, funcs: l.funcs.cursor(), rel: rel}
	areas := map[uint64]bool{}
	for i := 0; i < len(d); i += abi.PrologueEntry {
		areas[binary.LittleEndian.Uint64(d[i:])] = true
	}
	// A trampoline's site is a NOP at a function symbol's start, which
	// the decoding of a file without a table (one that links the
	// runtime, and so defines the hooks) takes for a disabled entry
	// site: it is listed once, as the prologue site it is.
	kept := l.Sites[:0]
	for _, st := range l.Sites {
		if !areas[st.Off] {
			kept = append(kept, st)
		}
	}
	l.Sites = kept
	for i := 0; i < len(d); i += abi.PrologueEntry {
		a := binary.LittleEndian.Uint64(d[i:])
		fun, ok := l.funcs.containing(0, a)
		if !ok || fun.start != a {
			return nil, &SiteError{"", a, "", fmt.Sprintf("%s's site is not at the start of a function symbol", PrologueName), nil}
		}
		st, err := classifyLinked(f, fun, a, areas, calls)
		if err != nil {
			return nil, err
		}
		st.Origin = FromPrologue
		l.Sites = append(l.Sites, *st)
	}
	sort.Slice(l.Sites, func(i, j int) bool { return l.Sites[i].Off < l.Sites[j].Off })
	return l, nil
}
