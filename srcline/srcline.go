// Package srcline maps the addresses of a linked ELF file to source file
// and line through the file's DWARF line tables (.debug_line, DWARF 2 to
// 5), so a list of patch sites can say where each one is in the source.
//
// The table is read once: each unit's header is parsed by
// github.com/go-delve/delve/pkg/dwarf/line (directories and file names,
// whose encoding changed in DWARF 5), after a bounds check of our own,
// since that parser trusts its input; the line-number program is run
// here into rows, sequences are sorted by address, and every lookup is a
// binary search. Compressed sections (SHF_COMPRESSED with zlib, as from
// -gz, and GNU's older .zdebug_line) are decompressed first.
//
// A file without DWARF gives an empty table and no error. What is valid
// but not read (zstd compression, 64-bit DWARF, a future version) is a
// note on the table; a malformed line table is an error naming the
// section, unit and problem.
package srcline

import (
	"bytes"
	"cmp"
	"debug/elf"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/go-delve/delve/pkg/dwarf/line"

	"ftpatch/elfx"
)

// A Pos is a place in the source: a file as the line table names it
// (joined with its directory) and a 1-based line. The zero Pos is
// unknown.
type Pos struct {
	File string
	Line int
}

// String writes `file:line`, or "" for the zero Pos.
func (p Pos) String() string {
	if p.File == "" && p.Line == 0 {
		return ""
	}
	return p.File + ":" + strconv.Itoa(p.Line)
}

// IsZero reports whether p is unknown.
func (p Pos) IsZero() bool { return p == Pos{} }

// A row is one line-table row: from addr on (to the next row) the code
// is at files[file]:line. A row with file == endSeq ends a sequence:
// the addresses from it on are not covered (until the next sequence).
type row struct {
	addr uint64
	file uint32
	line uint32
}

const endSeq = ^uint32(0)

// A Table maps addresses to source positions.
type Table struct {
	rows  []row    // sorted by address; sequences do not overlap
	files []string // deduplicated across units
	// Notes say what was not read and why (a compression this reader
	// lacks, 64-bit DWARF...): positions are missing there, not wrong.
	Notes []string
}

// Rows is the number of rows the table holds.
func (t *Table) Rows() int { return len(t.rows) }

// Lookup returns the position of the row covering addr: the first row at
// the greatest address not above it, within a sequence. Several rows at
// one address (a function's opening line, then its first statement's)
// give the first, the one the compiler emitted for the address itself.
// A row of line 0 (code of no source line) is no position.
func (t *Table) Lookup(addr uint64) (Pos, bool) {
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr > addr }) - 1
	if i < 0 || t.rows[i].file == endSeq || t.rows[i].line == 0 {
		return Pos{}, false
	}
	r := t.rows[i]
	return Pos{t.files[r.file], int(r.line)}, true
}

// LookupIn returns the position of addr inside the function spanning
// [start, end): the row covering addr if that row starts inside the
// function, else the function's first row (its opening line). The rows
// of a function may start after its first bytes: arm64 gcc puts the
// first row after the NOPs of -fpatchable-function-entry, so the row
// covering them is the previous function's last.
func (t *Table) LookupIn(addr, start, end uint64) (Pos, bool) {
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr > addr }) - 1
	if i >= 0 && t.rows[i].addr >= start && t.rows[i].file != endSeq && t.rows[i].line != 0 {
		r := t.rows[i]
		return Pos{t.files[r.file], int(r.line)}, true
	}
	// The function's first row: from the start, since the covering row
	// may be its own, of line 0.
	i = sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr >= start })
	for ; i < len(t.rows) && t.rows[i].addr < end; i++ {
		if r := t.rows[i]; r.file != endSeq && r.line != 0 {
			return Pos{t.files[r.file], int(r.line)}, true
		}
	}
	return Pos{}, false
}

// Read reads the line tables of the linked file f. A file without
// .debug_line gives an empty table.
func Read(f *elfx.File) (*Table, error) {
	t := &Table{}
	data, name, err := t.section(f, "line")
	if err != nil {
		return nil, err
	}
	if data == nil {
		return t, nil
	}
	lineStr, _, err := t.section(f, "line_str")
	if err != nil {
		return nil, err
	}
	if err := t.read(name, data, lineStr, codeRanges(f)); err != nil {
		return nil, err
	}
	return t, nil
}

// read reads the units of the line table data (from section name), with
// the .debug_line_str contents lineStr, keeping the sequences that start
// in the code ranges.
func (t *Table) read(name string, data, lineStr []byte, code [][2]uint64) error {
	r := &reader{t: t, code: code, fileIdx: map[string]uint32{}, lineStr: lineStr, sec: name}
	// Compilers spend about 4 to 8 bytes of program per row: sizing for
	// that spares most of the copying as the rows grow.
	r.rows = make([]row, 0, len(data)/6)
	for off := 0; off < len(data); {
		n, err := r.unit(data, off)
		if err != nil {
			return fmt.Errorf("section %q: unit at 0x%x: %w", name, off, err)
		}
		if n == 0 {
			break
		}
		off += n
	}
	r.finish()
	return nil
}

// codeRanges lists the address ranges of the file's code sections. Line
// sequences elsewhere are dropped: a linker points those of discarded
// functions (COMDAT duplicates, weak definitions replaced by strong ones)
// at address 0 or -1, where they would overlap live code.
func codeRanges(f *elfx.File) [][2]uint64 {
	var out [][2]uint64
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Flags&elf.SHF_EXECINSTR != 0 && s.Size > 0 {
			out = append(out, [2]uint64{uint64(s.Addr), uint64(s.Addr) + s.Size})
		}
	}
	return out
}

type reader struct {
	t       *Table
	code    [][2]uint64
	fileIdx map[string]uint32
	lineStr []byte
	sec     string
	rows    []row  // every unit's sequences, in program order
	spans   []span // the sequences kept
	// Sequences left out: whose addresses go backwards, and that the
	// program does not end.
	backwards, unended int
}

// finish sorts the sequences by address and concatenates their rows. A
// sequence overlapping one before it (after dead code was dropped) is
// left out, with a note: a lookup could not tell which holds an address.
func (r *reader) finish() {
	slices.SortStableFunc(r.spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	sorted := true
	for i, s := range r.spans {
		if i > 0 && s.lo < r.spans[i-1].lo {
			sorted = false
			break
		}
	}
	var rows []row
	if sorted {
		rows = r.rows[:0] // in place: the sequences are already in address order
	} else {
		rows = make([]row, 0, len(r.rows))
	}
	overlaps := 0
	for _, s := range r.spans {
		if n := len(rows); n > 0 && s.start < rows[n-1].addr {
			overlaps++
			continue
		}
		rows = append(rows, r.rows[s.lo:s.hi]...)
	}
	r.t.rows = slices.Clip(rows)
	for _, n := range []struct {
		count int
		what  string
	}{{overlaps, "overlap others"}, {r.backwards, "go backwards"}, {r.unended, "do not end"}} {
		if n.count > 0 {
			r.t.Notes = append(r.t.Notes, fmt.Sprintf("section %q: %d line sequences %s: their lines are not read", r.sec, n.count, n.what))
		}
	}
}

func (r *reader) inCode(a uint64) bool {
	for _, c := range r.code {
		if c[0] <= a && a < c[1] {
			return true
		}
	}
	return false
}

func (r *reader) file(name string) uint32 {
	if i, ok := r.fileIdx[name]; ok {
		return i
	}
	i := uint32(len(r.t.files))
	r.t.files = append(r.t.files, name)
	r.fileIdx[name] = i
	return i
}

// unit reads the unit at data[off:] and returns its size in bytes.
func (r *reader) unit(data []byte, off int) (int, error) {
	h, err := parseHeader(data[off:], r.lineStr)
	if err != nil {
		if note, ok := err.(noteError); ok {
			r.t.Notes = append(r.t.Notes, fmt.Sprintf("section %q: unit at 0x%x: %s; its lines are not read", r.sec, off, string(note)))
			if h.size == 0 {
				return 0, nil // the rest cannot be delimited
			}
			return h.size, nil
		}
		return 0, err
	}
	info, err := parseFiles(data[off:off+h.size], r.lineStr)
	if err != nil {
		return 0, err
	}
	files := make([]uint32, len(info.FileNames))
	for i, fe := range info.FileNames {
		files[i] = r.file(fe.Path)
	}
	if err := r.run(h, data[off+h.progOff:off+h.size], files); err != nil {
		return 0, err
	}
	return h.size, nil
}

// parseFiles has delve's parser read the unit's directories and files.
// The header was checked first; the recover is the last line against a
// parser that indexes its input unchecked.
func parseFiles(unit []byte, lineStr []byte) (info *line.DebugLineInfo, err error) {
	defer func() {
		if p := recover(); p != nil {
			info, err = nil, fmt.Errorf("file table: %v", p)
		}
	}()
	if lineStr == nil {
		lineStr = []byte{} // nil makes the parser count a bug in its telemetry
	}
	info = line.Parse("", bytes.NewBuffer(unit), lineStr, nil, 0, false, 8)
	if info == nil {
		return nil, fmt.Errorf("file table: malformed")
	}
	return info, nil
}
