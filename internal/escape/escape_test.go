package escape

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestText: control characters, characters Unicode does not print and
// bytes that are not UTF-8 are escaped as Go writes them; printable
// text, Unicode and backslashes included, is left alone.
func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"main", "main"},
		{"std::vector<int>::push_back(int&&)", "std::vector<int>::push_back(int&&)"},
		{`operator"" _km`, `operator"" _km`},
		{`a\b`, `a\b`},
		{"café_ñ", "café_ñ"},
		{"\x1b[2Jevil", `\x1b[2Jevil`},
		{"\x1b]52;c;ZXZpbA==\a", `\x1b]52;c;ZXZpbA==\a`},
		{"two\nlines\r\t", `two\nlines\r\t`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b2J", `c1\u009b2J`},
		{"bidi\u202eosrever", `bidi\u202eosrever`},
		{"bad\xff\xfe utf8", `bad\xff\xfe utf8`},
		{"nul\x00", `nul\x00`},
		{"", ""},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := string(AppendText([]byte("x"), c.in)); got != "x"+c.want {
			t.Errorf("AppendText(x, %q) = %q, want %q", c.in, got, "x"+c.want)
		}
	}
}

// TestTextPrintable: whatever the input, what Text returns is valid
// UTF-8 of printable characters only.
func TestTextPrintable(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		all.WriteRune(r)
	}
	for b := 0x80; b < 0x100; b++ {
		all.WriteByte(byte(b)) // alone: not UTF-8
	}
	got := Text(all.String())
	if !utf8.ValidString(got) {
		t.Fatal("not UTF-8")
	}
	for _, r := range got {
		if !unicode.IsPrint(r) && r != ' ' {
			t.Fatalf("%U left in the text", r)
		}
	}
}

// TestPlainNoAlloc: a name with nothing to escape costs no allocation.
func TestPlainNoAlloc(t *testing.T) {
	b := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { _ = Text("parse_expression"); b = AppendText(b[:0], "parse_expression") }); n != 0 {
		t.Errorf("%.0f allocations", n)
	}
}

// TestQuoted: string arguments are quoted, chars single-quoted, and
// messages escaped line by line, with the rule Text follows.
func TestQuoted(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Quote("a\x1b[2J\"\\"), `"a\x1b[2J\"\\"`},
		{Quote("bad\xff"), `"bad\xff"`},
		{Char('a'), `'a'`},
		{Char(0x1b), `'\x1b'`},
		{Char('\''), `'\''`},
		{Char(0x9b), `'\u009b'`},
		{Char(0xe9), `'é'`},
		{Lines("one\x1b[2J\ntwo\x07\n"), "one\\x1b[2J\ntwo\\a\n"},
		{Lines("plain\nlines"), "plain\nlines"},
		{Lines(""), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
