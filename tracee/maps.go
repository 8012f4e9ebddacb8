package tracee

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"ftpatch/elfx"
)

// A Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64
	Perm       string // r, w, x, p or s, as the kernel prints them
	Offset     uint64 // in the file
	Path       string // the file, or [stack], [vdso]..., "" if anonymous
}

// Maps lists process pid's mappings.
func Maps(pid int) ([]Mapping, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "maps"))
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	defer f.Close()
	var out []Mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perm offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		if !ok {
			continue
		}
		var m Mapping
		m.Start, _ = strconv.ParseUint(lo, 16, 64)
		m.End, _ = strconv.ParseUint(hi, 16, 64)
		m.Perm = fs[1]
		m.Offset, _ = strconv.ParseUint(fs[2], 16, 64)
		if len(fs) >= 6 {
			m.Path = strings.Join(fs[5:], " ")
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// Lookup finds function name in the first object mapped into process
// pid that defines it (its dynamic symbols, then its symbol table) among
// those whose path match accepts (nil: all), and returns its address in
// the process and the object's path.
func Lookup(pid int, name string, match func(path string) bool) (uint64, string, error) {
	maps, err := Maps(pid)
	if err != nil {
		return 0, "", err
	}
	seen := map[string]bool{}
	for _, m := range maps {
		if m.Offset != 0 || !strings.HasPrefix(m.Path, "/") || seen[m.Path] || match != nil && !match(m.Path) {
			continue
		}
		seen[m.Path] = true
		// Read through the process's own view of the file, which is
		// the file it mapped even if the path now names another.
		f, err := elfx.Open(filepath.Join("/proc", strconv.Itoa(pid), "map_files", fmt.Sprintf("%x-%x", m.Start, m.End)))
		if err != nil {
			f, err = elfx.Open(m.Path)
			if err != nil {
				continue
			}
		}
		v, ok := defined(f, name)
		if !ok {
			continue
		}
		low := ^uint64(0)
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Off == 0 {
				low = uint64(p.Vaddr) &^ (uint64(os.Getpagesize()) - 1)
				break
			}
		}
		if low == ^uint64(0) {
			continue
		}
		return m.Start - low + v, m.Path, nil
	}
	return 0, "", fmt.Errorf("process %d: no mapped object defines %s", pid, name)
}

// defined returns the value of function name in f.
func defined(f *elfx.File, name string) (uint64, bool) {
	var tables []*elfx.Section
	for _, s := range f.Sections {
		if s.Type == elf.SHT_DYNSYM {
			tables = append(tables, s)
		}
	}
	if s, _, err := f.Symtab(); err == nil && s != nil {
		tables = append(tables, s)
	}
	for _, s := range tables {
		syms, err := f.Symbols(s)
		if err != nil {
			continue
		}
		for _, y := range syms {
			if y.Name == name && y.Shndx != uint32(elf.SHN_UNDEF) && elf.ST_TYPE(y.Info) == elf.STT_FUNC {
				return uint64(y.Value), true
			}
		}
	}
	return 0, false
}
