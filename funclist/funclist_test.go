package funclist

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string // Glob.String() of each glob, in order
		sources    []string // Glob.Source, when checked
	}{
		{"plain", "parse_*\nmain\n", []string{"parse_*", "main"}, []string{"l:1", "l:2"}},
		{"comments and blanks", "# hot paths\n\n  parse_*  \n\t# indented comment\nlex # trailing comment\n", []string{"parse_*", "lex"}, []string{"l:3", "l:5"}},
		{"excludes", "*\n!parse_space\n", []string{"*", "!parse_space"}, nil},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}, nil},
		{"fnmatch class negation", "[!a-c]*\n", []string{"[^a-c]*"}, nil},
		{"escapes", `odd\*name` + "\n", []string{`odd\*name`}, nil},
		{"hash inside a glob", "a#b\n", []string{"a#b"}, nil},
		{"no final newline", "x", []string{"x"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Parse("l", strings.NewReader(c.text))
			if err != nil {
				t.Fatal(err)
			}
			var got, src []string
			for _, g := range l.Globs {
				got = append(got, g.String())
				src = append(src, g.Source)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("globs %q, want %q", got, c.want)
			}
			if c.sources != nil && !slices.Equal(src, c.sources) {
				t.Errorf("sources %q, want %q", src, c.sources)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       string // in the message, after the input's name
	}{
		{"NUL byte", "main\nfo\x00o\n", "list:2: NUL byte at column 3"},
		{"binary garbage", "\x7fELF\x02\x01\x01\x00", "list:1: NUL byte"},
		{"invalid UTF-8", "ma\xffin\n", "list:1: invalid UTF-8"},
		{"control character", "a\x1bb\n", "list:1: control character U+001B"},
		{"unclosed class", "ok\n[\n", `list:2: bad glob "["`},
		{"bad range", "[z-\n", `list:1: bad glob "[z-"`},
		{"bare bang", "main\n!\n", "list:2: `!` with no glob"},
		{"blank inside", "foo bar\n", `list:1: "foo bar" holds a blank`},
		{"line too long", strings.Repeat("a", maxLine+10) + "\n", "list:1: line longer than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("list", strings.NewReader(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrSyntax) {
				t.Errorf("error %v, want one containing %q and matching ErrSyntax", err, c.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       error
	}{
		{"empty", "", ErrEmpty},
		{"only comments", "# nothing\n\n   # here\n", ErrEmpty},
		{"only excludes", "!main\n!parse_*\n", ErrOnlyExcludes},
		{"include and exclude", "*\n!main\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Parse("l", strings.NewReader(c.text))
			if err != nil {
				t.Fatal(err)
			}
			err = l.Check("l")
			if !errors.Is(err, c.want) || (c.want != nil && !strings.HasPrefix(err.Error(), "l: ")) {
				t.Errorf("Check: %v, want %v naming the input", err, c.want)
			}
		})
	}
}

func TestAdd(t *testing.T) {
	l := &List{}
	for i, a := range []string{"main", "!fib", "p*"} {
		if err := l.Add(a, "argument "+string(rune('1'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.Select([]string{"main", "fib", "parse", "lex"}).Chosen; !slices.Equal(got, []bool{true, false, true, false}) {
		t.Errorf("chosen %v", got)
	}
	for _, bad := range []string{"", "  ", "[", "a\x00"} {
		if err := l.Add(bad, "argument 4"); err == nil || !strings.HasPrefix(err.Error(), "argument 4: ") {
			t.Errorf("Add(%q): %v, want an error naming the argument", bad, err)
		}
	}
}

func TestSelect(t *testing.T) {
	names := []string{"main", "parse_expr", "parse_term", "parse_space", "lex", "fib", "fib_iter"}
	for _, c := range []struct {
		name      string
		globs     []string
		chosen    []string
		unmatched []string
	}{
		{"literal", []string{"fib"}, []string{"fib"}, nil},
		{"star", []string{"parse_*"}, []string{"parse_expr", "parse_term", "parse_space"}, nil},
		{"exclude wins", []string{"parse_*", "!parse_space"}, []string{"parse_expr", "parse_term"}, nil},
		{"exclude literal", []string{"*", "!main", "!fib*"}, []string{"parse_expr", "parse_term", "parse_space", "lex"}, nil},
		{"class", []string{"[lm]*"}, []string{"main", "lex"}, nil},
		{"negated class", []string{"[!lmp]*"}, []string{"fib", "fib_iter"}, nil},
		{"unmatched reported once", []string{"fib", "pasre_*", "pasre_*", "nosuch", "nosuch"}, []string{"fib"}, []string{"pasre_*", "nosuch"}},
		{"repeated literal that matched", []string{"fib", "fib"}, []string{"fib"}, nil},
		{"matched but excluded is not unmatched", []string{"lex", "!lex"}, nil, nil},
		{"overlapping patterns both marked", []string{"p*", "*_term"}, []string{"parse_expr", "parse_term", "parse_space"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := &List{}
			for _, g := range c.globs {
				if err := l.Add(g, "arg"); err != nil {
					t.Fatal(err)
				}
			}
			sel := l.Select(names)
			var got, un []string
			for i, ok := range sel.Chosen {
				if ok {
					got = append(got, names[i])
				}
			}
			for _, g := range sel.Unmatched {
				un = append(un, g.String())
			}
			if !slices.Equal(got, c.chosen) || sel.Count != len(c.chosen) {
				t.Errorf("chosen %q (count %d), want %q", got, sel.Count, c.chosen)
			}
			if !slices.Equal(un, c.unmatched) {
				t.Errorf("unmatched %q, want %q", un, c.unmatched)
			}
		})
	}
}

func TestHash(t *testing.T) {
	parse := func(s string) *List {
		l, err := Parse("l", strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := parse("a*\n!ab\nc\n"), parse("# same\nc\n!ab\na*\nc\n")
	if a.Hash() != b.Hash() {
		t.Error("the same globs in another order hash differently")
	}
	for _, other := range []string{"a*\nab\nc\n", "a*\n!ab\n", "a*\n!ab\nc\nd\n"} {
		if parse(other).Hash() == a.Hash() {
			t.Errorf("%q hashes like %q", other, "a*\\n!ab\\nc")
		}
	}
	if (&List{}).Hash() == 0 {
		t.Error("a hash of 0, which the config record keeps for no list")
	}
}

// TestParseFileUnchanged: reading a list, good or bad, leaves it as it
// was.
func TestParseFileUnchanged(t *testing.T) {
	dir := t.TempDir()
	for i, text := range []string{"main\n", "[\n", "\x00\x01\x02"} {
		p := filepath.Join(dir, "l"+string(rune('0'+i)))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Stat(p)
		ParseFile(p)
		after, _ := os.Stat(p)
		b, _ := os.ReadFile(p)
		if string(b) != text || !before.ModTime().Equal(after.ModTime()) {
			t.Errorf("%s changed", p)
		}
	}
	if _, err := ParseFile(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing file: %v", err)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"main", "parse_expr", "parse_term", "parse_space", "lex_token", "fib", "helper", "local_twice"}
	for _, c := range []struct {
		glob string
		want []string
	}{
		{"pasre_*", []string{"parse_*"}},      // swapped letters, the star kept
		{"mian", []string{"main"}},            // a literal: the name itself
		{"parse_exp", []string{"parse_expr"}}, // a literal one letter short
		{"helpr", []string{"helper"}},         // a letter missing
		{"fib?", []string{"fib"}},             // a token too many
		{"lex_*tokn", []string{"lex_*token"}}, // a letter missing after a star
		{"fbi*", []string{"fib*"}},            // swapped before a star: the star keeps its place
		{"zzzzzz", nil},                       // nothing near
		{"hxlpxr", []string{"helper"}},        // 2 edits: within a third of 6 letters
		{"hxlpxq", nil},                       // 3 edits: too far
		{"x", nil},                            // too short to guess from
	} {
		t.Run(c.glob, func(t *testing.T) {
			got := Suggest(Glob{Pattern: c.glob}, names, 3)
			if !slices.Equal(got, c.want) {
				t.Errorf("Suggest(%q) = %q, want %q", c.glob, got, c.want)
			}
			l := &List{Globs: []Glob{{Pattern: c.glob}}}
			for _, s := range got {
				l2 := &List{Globs: []Glob{{Pattern: s}}}
				if l2.Select(names).Count == 0 {
					t.Errorf("suggestion %q matches nothing", s)
				}
			}
			if l.Select(names).Count != 0 {
				t.Fatalf("test case %q matches a name: not a case for suggestions", c.glob)
			}
		})
	}
}

func TestLiteralPrefix(t *testing.T) {
	for _, c := range []struct {
		glob, prefix string
		star         bool
	}{
		{"parse_*", "parse_", true},
		{"parse_*x", "parse_", false},
		{"*", "", true},
		{"f1???", "f1", false},
		{"[ab]*", "", false},
		{`odd\*name*`, "odd*name", true},
		{"exact", "exact", false},
	} {
		p, s := literalPrefix(c.glob)
		if p != c.prefix || s != c.star {
			t.Errorf("literalPrefix(%q) = %q, %v; want %q, %v", c.glob, p, s, c.prefix, c.star)
		}
		// The fast test agrees with path.Match on names with and
		// without the prefix.
		for _, name := range []string{c.prefix, c.prefix + "x", "x" + c.prefix, "parse_x", "f1abc", "odd*namez"} {
			l := &List{Globs: []Glob{{Pattern: c.glob}}}
			if got, want := l.Select([]string{name}).Count == 1, match(c.glob, name); got != want {
				t.Errorf("%q against %q: Select says %v, path.Match %v", c.glob, name, got, want)
			}
		}
	}
}

// TestSelectAlso: a C++ function is chosen by its symbol or by its
// demangled name, and excluded by either.
func TestSelectAlso(t *testing.T) {
	names := []string{"_ZN2ns6Parser5parseEi", "_ZN2ns6Parser4skipEv", "_ZN2ns5Lexer4nextEv", "main"}
	also := []string{"ns::Parser::parse(int)", "ns::Parser::skip()", "ns::Lexer::next()", ""}
	for _, c := range []struct {
		globs []string
		want  []bool
	}{
		{[]string{"ns::Parser::*"}, []bool{true, true, false, false}},
		{[]string{"ns::Parser::*", "!ns::Parser::skip*"}, []bool{true, false, false, false}},
		{[]string{"_ZN2ns5Lexer*"}, []bool{false, false, true, false}},
		{[]string{"*", "!_ZN2ns6Parser4skipEv"}, []bool{true, false, true, true}},
		{[]string{"ns::Parser::parse(int)", "main"}, []bool{true, false, false, true}},
	} {
		l := &List{}
		for _, g := range c.globs {
			if err := l.Add(g, "test"); err != nil {
				t.Fatal(err)
			}
		}
		sel := l.SelectAlso(names, also)
		if !slices.Equal(sel.Chosen, c.want) || len(sel.Unmatched) != 0 {
			t.Errorf("%q: chosen %v, unmatched %v; want %v", c.globs, sel.Chosen, sel.Unmatched, c.want)
		}
		if plain := l.Select(names); c.globs[0] == "ns::Parser::*" && plain.Count != 0 {
			t.Errorf("%q: Select without the demangled names chose %v", c.globs, plain.Chosen)
		}
	}
}

// TestDemangled: a C++ symbol gets its demangled name, anything else ""
// (a C name, or a _Z name that does not demangle), each name once
// however often it repeats.
func TestDemangled(t *testing.T) {
	names := []string{"main", "_ZN2ns6Parser5parseEi", "_Z3bari", "_Zbad", "_Z3bari"}
	want := []string{"", "ns::Parser::parse(int)", "bar(int)", "", "bar(int)"}
	if got := Demangled(names); !slices.Equal(got, want) {
		t.Errorf("Demangled(%q) = %q, want %q", names, got, want)
	}
}
