package tracee

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// Objects calls each with every ELF file process pid has mapped, its
// path and its load bias (what the process's addresses add to the
// file's), until each returns false. Each file is read through
// /proc/PID/map_files, which is the file the process mapped even if its
// path now names another (else through its path).
func Objects(pid int, each func(f *elfx.File, path string, bias uint64) bool) error {
	maps, err := Maps(pid)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, m := range maps {
		if m.Offset != 0 || !strings.HasPrefix(m.Path, "/") || seen[m.Path] {
			continue
		}
		seen[m.Path] = true
		f, err := elfx.Open(filepath.Join("/proc", strconv.Itoa(pid), "map_files", fmt.Sprintf("%x-%x", m.Start, m.End)))
		if err != nil {
			if f, err = elfx.Open(m.Path); err != nil {
				continue
			}
		}
		// The mapping at offset 0 is the first PT_LOAD's, page-aligned.
		i := slices.IndexFunc(f.Progs, func(p elfx.Prog) bool { return p.Type == elf.PT_LOAD && p.Off == 0 })
		if i < 0 {
			continue
		}
		low := uint64(f.Progs[i].Vaddr) &^ (uint64(os.Getpagesize()) - 1)
		if !each(f, m.Path, m.Start-low) {
			return nil
		}
	}
	return nil
}

// Lookup finds function name in the first object mapped into process
// pid that defines it (its dynamic symbols, then its symbol table) among
// those whose path match accepts (nil: all), and returns its address in
// the process and the object's path.
func Lookup(pid int, name string, match func(path string) bool) (uint64, string, error) {
	var addr uint64
	var from string
	err := Objects(pid, func(f *elfx.File, path string, bias uint64) bool {
		if match != nil && !match(path) {
			return true
		}
		v, ok := defined(f, name)
		if ok {
			addr, from = bias+v, path
		}
		return !ok
	})
	if err != nil {
		return 0, "", err
	}
	if from == "" {
		return 0, "", fmt.Errorf("process %d: no mapped object defines %s", pid, name)
	}
	return addr, from, nil
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
