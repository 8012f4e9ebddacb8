package trace

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/ianlancetaylor/demangle"

	"ftpatch/elfx"
)

// Symbols names addresses from symbol tables: one file's at its file
// addresses (LoadSymbols), or a traced process's at the addresses its
// modules ran at (LoadProcess).
type Symbols struct {
	funcs []fsym   // sorted by start; one name per start (the global alias)
	reach []uint64 // reach[i]: the greatest end of funcs[0..i]
}

type fsym struct {
	start, end uint64
	name       string
	global     bool
}

// LoadProcess names the run-time addresses of the process a trace
// recorded: the executable's functions (from exe, or the path the trace
// names when exe is ""), at its load bias, and those of every shared
// object the runtime served, at theirs. The executable must be readable
// and, when the trace has its build-id, the same build. A shared object
// that cannot be read, or is another build than the one traced, is left
// unnamed (its addresses show bare) and reported in warnings. Where two
// modules ran at the same addresses at different times (one unloaded,
// another loaded there), the one loaded later names them.
func LoadProcess(m *Meta, exe string) (*Symbols, []error, error) {
	if exe == "" {
		exe = m.Exe
	}
	s, err := LoadSymbols(exe, m.BuildID)
	if err != nil {
		return nil, nil, err
	}
	s.rebase(m.Bias)
	var warns []error
	seen := map[[2]string]bool{}
	for _, md := range m.Modules {
		key := [2]string{md.Path, strconv.FormatUint(md.Bias, 16)}
		if seen[key] {
			continue // loaded again at the same place
		}
		seen[key] = true
		ms, err := LoadSymbols(md.Path, md.BuildID)
		if err != nil {
			warns = append(warns, fmt.Errorf("shared object: %w; its functions show as addresses", err))
			continue
		}
		ms.rebase(md.Bias)
		s.add(ms, md.Lo, md.Hi)
	}
	if m.ModulesForgotten > 0 {
		warns = append(warns, fmt.Errorf("the runtime forgot %d of the shared objects it served (too many loads): their functions show as addresses", m.ModulesForgotten))
	}
	return s, warns, nil
}

// rebase moves every function by bias: file addresses to run-time ones.
func (s *Symbols) rebase(bias uint64) {
	for i := range s.funcs {
		s.funcs[i].start += bias
		s.funcs[i].end += bias
	}
	s.index()
}

// index computes reach, for Lookup to know when no function further back
// can hold an address.
func (s *Symbols) index() {
	s.reach = make([]uint64, len(s.funcs))
	var most uint64
	for i, f := range s.funcs {
		most = max(most, f.end)
		s.reach[i] = most
	}
}

// add merges o's functions, which lie in [lo, hi), replacing any of s's
// there.
func (s *Symbols) add(o *Symbols, lo, hi uint64) {
	s.funcs = slices.DeleteFunc(s.funcs, func(f fsym) bool { return f.start >= lo && f.start < hi })
	s.funcs = append(s.funcs, o.funcs...)
	slices.SortStableFunc(s.funcs, func(a, b fsym) int { return cmp.Compare(a.start, b.start) })
	s.index()
}

// ErrBuildID: the executable given to name a trace's addresses is not the
// one that was traced.
var ErrBuildID = errors.New("build-id mismatch")

// LoadSymbols reads the function symbols of the executable at path. When
// buildID is not empty, the file's GNU build-id must match it: names from
// another build of the program would be silently wrong.
func LoadSymbols(path string, buildID ...string) (*Symbols, error) {
	f, err := elfx.Open(path)
	if err != nil {
		return nil, err
	}
	if len(buildID) > 0 && buildID[0] != "" {
		got := fileBuildID(f)
		if got != buildID[0] {
			return nil, fmt.Errorf("%s: %w: the trace was recorded from build-id %s, this file has %q (rebuilt since? pass the traced binary with --exe)", path, ErrBuildID, buildID[0], got)
		}
	}
	_, syms, err := f.Symtab()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: symbols are needed to name functions", path, err)
	}
	s := &Symbols{}
	for i := range syms {
		y := &syms[i]
		if y.Type() != elf.STT_FUNC || !y.Defined() || y.Name == "" {
			continue
		}
		// C++ names are shown demangled (a C name passes unchanged).
		s.funcs = append(s.funcs, fsym{uint64(y.Value), uint64(y.Value) + y.Size, demangle.Filter(y.Name), y.Bind() != elf.STB_LOCAL})
	}
	slices.SortFunc(s.funcs, func(a, b fsym) int {
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		if a.global != b.global {
			if a.global {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.name, b.name)
	})
	s.funcs = slices.CompactFunc(s.funcs, func(a, b fsym) bool { return a.start == b.start })
	s.index()
	return s, nil
}

// Lookup returns the function holding addr and the offset into it: of
// the functions whose extent holds it (a function of size 0 holds its
// own address), the one that starts last, as the runtime's load-time
// pass decides (runtime/src/symbols.c). That is the one starting nearest
// before addr, unless that one ends before addr: a zero-size label
// typed as a function inside another function's body, say.
func (s *Symbols) Lookup(addr uint64) (string, uint64, bool) {
	i := sort.Search(len(s.funcs), func(i int) bool { return s.funcs[i].start > addr }) - 1
	for ; i >= 0; i-- {
		f := s.funcs[i]
		if addr < f.end || addr == f.start {
			return f.name, addr - f.start, true
		}
		if i == 0 || s.reach[i-1] <= addr {
			break // no function further back reaches addr
		}
	}
	return "", 0, false
}

// Name formats addr as function+0xoff, or as a bare address.
func (s *Symbols) Name(addr uint64) string {
	name, off, ok := s.Lookup(addr)
	switch {
	case !ok:
		return fmt.Sprintf("0x%x", addr)
	case off == 0:
		return name
	default:
		return fmt.Sprintf("%s+0x%x", name, off)
	}
}

// Func names the function holding addr (a site: at the entry, or after
// endbr64 or the prologue), or gives the bare address.
func (s *Symbols) Func(addr uint64) string {
	if name, _, ok := s.Lookup(addr); ok {
		return name
	}
	return fmt.Sprintf("0x%x", addr)
}

// fileBuildID returns the hex GNU build-id of a linked file, or "".
func fileBuildID(f *elfx.File) string {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		d := f.SectionData(s)
		for len(d) >= 12 {
			namesz, descsz, typ := binary.LittleEndian.Uint32(d), binary.LittleEndian.Uint32(d[4:]), binary.LittleEndian.Uint32(d[8:])
			name := 12 + (uint64(namesz)+3)&^3
			end := name + (uint64(descsz)+3)&^3
			if name+uint64(descsz) > uint64(len(d)) {
				break
			}
			if typ == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && string(d[12:15]) == "GNU" {
				return hex.EncodeToString(d[name : name+uint64(descsz)])
			}
			if end > uint64(len(d)) {
				break
			}
			d = d[end:]
		}
	}
	return ""
}
