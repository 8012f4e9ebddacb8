package ccwrap

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// FuzzExpand reads a command line whose response files are fuzzed (a
// file "a.rsp", which may name itself, "b.rsp" and missing ones) as the
// wrapper reads a hostile one, within small bounds: it never panics; it
// fails only with ErrResponse; what it returns is within the bounds; a
// file that names no other expands to what SplitResponse reads of it,
// up to its first NUL byte; and QuoteResponse writes the arguments back
// as text that reads as the same arguments (the wrapper passes a long
// command to the compiler that way). Parse reads the same command line
// without panicking.
func FuzzExpand(f *testing.F) {
	for _, s := range [][2]string{
		{`-DA='x\'y' -DB='x"y'`, ""},
		{`-DA="x\y" -DB="x\"y" -DC="x\\y"`, "-c"},
		{"-DA=a\\\nb -DB='a\nb'", "@b.rsp"},
		{`-DA=x -DB=\`, "'"},
		{"-DA=1\t-DB=2\r\n-DC=3\f-DD=4\v", `"`},
		{"-DA=1\x00-DB=2", "x"},
		{"@a.rsp", ""},
		{"@b.rsp @b.rsp @missing", "@b.rsp"},
		{"-c f.c -o f.o @", "-MD -MF f.d"},
		{strings.Repeat("a ", 600), "@a.rsp"},
	} {
		f.Add(s[0], s[1], "-O2 @a.rsp f.c")
	}
	f.Fuzz(func(t *testing.T, a, b, cmdline string) {
		files := map[string]string{"a.rsp": a, "b.rsp": b}
		read := func(name string, max int64) ([]byte, error) {
			s, ok := files[name]
			if !ok {
				return nil, fs.ErrNotExist
			}
			if int64(len(s)) > max {
				return nil, ErrResponse
			}
			return []byte(s), nil
		}
		args := strings.Fields(cmdline)
		bd := bounds{bytes: 1 << 16, args: 1000}
		out, read1, err := expandWithin(args, read, bd)
		if err != nil {
			if !errors.Is(err, ErrResponse) {
				t.Fatalf("%v: not an ErrResponse", err)
			}
			return
		}
		if len(out) > bd.args || len(read1) >= maxAtArgs {
			t.Fatalf("%d arguments from %d response files, past the bounds", len(out), len(read1))
		}
		if !strings.Contains(a, "@") {
			text := a
			if i := strings.IndexByte(text, 0); i >= 0 {
				text = text[:i]
			}
			got, _, err := expandWithin([]string{"@a.rsp"}, read, bd)
			if want := SplitResponse(text); err == nil && !slices.Equal(got, want) {
				t.Fatalf("@a.rsp expands to %q, SplitResponse reads %q", got, want)
			}
		}
		if back := SplitResponse(QuoteResponse(out)); !slices.Equal(back, out) {
			t.Fatalf("QuoteResponse(%q) reads back as %q", out, back)
		}
		Parse(args, read) // must not panic, whatever it makes of it
	})
}
