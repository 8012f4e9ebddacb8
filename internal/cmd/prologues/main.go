// Command prologues plans a prologue site for every function symbol of
// x86-64 ELF files and counts the plans and the refusals by reason: the
// coverage isa/x86's planner gives on real binaries. A stripped file's
// symbols are read from its separate debug file
// (/usr/lib/debug/.build-id/xx/yyyy.debug) when the machine has it.
//
//	go run ./internal/cmd/prologues [-v] FILE...
//
// -v lists each refused function with its reason. Functions are the
// STT_FUNC symbols with a size in an executable section, each given its
// bytes up to the next function (its padding); the file's allocated
// sections serve jump-table reads.
package main

import (
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"ftpatch/isa/move"
	"ftpatch/isa/x86"
)

func main() {
	verbose := flag.Bool("v", false, "list each refused function with its reason")
	flag.Parse()
	var total counts
	for _, path := range flag.Args() {
		c, err := planFile(path, *verbose)
		if err != nil {
			fmt.Fprintf(os.Stderr, "prologues: %s: %v\n", path, err)
			continue
		}
		fmt.Printf("%-40s %s\n", filepath.Base(path), c)
		total.add(c)
	}
	if len(flag.Args()) > 1 {
		fmt.Printf("%-40s %s\n", "total", total)
	}
}

// counts are a file's functions, planned and refused by reason.
type counts struct {
	funcs, planned int
	reasons        [5]int // move.Reasons' order
	other          int
	elapsed        time.Duration
}

func (c *counts) add(d counts) {
	c.funcs += d.funcs
	c.planned += d.planned
	for i := range c.reasons {
		c.reasons[i] += d.reasons[i]
	}
	c.other += d.other
	c.elapsed += d.elapsed
}

func (c counts) String() string {
	s := fmt.Sprintf("%6d functions %6d planned (%5.1f%%)", c.funcs, c.planned, 100*float64(c.planned)/float64(max(c.funcs, 1)))
	names := []string{"short", "branch-into", "unmovable", "jump-table", "undecodable"}
	for i, n := range c.reasons {
		s += fmt.Sprintf("  %s %d", names[i], n)
	}
	if c.other > 0 {
		s += fmt.Sprintf("  other %d", c.other)
	}
	return s + fmt.Sprintf("  %.0f ns/function", float64(c.elapsed.Nanoseconds())/float64(max(c.funcs, 1)))
}

func planFile(path string, verbose bool) (counts, error) {
	var c counts
	f, err := elf.Open(path)
	if err != nil {
		return c, err
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return c, fmt.Errorf("not x86-64 (%v)", f.Machine)
	}
	syms, err := f.Symbols()
	if len(syms) == 0 {
		syms, err = debugSymbols(f)
		if err != nil {
			return c, err
		}
	}
	type sec struct {
		addr uint64
		data []byte
		exec bool
	}
	var secs []sec
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		d, err := s.Data()
		if err != nil {
			return c, err
		}
		secs = append(secs, sec{s.Addr, d, s.Flags&elf.SHF_EXECINSTR != 0})
	}
	at := func(addr uint64, code bool) []byte {
		for _, s := range secs {
			if addr >= s.addr && addr < s.addr+uint64(len(s.data)) && (!code || s.exec) {
				return s.data[addr-s.addr:]
			}
		}
		return nil
	}
	read := func(addr uint64, n int) []byte {
		b := at(addr, false)
		return b[:min(n, len(b))]
	}
	type fn struct {
		name       string
		addr, size uint64
	}
	var fns []fn
	starts := map[uint64]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Section == elf.SHN_UNDEF {
			continue
		}
		if starts[s.Value] {
			continue // an alias
		}
		starts[s.Value] = true
		if s.Size > 0 && at(s.Value, true) != nil {
			fns = append(fns, fn{s.Name, s.Value, s.Size})
		}
	}
	order := make([]uint64, 0, len(starts))
	for a := range starts {
		order = append(order, a)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	type job struct {
		fn
		code []byte
	}
	jobs := make([]job, 0, len(fns))
	for _, g := range fns {
		b := at(g.addr, true)
		if uint64(len(b)) < g.size {
			continue
		}
		if i := sort.Search(len(order), func(i int) bool { return order[i] > g.addr }); i < len(order) && order[i]-g.addr < uint64(len(b)) {
			b = b[:order[i]-g.addr]
		}
		jobs = append(jobs, job{g, b})
	}
	start := time.Now()
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		_, errs[i] = x86.PlanPrologue(j.code, j.addr, int(j.size), read)
	}
	c.elapsed = time.Since(start)
	for i, err := range errs {
		c.funcs++
		if err == nil {
			c.planned++
			continue
		}
		known := false
		for k, r := range move.Reasons {
			if errors.Is(err, r) {
				c.reasons[k]++
				known = true
				break
			}
		}
		if !known {
			c.other++
		}
		if verbose {
			fmt.Printf("  %s 0x%x: %v\n", jobs[i].name, jobs[i].addr, err)
		}
	}
	return c, nil
}

// debugSymbols reads the symbols of f's separate debug file, found by
// its build-id under /usr/lib/debug/.build-id.
func debugSymbols(f *elf.File) ([]elf.Symbol, error) {
	id := buildID(f)
	if len(id) < 2 {
		return nil, errors.New("no symbols and no build-id")
	}
	h := fmt.Sprintf("%x", id)
	d, err := elf.Open(filepath.Join("/usr/lib/debug/.build-id", h[:2], h[2:]+".debug"))
	if err != nil {
		return nil, fmt.Errorf("no symbols: %w", err)
	}
	defer d.Close()
	return d.Symbols()
}

// buildID returns f's GNU build-id note.
func buildID(f *elf.File) []byte {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return nil
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		return nil
	}
	namesz := int(f.ByteOrder.Uint32(b))
	descsz := int(f.ByteOrder.Uint32(b[4:]))
	off := 12 + (namesz+3)&^3
	if off+descsz > len(b) {
		return nil
	}
	return b[off : off+descsz]
}
