package sites

import (
	"debug/elf"

	"ftpatch/elfx"
	"ftpatch/funcs"
)

// A fn is a function symbol's extent within its section.
type fn struct {
	start, end uint64 // section offsets (objects) or addresses (linked), end exclusive
	name       string
	bind       elf.SymBind
	sym        int // symbol index: among equal aliases, the first defined names the function
}

// funcIndex finds the function containing an offset, per section: the
// functions of a file by package funcs' rule, indexed by it. Built once
// per file from the symbol table, with the names left there (objects
// hold 100k functions).
type funcIndex struct {
	syms  []elfx.Symbol
	bySec []*funcs.Index // by section index (0 for linked files)
	count int            // function symbols in all
	// Lookup cursors by section, made on first use: sites arrive in
	// address order, so the next lookup is usually where the last was.
	cursors map[uint32]*funcs.Cursor
}

// cursor returns an index sharing x's tables with lookup cursors of its
// own, for one goroutine.
func (x *funcIndex) cursor() *funcIndex {
	c := *x
	c.cursors = map[uint32]*funcs.Cursor{}
	return &c
}

func (x *funcIndex) fn(e funcs.Entry) fn {
	s := &x.syms[e.ID]
	return fn{e.Start, e.End, s.Name, s.Bind(), int(e.ID)}
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
		if funcs.IsFunc(&syms[i]) {
			nsec = max(nsec, int(key(&syms[i]))+1)
		}
	}
	counts := make([]int, nsec)
	for i := range syms {
		if funcs.IsFunc(&syms[i]) {
			counts[key(&syms[i])]++
		}
	}
	es := make([][]funcs.Entry, nsec)
	x := &funcIndex{syms: syms, bySec: make([]*funcs.Index, nsec), cursors: map[uint32]*funcs.Cursor{}}
	for k, n := range counts {
		if n > 0 {
			es[k] = make([]funcs.Entry, 0, n)
			x.count += n
		}
	}
	for i := range syms {
		s := &syms[i]
		if funcs.IsFunc(s) {
			k := key(s)
			es[k] = append(es[k], funcs.Entry{Start: uint64(s.Value), End: uint64(s.Value) + s.Size, ID: int32(s.Index), Rank: funcs.Rank(s.Bind())})
		}
	}
	for k := range es {
		x.bySec[k] = funcs.New(es[k])
	}
	return x
}

// section returns the functions of section sec, by start.
func (x *funcIndex) section(sec uint32) []funcs.Entry {
	if int(sec) < len(x.bySec) {
		return x.bySec[sec].Entries()
	}
	return nil
}

// containing returns the function whose extent holds off in section sec
// (funcs.Index.Containing).
func (x *funcIndex) containing(sec uint32, off uint64) (fn, bool) {
	if int(sec) >= len(x.bySec) {
		return fn{}, false
	}
	c := x.cursors[sec]
	if c == nil {
		c = x.bySec[sec].Cursor()
		x.cursors[sec] = c
	}
	if e, ok := c.Containing(off); ok {
		return x.fn(e), true
	}
	return fn{}, false
}

// next returns the first function starting at or after off.
func (x *funcIndex) next(sec uint32, off uint64) (fn, bool) {
	if int(sec) >= len(x.bySec) {
		return fn{}, false
	}
	if e, ok := x.bySec[sec].Next(off); ok {
		return x.fn(e), true
	}
	return fn{}, false
}
