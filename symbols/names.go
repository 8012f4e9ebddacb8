package symbols

import (
	"sort"

	"ftpatch/trace"
)

// A namer names a trace's addresses as Table does, remembering the
// name of every address whose name does not depend on when it was
// recorded: in the executable, or in a shared object loaded once for the
// whole trace. One per goroutine: it is not safe for concurrent use.
type namer struct {
	s      *Table
	funcs  map[uint64]string // FuncAt's names
	places map[uint64]string // NameAt's names
	srcs   map[uint64]string // SourceAt's positions
}

// Namer returns a trace.Namer over s for one goroutine: it remembers
// the names it gave, so a trace's reader names each address once.
func (s *Table) Namer() trace.Namer {
	return &namer{s: s, funcs: map[uint64]string{}, places: map[uint64]string{}, srcs: map[uint64]string{}}
}

// FuncAt is Table.FuncAt, remembered.
func (n *namer) FuncAt(addr, ts uint64) string {
	if s, ok := n.funcs[addr]; ok {
		return s
	}
	return n.keep(n.funcs, addr, n.s.FuncAt(addr, ts))
}

// NameAt is Table.NameAt, remembered.
func (n *namer) NameAt(addr, ts uint64) string {
	if s, ok := n.places[addr]; ok {
		return s
	}
	return n.keep(n.places, addr, n.s.NameAt(addr, ts))
}

// SourceAt is Table.SourceAt, remembered.
func (n *namer) SourceAt(addr, ts uint64) string {
	if s, ok := n.srcs[addr]; ok {
		return s
	}
	return n.keep(n.srcs, addr, n.s.SourceAt(addr, ts))
}

// keep remembers addr's name s in cache when it holds at every time of
// the trace, and returns it.
func (n *namer) keep(cache map[uint64]string, addr uint64, s string) string {
	if n.s.timeless(addr) {
		cache[addr] = s
	}
	return s
}

// timeless says whether addr names the same at every time of the trace:
// no shared object was mapped over it, or one was, once, for the whole
// trace.
func (s *Table) timeless(addr uint64) bool {
	holders := 0
	i := sort.Search(len(s.mods), func(i int) bool { return s.mods[i].lo > addr }) - 1
	for ; i >= 0 && s.mreach[i] > addr; i-- {
		m := &s.mods[i]
		if addr >= m.hi {
			continue
		}
		holders++
		if holders > 1 || len(m.windows) != 1 || m.windows[0] != (window{}) {
			return false
		}
	}
	return true
}
