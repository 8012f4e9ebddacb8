// Package symbols names the run-time addresses of a trace: the traced
// executable's functions and those of the shared objects it loaded, each
// over the time it was mapped (LoadProcess), from their symbol tables and
// DWARF line tables. It comes after the trace reader (package trace),
// whose Naming it implements, and before the model and the views, which
// see only names: names as shown, escaped (package escape), since a
// binary's symbol and file names may hold a terminal's escape sequences.
package symbols

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/ianlancetaylor/demangle"

	"ftpatch/elfx"
	"ftpatch/funcs"
	"ftpatch/internal/escape"
	"ftpatch/srcline"
	"ftpatch/trace"
)

// Table names addresses from symbol tables: one file's at its file
// addresses (Load), or a traced process's at the addresses its
// modules ran at, when they ran there (LoadProcess).
type Table struct {
	names []string         // the functions' names (demangled), by funcs.Entry.ID
	lib   map[int32]string // IDs naming a slot of the file's global offset table (a library function): the library its version names, or ""
	// libname: a process's table names a library function
	// name@library where its library is known (WithLibNames).
	libname bool
	// libNames are the names of lib's IDs, bare and name@library, made
	// when LibraryCall first asks.
	libOnce  sync.Once
	libNames map[string]bool
	funcs    *funcs.Index // one per start, by package funcs' rule
	// The shared objects of a process, one per file and place, sorted
	// by lo; an address in one of them is named from it, not from funcs.
	mods   []mapping
	mreach []uint64 // mreach[i]: the greatest hi of mods[0..i]

	// moved are the sites a process's runtime made at load from
	// prologues (record -P): each named, and placed in its source, as
	// its function.
	moved []trace.PrologueSite

	// A process's table names its executable's addresses from exe, the
	// file's table (shared by every process of that file: Cache), moved
	// by bias; a file's own table has none, and names from funcs.
	exe *Table

	// The file's path and its load bias (0 for a file's own symbols),
	// and its DWARF line table, read when first asked for (SourceAt).
	path     string
	bias     uint64
	linesMu  sync.Mutex
	lines    *srcline.Table
	linesErr error
}

// A mapping is a shared object mapped at one place: its extent, its
// file's symbols (nil when they could not be read: its addresses show
// bare) and the times it was loaded there (a plugin loaded again and
// again at the same place is one mapping).
type mapping struct {
	lo, hi  uint64 // its run-time extent
	bias    uint64
	file    *Table   // at file addresses
	windows []window // sorted by load
}

// A window is one load of a module: trace timestamps of its load (0:
// before the trace began) and unload (0: loaded until the end).
type window struct{ load, unload uint64 }

// at says how the mapping stands at trace time ts, for module to choose
// among mappings at the same addresses: rank 2 mapped then, 1 loaded
// before then (and unloaded), 0 loaded only after; key is the load of
// its last window that began by ts, or with rank 0 its first load.
func (m *mapping) at(ts uint64) (rank int, key uint64) {
	i := sort.Search(len(m.windows), func(i int) bool { return m.windows[i].load > ts }) - 1
	switch {
	case i < 0:
		return 0, m.windows[0].load
	case m.windows[i].unload == 0 || ts < m.windows[i].unload:
		return 2, m.windows[i].load
	}
	return 1, m.windows[i].load
}

// LoadProcess names the run-time addresses of the process a trace
// recorded: the executable's functions (from exe, or the path the trace
// names when exe is ""), at its load bias, and those of every shared
// object the runtime served, at theirs, over the time each was loaded.
// The executable must be readable and, when the trace has its build-id,
// the same build. A shared object that cannot be read, or is another
// build than the one traced, is left unnamed (its addresses show bare)
// and reported in warnings, once per file. (Cache.LoadProcess, with a
// cache of its own.)
func LoadProcess(m *trace.Meta, exe string) (*Table, []error, error) {
	return NewCache().LoadProcess(m, exe)
}

// A Cache reads each file's symbols once for all the processes whose
// tables it loads: a session of 1,000 processes of one program holds
// that program's symbols once, not 1,000 times. Safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	files map[fileKey]*cached
}

type fileKey struct{ path, buildID string }

// A cached file: its table, or why it could not be read; warned says
// its failure has been reported once already.
type cached struct {
	t      *Table
	err    error
	warned bool
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{files: map[fileKey]*cached{}} }

// load is Load of path and buildID, once per pair.
func (c *Cache) load(path, buildID string) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := fileKey{path, buildID}
	f, ok := c.files[k]
	if !ok {
		f = &cached{}
		f.t, f.err = Load(path, buildID)
		c.files[k] = f
	}
	return f
}

// LoadProcess is the package's LoadProcess, reading each file once for
// all the processes of c; a shared object that cannot be read is
// warned of by the first process that maps it.
func (c *Cache) LoadProcess(m *trace.Meta, exe string) (*Table, []error, error) {
	if exe == "" {
		exe = m.Exe
	}
	if exe == "" {
		return nil, nil, errors.New("the trace names no executable: give the traced program with --exe")
	}
	f := c.load(exe, m.BuildID)
	if f.err != nil {
		return nil, nil, f.err
	}
	s := &Table{exe: f.t, path: f.t.path, bias: m.Bias, moved: m.Prologues}
	var warns []error
	s.MapModules(m.Modules, func(md trace.Module) *Table {
		f := c.load(md.Path, md.BuildID)
		if f.err != nil {
			c.mu.Lock()
			if !f.warned {
				f.warned = true
				warns = append(warns, fmt.Errorf("shared object: %w; its functions show as addresses", f.err))
			}
			c.mu.Unlock()
		}
		return f.t // nil when unreadable: unnamed, and warned once
	})
	if m.ModulesForgotten > 0 {
		warns = append(warns, fmt.Errorf("the runtime forgot %d of the shared objects it served (too many loads): their functions show as addresses", m.ModulesForgotten))
	}
	return s, warns, nil
}

// MapModules adds the shared objects of a process, each load at its
// extent and over its time, named from the symbols file gives for it
// (nil: its addresses show bare); loads of one file at one place make
// one mapping. They are sorted by address with mreach, for module to
// know when no mapping further back can hold an address. LoadProcess
// calls it with the files it reads; one who has the modules' tables in
// hand (a synthetic trace) calls it on the executable's table itself.
func (s *Table) MapModules(mods []trace.Module, file func(trace.Module) *Table) {
	type place struct {
		lo, hi, bias uint64
		file         *Table
	}
	at := map[place]int{} // index in s.mods
	for _, md := range mods {
		p := place{md.Lo, md.Hi, md.Bias, file(md)}
		i, ok := at[p]
		if !ok {
			i = len(s.mods)
			at[p] = i
			s.mods = append(s.mods, mapping{lo: p.lo, hi: p.hi, bias: p.bias, file: p.file})
		}
		s.mods[i].windows = append(s.mods[i].windows, window{md.Load, md.Unload})
	}
	for i := range s.mods {
		slices.SortFunc(s.mods[i].windows, func(a, b window) int { return cmp.Compare(a.load, b.load) })
	}
	slices.SortStableFunc(s.mods, func(a, b mapping) int { return cmp.Compare(a.lo, b.lo) })
	s.mreach = make([]uint64, len(s.mods))
	var most uint64
	for i, md := range s.mods {
		most = max(most, md.hi)
		s.mreach[i] = most
	}
}

// module returns the shared object mapped at addr at trace time ts:
// of those whose extent holds addr, the one mapped then; failing that
// (timestamps from another CPU's clock, a record at its very load), the
// last loaded before ts, or the first loaded. Where one was loaded,
// unloaded and another loaded at the same addresses, each names its
// own calls.
func (s *Table) module(addr, ts uint64) *mapping {
	i := sort.Search(len(s.mods), func(i int) bool { return s.mods[i].lo > addr }) - 1
	var best *mapping
	var bestRank int
	var bestKey uint64
	for ; i >= 0 && s.mreach[i] > addr; i-- {
		m := &s.mods[i]
		if addr >= m.hi {
			continue
		}
		rank, key := m.at(ts)
		if best == nil || rank > bestRank || (rank == bestRank && (rank == 0) == (key < bestKey)) {
			best, bestRank, bestKey = m, rank, key
		}
	}
	return best
}

// LookupAt is Lookup of a process's address at trace time ts: in the
// shared object mapped there then, if any.
func (s *Table) LookupAt(addr, ts uint64) (string, uint64, bool) {
	if f, ok := trace.MovedTo(s.moved, addr); ok {
		addr = f
	}
	m := s.module(addr, ts)
	switch {
	case m == nil:
		return s.Lookup(addr)
	case m.file == nil || addr < m.bias:
		return "", 0, false
	}
	return m.file.lookup(addr-m.bias, s.libname)
}

// SourceAt is the source file and line of a process's address at trace
// time ts (a site: its function's opening line), from the DWARF line
// table of the file mapped there then; "" when the file has none (built
// without -g) or does not cover it. The first lookup in a file reads its
// table; one that cannot be read is left out, and reported by
// SourceErrors.
func (s *Table) SourceAt(addr, ts uint64) string {
	if f, ok := trace.MovedTo(s.moved, addr); ok {
		addr = f
	}
	file, at := s, addr-s.bias
	if s.exe != nil {
		file = s.exe
	}
	if m := s.module(addr, ts); m != nil {
		if m.file == nil || addr < m.bias {
			return ""
		}
		file, at = m.file, addr-m.bias
	}
	t := file.lineTable()
	if t == nil {
		return ""
	}
	var pos srcline.Pos
	var ok bool
	if e, in := file.funcs.Before(at); in && at < max(e.End, e.Start+1) {
		pos, ok = t.LookupIn(at, e.Start, max(e.End, e.Start+1))
	} else {
		pos, ok = t.Lookup(at)
	}
	if !ok {
		return ""
	}
	return escape.Text(pos.String()) // DWARF's file names are the file's
}

// lineTable is the file's DWARF line table, read once; nil when it
// cannot be read.
func (s *Table) lineTable() *srcline.Table {
	s.linesMu.Lock()
	defer s.linesMu.Unlock()
	if s.lines == nil && s.linesErr == nil {
		s.linesErr = errors.New("no file")
		if s.path != "" {
			var f *elfx.File
			if f, s.linesErr = elfx.Open(s.path); s.linesErr == nil {
				s.lines, s.linesErr = srcline.Read(f)
			}
		}
	}
	return s.lines
}

// SourceErrors are the line tables SourceAt could not read, one per
// file (a file without DWARF is none).
func (s *Table) SourceErrors() []error {
	var out []error
	seen := map[*Table]bool{}
	for _, f := range append([]*Table{s, s.exe}, s.files()...) {
		if f == nil || seen[f] {
			continue
		}
		seen[f] = true
		f.linesMu.Lock()
		if f.lines == nil && f.linesErr != nil && f.path != "" {
			out = append(out, fmt.Errorf("%s: source lines: %w", f.path, f.linesErr))
		}
		f.linesMu.Unlock()
	}
	return out
}

// files are the shared objects' symbols.
func (s *Table) files() []*Table {
	var out []*Table
	for i := range s.mods {
		out = append(out, s.mods[i].file)
	}
	return out
}

// ErrBuildID: the executable given to name a trace's addresses is not the
// one that was traced.
var ErrBuildID = errors.New("build-id mismatch")

// Load reads the function symbols of the executable at path. When
// buildID is not empty, the file's GNU build-id must match it: names from
// another build of the program would be silently wrong.
func Load(path string, buildID ...string) (*Table, error) {
	f, err := elfx.Open(path)
	if err != nil {
		return nil, err
	}
	if len(buildID) > 0 && buildID[0] != "" {
		got := f.BuildID()
		if got != buildID[0] {
			return nil, fmt.Errorf("%s: %w: the trace was recorded from build-id %s, this file has %q (rebuilt since? pass the traced binary with --exe)", path, ErrBuildID, buildID[0], got)
		}
	}
	// A stripped file (a distribution's program or library): its debug
	// file's symbols, or its exported functions and .eh_frame's ranges
	// (funcs.FileSymbols); a library's GOT slots from its relocations
	// as below.
	syms, _, _, err := funcs.FileSymbols(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: symbols are needed to name functions", path, err)
	}
	s := &Table{path: path}
	var es []funcs.Entry
	for i := range syms {
		y := &syms[i]
		if !funcs.IsFunc(y) {
			continue
		}
		// C++ names are shown demangled (a C name passes unchanged), and
		// escaped: a symbol may hold a terminal's escape sequences.
		es = append(es, funcs.Entry{Start: uint64(y.Value), End: uint64(y.Value) + y.Size, ID: int32(len(s.names)), Rank: funcs.Rank(y.Bind())})
		s.names = append(s.names, escape.Text(demangle.Filter(y.Name)))
	}
	// The slots of its global offset table through which it calls
	// functions of shared objects: the runtime's library-call hooks
	// record a call by its slot's address (elfx.File.LibCall), so a
	// slot is named as the function called through it.
	if relocs, err := f.DynRelocs(); err == nil {
		var libOf []elf.Symbol // the dynamic symbols, with the library each versioned import names
		for at, d := range relocs {
			if !f.LibCall(&d) {
				continue
			}
			if libOf == nil {
				libOf = importLibraries(path)
			}
			es = append(es, funcs.Entry{Start: at, End: at + 8, ID: int32(len(s.names)), Rank: funcs.Rank(elf.STB_GLOBAL)})
			s.names = append(s.names, escape.Text(demangle.Filter(d.Sym.Name)))
			if s.lib == nil {
				s.lib = map[int32]string{}
			}
			lib := ""
			if i := int(d.SymIndex) - 1; i >= 0 && i < len(libOf) {
				lib = escape.Text(libOf[i].Library)
			}
			s.lib[int32(len(s.names)-1)] = lib
		}
	}
	s.funcs = funcs.New(es)
	return s, nil
}

// importLibraries are the file's dynamic symbols (index i is the table's
// i+1) with the library each versioned import names (its version's
// file: libc.so.6 for GLIBC_2.2.5): what --libname shows. None when
// the file cannot be read so.
func importLibraries(path string) []elf.Symbol {
	f, err := elf.Open(path)
	if err != nil {
		return []elf.Symbol{}
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return []elf.Symbol{}
	}
	return syms
}

// A Func is a function New names: its extent [Start, End) and its name.
type Func struct {
	Start, End uint64 // its extent: [Start, End), at the addresses it is named at
	Name       string // as shown (demangled already, if it is C++; New escapes it)
}

// New returns a Table naming fs at their addresses, for a trace whose
// names come from elsewhere than a file's symbol table (a synthetic
// trace, in tests and benchmarks). Of functions starting at one address
// the larger is kept, then the first by name.
func New(fs []Func) *Table {
	fs = slices.Clone(fs)
	slices.SortStableFunc(fs, func(a, b Func) int { return cmp.Compare(a.Name, b.Name) })
	s := &Table{names: make([]string, len(fs))}
	es := make([]funcs.Entry, len(fs))
	for i, f := range fs {
		s.names[i] = escape.Text(f.Name)
		es[i] = funcs.Entry{Start: f.Start, End: f.End, ID: int32(i)}
	}
	s.funcs = funcs.New(es)
	return s
}

// Lookup returns the function holding addr and the offset into it: of
// the functions whose extent holds it (a function of size 0 holds its
// own address), the one that starts last, as the runtime's load-time
// pass decides (funcs.Index.Containing).
func (s *Table) Lookup(addr uint64) (string, uint64, bool) {
	if s.exe != nil { // a process's: its executable's, at its bias
		return s.exe.lookup(addr-s.bias, s.libname)
	}
	return s.lookup(addr, s.libname)
}

// lookup is Lookup in the file's own table, a library function named
// name@library when libname asks and its library is known.
func (s *Table) lookup(addr uint64, libname bool) (string, uint64, bool) {
	e, ok := s.funcs.Containing(addr)
	if !ok {
		return "", 0, false
	}
	if lib := s.lib[e.ID]; libname && lib != "" {
		return s.names[e.ID] + "@" + lib, addr - e.Start, true
	}
	return s.names[e.ID], addr - e.Start, true
}

// LibraryCall says whether name, as this table names calls (with or
// without --libname's @library), is a function of a shared object the
// traced files call through their GOT slots: what report marks as a
// library row. A process's table asks its executable's file and every
// shared object's.
func (s *Table) LibraryCall(name string) bool {
	if s.exe != nil && s.exe.LibraryCall(name) {
		return true
	}
	for i := range s.mods {
		if f := s.mods[i].file; f != nil && f.LibraryCall(name) {
			return true
		}
	}
	s.libOnce.Do(func() {
		s.libNames = map[string]bool{}
		for id, lib := range s.lib {
			s.libNames[s.names[id]] = true
			if lib != "" {
				s.libNames[s.names[id]+"@"+lib] = true
			}
		}
	})
	return s.libNames[name]
}

// WithLibNames makes s, a process's table, name each library function
// called through a GOT slot as name@library (the library its symbol
// version names), for --libname; it returns s.
func (s *Table) WithLibNames() *Table {
	s.libname = true
	return s
}

// Name formats addr as function+0xoff, or as a bare address.
func (s *Table) Name(addr uint64) string {
	return formatAddr(addr, s.Lookup)
}

// NameAt is Name of a process's address at trace time ts (LookupAt).
func (s *Table) NameAt(addr, ts uint64) string {
	return formatAddr(addr, func(a uint64) (string, uint64, bool) { return s.LookupAt(a, ts) })
}

// Func names the function holding addr (a site: at the entry, or after
// endbr64 or the prologue), or gives the bare address.
func (s *Table) Func(addr uint64) string {
	if name, _, ok := s.Lookup(addr); ok {
		return name
	}
	return fmt.Sprintf("0x%x", addr)
}

// FuncAt is Func of a process's address at trace time ts (LookupAt).
func (s *Table) FuncAt(addr, ts uint64) string {
	if name, _, ok := s.LookupAt(addr, ts); ok {
		return name
	}
	return fmt.Sprintf("0x%x", addr)
}

// formatAddr writes addr as lookup names it: function+0xoff, or bare.
func formatAddr(addr uint64, lookup func(uint64) (string, uint64, bool)) string {
	name, off, ok := lookup(addr)
	switch {
	case !ok:
		return fmt.Sprintf("0x%x", addr)
	case off == 0:
		return name
	default:
		return fmt.Sprintf("%s+0x%x", name, off)
	}
}
