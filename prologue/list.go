package prologue

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"ftpatch/internal/escape"
)

// Write lists t, one function a line in address order:
//
//	ADDRESS  SIZE  SITE      FUNCTION  DETAIL
//
// SITE is compiler, prologue or -; DETAIL the compiler site's kind, the
// moved instructions, or why the function gets no site. A last line
// counts them, and the functions left alone by reason.
func Write(w io.Writer, t *Table) error {
	const cols = 5
	header := [cols]string{"ADDRESS", "SIZE", "SITE", "FUNCTION", "DETAIL"}
	var width [cols]int
	var cells [cols]string
	fill := func(f *Func) {
		cells[0] = fmt.Sprintf("0x%x", f.Addr)
		cells[1] = fmt.Sprint(f.Size)
		cells[2] = f.What.String()
		cells[3] = escape.Text(f.Name)
		cells[4] = t.Detail(f)
	}
	measure := func() {
		for i, c := range cells[:cols-1] {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	cells = header
	measure()
	for i := range t.Funcs {
		fill(&t.Funcs[i])
		measure()
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	write := func() {
		for i, c := range cells[:cols-1] {
			pad := width[i] + 2 - utf8.RuneCountInString(c)
			if i == 1 { // sizes right-aligned
				bw.WriteString(strings.Repeat(" ", pad-2))
				bw.WriteString(c)
				bw.WriteString("  ")
				continue
			}
			bw.WriteString(c)
			bw.WriteString(strings.Repeat(" ", pad))
		}
		bw.WriteString(cells[cols-1])
		bw.WriteByte('\n')
	}
	cells = header
	write()
	for i := range t.Funcs {
		fill(&t.Funcs[i])
		write()
	}
	bw.WriteString(Summary(t))
	bw.WriteByte('\n')
	return bw.Flush()
}

// Summary is t's counts in one line: the functions, where they were
// found, how many got each site, and the reasons of the rest.
func Summary(t *Table) string {
	c, m, n := t.Count()
	stubs := t.NotFunctions()
	all := len(t.Funcs) - stubs
	var b strings.Builder
	fmt.Fprintf(&b, "%d functions (from the %s", all, t.From)
	if stubs > 0 {
		fmt.Fprintf(&b, "; and %d cold parts or stubs, not counted", stubs)
	}
	fmt.Fprintf(&b, "): %d compiler sites, %d prologue sites, %d without a site (%s with a site)",
		c, m, n-stubs, percent(c+m, all))
	i := 0
	for _, r := range t.Reasons() {
		if r.Reason == ErrNotEntry.Error() {
			continue
		}
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		i++
		fmt.Fprintf(&b, "%s%d %s", sep, r.N, r.Reason)
	}
	return b.String()
}

func percent(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
}

// Detail says of one function of t what its site is, or why it has
// none.
func (t *Table) Detail(f *Func) string {
	switch f.What {
	case Compiler:
		return f.Kind.String()
	case Made:
		var b strings.Builder
		for i, in := range f.Plan.Insns {
			if i > 0 {
				b.WriteString("; ")
			}
			if t.ISA != nil && t.ISA.Disasm != nil {
				b.WriteString(t.ISA.Disasm(f.Plan.Bytes(i)))
			}
			if in.How != 0 {
				fmt.Fprintf(&b, " (%s)", in.How)
			}
		}
		return b.String()
	}
	if f.Why == nil {
		return ""
	}
	return f.Why.Error()
}

// WriteJSON writes t as one JSON object: path, build_id, from, the
// functions (address, name, size, site, detail, and for a prologue site
// the patch address and length) and the counts.
func WriteJSON(w io.Writer, t *Table) error {
	type jsonFunc struct {
		Addr   string `json:"address"`
		Name   string `json:"function"`
		Size   uint64 `json:"size"`
		Site   string `json:"site"`
		Detail string `json:"detail"`
		Patch  string `json:"patch,omitempty"`
		Len    int    `json:"len,omitempty"`
	}
	c, m, n := t.Count()
	out := struct {
		Path     string         `json:"path"`
		BuildID  string         `json:"build_id"`
		From     string         `json:"from"`
		Funcs    []jsonFunc     `json:"functions"`
		Compiler int            `json:"compiler"`
		Made     int            `json:"prologue"`
		None     int            `json:"none"`
		Reasons  map[string]int `json:"reasons"`
	}{Path: t.Path, BuildID: t.BuildID, From: t.From, Funcs: make([]jsonFunc, 0, len(t.Funcs)), Compiler: c, Made: m, None: n, Reasons: map[string]int{}}
	for i := range t.Funcs {
		f := &t.Funcs[i]
		j := jsonFunc{Addr: fmt.Sprintf("0x%x", f.Addr), Name: f.Name, Size: f.Size, Site: f.What.String(), Detail: t.Detail(f)}
		if f.What == Made {
			j.Patch, j.Len = fmt.Sprintf("0x%x", f.Plan.Patch), f.Plan.Len
		}
		out.Funcs = append(out.Funcs, j)
	}
	for _, r := range t.Reasons() {
		out.Reasons[r.Reason] = r.N
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
