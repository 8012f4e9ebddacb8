package sites

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"ftpatch/srcline"
)

// TestWriteLinkedAligned: WriteLinked's table is aligned exactly as
// text/tabwriter aligns it (as it was written before it measured the
// columns itself), with names of several bytes a character, empty
// targets and sources, and a column whose widest cell is the header.
func TestWriteLinkedAligned(t *testing.T) {
	l := &Linked{Sites: []Site{
		{Off: 0x401000, Func: "main", Kind: X86Fentry, Len: 5, State: StateHook, Call: &Call{Addr: 0x402000, Name: "__fentry__"}, Source: srcline.Pos{File: "main.c", Line: 3}},
		{Off: 0x401010, Func: "größe", FuncOff: 4, Kind: X86Mcount, Len: 6, State: StateNops},
		{Off: 0x401234, Func: "ünïcödé_naïve_function_name", Kind: X86Fentry, Len: 5, State: StateTraced, Call: &Call{Addr: 0x403000, Name: "ftrace_caller5"}},
		{Off: 0x4020ff, Func: "d", Kind: X86Fentry, Len: 5, State: StateDirect, Call: &Call{Name: "puts", Via: ViaPLT}, Source: srcline.Pos{File: "é.c", Line: 12}},
	}, Dead: make([]Site, 2), Zero: 1, Notes: []string{"a note"}}
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tFUNCTION\tKIND\tLEN\tSTATE\tTARGET\tSOURCE")
	var cells [linkedCols]string
	for i := range l.Sites {
		linkedCells(&l.Sites[i], &cells)
		fmt.Fprintln(tw, strings.Join(cells[:], "\t"))
	}
	tw.Flush()
	want.WriteString("4 sites: 1 nop, 1 hook, 1 traced, 1 direct; skipped: 2 in discarded weak functions, 1 empty entries, 0 duplicates\nnote: a note\n")
	var got bytes.Buffer
	if err := WriteLinked(&got, l); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want.String())
	}
}

// TestWriteLinkedEscaped: names the file holds (a function, a call's
// target, a source file, in a note) are printed escaped: a symbol that
// clears the screen or writes the terminal's clipboard shows as text.
func TestWriteLinkedEscaped(t *testing.T) {
	l := &Linked{Sites: []Site{
		{Off: 0x401000, Func: "evil\x1b[2J", FuncOff: 4, Kind: X86Fentry, Len: 5, State: StateDirect,
			Call: &Call{Name: "clip\x1b]52;c;ZXZpbA==\a", Via: ViaPLT}, Source: srcline.Pos{File: "c1\u009b2J\n.c", Line: 3}},
	}, Notes: []string{"section \"\x1b[2J\""}}
	var got bytes.Buffer
	if err := WriteLinked(&got, l); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`evil\x1b[2J+0x4`, `clip\x1b]52;c;ZXZpbA==\a@plt`, `c1\u009b2J\n.c:3`, `note: section "\x1b[2J"`} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("no %s in\n%s", want, got.String())
		}
	}
	if strings.ContainsAny(got.String(), "\x1b\a\u009b") || strings.Count(got.String(), "\n") != 4 {
		t.Errorf("a control character left, or a line broken:\n%q", got.String())
	}
}
