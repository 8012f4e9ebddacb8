package sites

import (
	"cmp"
	"debug/elf"
	"slices"
	"sort"

	"ftpatch/elfx"
)

// A fn is a function symbol's extent within its section.
type fn struct {
	start, end uint64 // section offsets (objects) or addresses (linked), end exclusive
	name       string
	bind       elf.SymBind
	sym        int // symbol index: among equal aliases, the first defined names the function
}

// An entry is a function's extent as the index stores it: 24 bytes, with
// the name left in the symbol table (objects hold 100k functions).
type entry struct {
	start, end uint64
	sym        int32
	bind       elf.SymBind
}

// funcIndex finds the function containing an offset, per section. Built
// once per file from the symbol table.
type funcIndex struct {
	syms  []elfx.Symbol
	bySec [][]entry  // by section index (0 for linked files), sorted by start, aliases collapsed to one entry
	reach [][]uint64 // reach[k][i]: the greatest end of bySec[k][0..i]
	count int        // function symbols in all
	// The last lookup's section and index: sites arrive in address order,
	// so the next lookup is usually there or one further.
	lastSec uint32
	lastFns []entry
	lastI   int
}

// cursor returns an index sharing x's tables with a lookup cursor of its
// own, for one goroutine.
func (x *funcIndex) cursor() *funcIndex {
	c := *x
	c.lastFns, c.lastI, c.lastSec = nil, 0, 0
	return &c
}

func (x *funcIndex) fn(e entry) fn {
	return fn{e.start, e.end, x.syms[e.sym].Name, e.bind, int(e.sym)}
}

// bindRank orders aliases: the name a user knows is the global one.
func bindRank(b elf.SymBind) int {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	}
	return 2
}

// isFunc reports whether s names a function defined here. A nameless
// function symbol names nothing a user could trace or list.
func isFunc(s *elfx.Symbol) bool {
	t := s.Type()
	return (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) && s.Defined() && s.Name != ""
}

func newFuncIndex(syms []elfx.Symbol, linked bool) *funcIndex {
	key := func(s *elfx.Symbol) uint32 {
		if linked {
			return 0 // one address space
		}
		return s.Shndx
	}
	// Size each section's slice first: objects hold 100k functions.
	nsec := 1
	for i := range syms {
		if isFunc(&syms[i]) {
			nsec = max(nsec, int(key(&syms[i]))+1)
		}
	}
	counts := make([]int, nsec)
	for i := range syms {
		if isFunc(&syms[i]) {
			counts[key(&syms[i])]++
		}
	}
	idx := &funcIndex{syms: syms, bySec: make([][]entry, nsec)}
	for k, n := range counts {
		if n > 0 {
			idx.bySec[k] = make([]entry, 0, n)
			idx.count += n
		}
	}
	for i := range syms {
		s := &syms[i]
		if isFunc(s) {
			k := key(s)
			idx.bySec[k] = append(idx.bySec[k], entry{uint64(s.Value), uint64(s.Value) + s.Size, int32(s.Index), s.Bind()})
		}
	}
	byStart := func(a, b entry) int {
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		if ra, rb := bindRank(a.bind), bindRank(b.bind); ra != rb {
			return cmp.Compare(ra, rb)
		}
		if a.end != b.end {
			return cmp.Compare(b.end, a.end)
		}
		return cmp.Compare(a.sym, b.sym)
	}
	for k, fs := range idx.bySec {
		if !slices.IsSortedFunc(fs, byStart) {
			slices.SortFunc(fs, byStart)
		}
		// Keep one symbol per start address: the preferred alias.
		out := fs[:0]
		for _, f := range fs {
			if len(out) > 0 && out[len(out)-1].start == f.start {
				continue
			}
			out = append(out, f)
		}
		idx.bySec[k] = out
	}
	idx.reach = make([][]uint64, len(idx.bySec))
	for k, fs := range idx.bySec {
		var most uint64
		for _, f := range fs {
			most = max(most, f.end)
			idx.reach[k] = append(idx.reach[k], most)
		}
	}
	return idx
}

func (x *funcIndex) section(sec uint32) []entry {
	if int(sec) < len(x.bySec) {
		return x.bySec[sec]
	}
	return nil
}

// containing returns the function whose extent holds off: of those that
// hold it, the one that starts last, as the runtime's load-time pass and
// the trace reader decide. A zero-size symbol holds only its own start,
// so a site after a zero-size label inside a function is the function's.
func (x *funcIndex) containing(sec uint32, off uint64) (fn, bool) {
	fs := x.lastFns
	if fs == nil || sec != x.lastSec {
		fs = x.section(sec)
		x.lastSec, x.lastFns, x.lastI = sec, fs, 0
	}
	i := -1
	for _, j := range [2]int{x.lastI, x.lastI + 1} {
		if j < len(fs) && fs[j].start <= off && (j+1 == len(fs) || fs[j+1].start > off) {
			i = j
			break
		}
	}
	if i < 0 {
		i = sort.Search(len(fs), func(i int) bool { return fs[i].start > off }) - 1
	}
	if i >= 0 {
		x.lastI = i
	}
	reach := x.reach[0]
	if int(sec) < len(x.reach) {
		reach = x.reach[sec]
	}
	for ; i >= 0; i-- {
		f := fs[i]
		if off < f.end || off == f.start {
			return x.fn(f), true
		}
		if i == 0 || reach[i-1] <= off {
			break // no function further back reaches off
		}
	}
	return fn{}, false
}

// next returns the first function starting at or after off.
func (x *funcIndex) next(sec uint32, off uint64) (fn, bool) {
	fs := x.section(sec)
	i := sort.Search(len(fs), func(i int) bool { return fs[i].start >= off })
	if i == len(fs) {
		return fn{}, false
	}
	return x.fn(fs[i]), true
}
