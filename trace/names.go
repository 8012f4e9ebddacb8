package trace

import "sort"

// A Namer names a trace's addresses as Symbols does, remembering the
// name of every address whose name does not depend on when it was
// recorded: in the executable, or in a shared object loaded once for the
// whole trace. One per goroutine: it is not safe for concurrent use.
type Namer struct {
	s      *Symbols
	funcs  map[uint64]string // FuncAt's names
	places map[uint64]string // NameAt's names
	srcs   map[uint64]string // SourceAt's positions
}

// Namer returns a Namer over s.
func (s *Symbols) Namer() *Namer {
	return &Namer{s: s, funcs: map[uint64]string{}, places: map[uint64]string{}, srcs: map[uint64]string{}}
}

// FuncAt is Symbols.FuncAt, remembered.
func (n *Namer) FuncAt(addr, ts uint64) string {
	if s, ok := n.funcs[addr]; ok {
		return s
	}
	return n.keep(n.funcs, addr, n.s.FuncAt(addr, ts))
}

// NameAt is Symbols.NameAt, remembered.
func (n *Namer) NameAt(addr, ts uint64) string {
	if s, ok := n.places[addr]; ok {
		return s
	}
	return n.keep(n.places, addr, n.s.NameAt(addr, ts))
}

// SourceAt is Symbols.SourceAt, remembered.
func (n *Namer) SourceAt(addr, ts uint64) string {
	if s, ok := n.srcs[addr]; ok {
		return s
	}
	return n.keep(n.srcs, addr, n.s.SourceAt(addr, ts))
}

// keep remembers addr's name s in cache when it holds at every time of
// the trace, and returns it.
func (n *Namer) keep(cache map[uint64]string, addr uint64, s string) string {
	if n.s.timeless(addr) {
		cache[addr] = s
	}
	return s
}

// timeless says whether addr names the same at every time of the trace:
// no shared object was mapped over it, or one was, once, for the whole
// trace.
func (s *Symbols) timeless(addr uint64) bool {
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
