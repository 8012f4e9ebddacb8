package sites

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"ftpatch/elfx"
	"ftpatch/internal/escape"
	"ftpatch/srcline"
)

// AddSources sets each site's Source from f's DWARF line table: the row
// covering the site's address when that row is its function's, else the
// function's first row, its opening line (see srcline.Table.LookupIn). A
// file without DWARF leaves every Source empty and is no error; what the
// table could not read is added to l.Notes.
func AddSources(f *elfx.File, l *Linked) error {
	t, err := srcline.Read(f)
	if err != nil {
		return fmt.Errorf("source lines: %w", err)
	}
	l.Notes = append(l.Notes, t.Notes...)
	if t.Rows() == 0 {
		return nil
	}
	funcs := l.funcs
	if funcs == nil {
		_, syms, err := f.Symtab()
		if err != nil {
			return err
		}
		funcs = newFuncIndex(syms, true)
	}
	funcs = funcs.cursor()
	for i := range l.Sites {
		s := &l.Sites[i]
		start := s.Off - s.FuncOff
		end := s.Off + 1
		if fun, ok := funcs.containing(0, start); ok {
			end = max(end, fun.end)
		}
		if p, ok := t.LookupIn(s.Off, start, end); ok {
			s.Source = p
		}
	}
	return nil
}

// WriteLinked prints a linked file's sites as a table (address,
// function, kind, length, state, call target, source line), a closing
// count line, and the notes; names and source files escaped (package
// escape).
//
// The table is aligned as text/tabwriter aligns it (each column as wide
// as its widest cell, two spaces apart), in two passes over the sites:
// one measuring the cells, one writing them through a buffer. Nothing is
// held but the widths, so a program of 200,000 sites lists in little
// more memory than its sites take.
func WriteLinked(w io.Writer, l *Linked) error {
	header := [linkedCols]string{"ADDRESS", "FUNCTION", "KIND", "LEN", "STATE", "TARGET", "SOURCE"}
	var width [linkedCols]int
	measure := func(cells *[linkedCols]string) {
		for i, c := range cells[:linkedCols-1] { // the last column is not padded
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	measure(&header)
	var cells [linkedCols]string
	var count [numStates]int
	for i := range l.Sites {
		linkedCells(&l.Sites[i], &cells)
		measure(&cells)
		count[effect(l.Sites[i].State)]++
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	write := func(cells *[linkedCols]string) {
		for i, c := range cells[:linkedCols-1] {
			bw.WriteString(c)
			for n := utf8.RuneCountInString(c); n < width[i]+2; n++ {
				bw.WriteByte(' ')
			}
		}
		bw.WriteString(cells[linkedCols-1])
		bw.WriteByte('\n')
	}
	write(&header)
	for i := range l.Sites {
		linkedCells(&l.Sites[i], &cells)
		write(&cells)
	}
	fmt.Fprintf(bw, "%d sites: %d %s, %d %s, %d %s, %d %s; skipped: %d in discarded weak functions, %d empty entries, %d duplicates\n",
		len(l.Sites), count[StateNop], StateNop, count[StateHook], StateHook, count[StateTraced], StateTraced, count[StateDirect], StateDirect,
		len(l.Dead), l.Zero, l.Dups)
	for _, n := range l.Notes {
		fmt.Fprintf(bw, "note: %s\n", escape.Text(n))
	}
	return bw.Flush()
}

// linkedCols is the number of columns of WriteLinked's table.
const linkedCols = 7

// linkedCells fills cells with site s's row of WriteLinked's table.
func linkedCells(s *Site, cells *[linkedCols]string) {
	fn := s.Func
	if s.FuncOff != 0 {
		fn = fmt.Sprintf("%s+0x%x", s.Func, s.FuncOff)
	}
	target := ""
	if s.Call != nil {
		target = s.Call.String()
	}
	if s.Literal != 0 {
		target = strings.TrimSpace(target + " literal=0x" + strconv.FormatUint(s.Literal, 16))
	}
	kind := s.Kind.String()
	if s.Origin == FromPrologue {
		kind = "prologue" // a trampoline ftpatch instrument made; patchable to enable and disable
	}
	// Names are the file's: a symbol or source file may be named with
	// a terminal's escape sequences.
	*cells = [linkedCols]string{"0x" + strconv.FormatUint(s.Off, 16), escape.Text(fn), kind, strconv.Itoa(s.Len), s.State.Effect(), escape.Text(target), escape.Text(s.Source.String())}
}

// effect is the state a site is counted under in WriteLinked's closing
// line: NOPs of any count as NOPs, as the STATE column shows them.
func effect(st State) State {
	if st == StateNops {
		return StateNop
	}
	return st
}

// A linkedSite is how a linked file's site is written as JSON: the
// fields of the text table, by name, with the target and source split.
type linkedSite struct {
	Addr     string    `json:"address"`
	Function string    `json:"function"`
	FuncOff  uint64    `json:"func_offset"`
	Section  string    `json:"section"`
	Kind     Kind      `json:"kind"`
	Len      int       `json:"len"`
	State    string    `json:"state"` // State.Effect
	Target   *jsonCall `json:"target,omitempty"`
	Source   *jsonPos  `json:"source,omitempty"`
	Pre      int32     `json:"pre,omitempty"`
	Literal  string    `json:"literal,omitempty"` // arm64 callops: what the pre-function literal holds, when not its NOPs
	Weak     bool      `json:"weak,omitempty"`
	Found    Origin    `json:"found_in"`
}

type jsonCall struct {
	Addr string `json:"address,omitempty"` // "" when the file does not say
	Name string `json:"name,omitempty"`
	Off  uint64 `json:"offset,omitempty"`
	Via  string `json:"via,omitempty"`
}

type jsonPos struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// WriteLinkedJSON prints a linked file's sites as JSON, with the same
// fields as WriteLinked's table.
func WriteLinkedJSON(w io.Writer, l *Linked) error {
	out := struct {
		Arch  string       `json:"arch"`
		Sites []linkedSite `json:"sites"`
		Dead  int          `json:"dead"`
		Zero  int          `json:"zero"`
		Dups  int          `json:"duplicates"`
		Notes []string     `json:"notes,omitempty"`
	}{Arch: l.Arch.String(), Sites: make([]linkedSite, 0, len(l.Sites)), Dead: len(l.Dead), Zero: l.Zero, Dups: l.Dups, Notes: l.Notes}
	for i := range l.Sites {
		s := &l.Sites[i]
		js := linkedSite{
			Addr: fmt.Sprintf("0x%x", s.Off), Function: s.Func, FuncOff: s.FuncOff, Section: s.SecName,
			Kind: s.Kind, Len: s.Len, State: s.State.Effect(), Pre: s.Pre, Weak: s.Weak, Found: s.Origin,
		}
		if c := s.Call; c != nil {
			js.Target = &jsonCall{Name: c.Name, Off: c.Off, Via: c.Via.String()}
			if c.Addr != 0 {
				js.Target.Addr = fmt.Sprintf("0x%x", c.Addr)
			}
		}
		if !s.Source.IsZero() {
			js.Source = &jsonPos{s.Source.File, s.Source.Line}
		}
		if s.Literal != 0 {
			js.Literal = fmt.Sprintf("0x%x", s.Literal)
		}
		out.Sites = append(out.Sites, js)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
