package callgraph

import (
	"bytes"
	"fmt"
	"strings"
)

// A DefKind says what a definition is.
type DefKind int

// The kinds of definition.
const (
	Func     DefKind = iota // a C function (static inline ones in headers too)
	Macro                   // a function-like #define, or an assembler .macro
	AsmLabel                // a label of an assembly file
)

func (k DefKind) String() string {
	switch k {
	case Func:
		return "function"
	case Macro:
		return "macro"
	case AsmLabel:
		return "label"
	}
	return fmt.Sprintf("DefKind(%d)", int(k))
}

// A Def is a name a file defines.
type Def struct {
	Name string
	Line int
	Kind DefKind
	// Local: a static function, or an assembly label never made
	// .globl. A .c or .S file's is its own alone; a header's reaches
	// every file that includes the header.
	Local bool
}

// A UseKind says how a file uses a name.
type UseKind int

// The kinds of use.
const (
	Call UseKind = iota // NAME(...) in C, call/jmp/bl/b NAME in assembly, an assembler macro invoked
	Ref                 // NAME without a call: its address taken (a hook stored, a callback passed)
)

func (k UseKind) String() string {
	switch k {
	case Call:
		return "call"
	case Ref:
		return "ref"
	}
	return fmt.Sprintf("UseKind(%d)", int(k))
}

// A Use is a name a file's code calls or refers to, which may be
// defined in another file: which one is the graph's business (Build).
type Use struct {
	Name string
	Line int
	Kind UseKind
	// In: the function, macro or label the use is in ("" at file
	// scope, or in an object-like #define).
	In string
	// MacroOnly: a NAME(...) outside any body (a declaration, or a
	// macro run at file scope), which is a call only if NAME is a
	// macro.
	MacroOnly bool
}

// An Include is a quoted #include: the path as written.
type Include struct {
	Path string
	Line int
}

// A Scan is what one file holds: its definitions, its uses of names,
// its includes.
type Scan struct {
	Defs     []Def
	Uses     []Use
	Includes []Include
	// Macros: the assembler macros the file defines, for the files
	// that include it.
	Macros map[string]*AsmMacro
}

// ScanC reads a C source or header: comments, strings and character
// constants are skipped, and preprocessor lines but #include "..." and
// #define. A definition is an identifier, a parenthesised list (and
// perhaps __attribute__((...))) and then '{' outside any brace; a
// function-like #define defines a macro. A call is an identifier
// followed by '(' inside a body or a #define's text, not after '.' or
// '->'; a reference, an identifier not followed by '(' inside a body or
// an initialiser. Code under #if and #else is read alike: both
// architectures' branches count.
func ScanC(src []byte) (*Scan, error) {
	text, dirs, err := clean(src, true)
	if err != nil {
		return nil, err
	}
	s := &Scan{}
	for _, d := range dirs {
		s.directive(d, true)
	}
	toks := lexC(text, 1)
	if err := s.parseC(toks); err != nil {
		return nil, err
	}
	return s, nil
}

// ScanAsm reads an assembly file (.S, run through the C preprocessor
// before the assembler) or a header of assembler macros: comments are
// skipped, #include "..." and #define read as in C. A label NAME: is a
// definition (local unless .globl, .global or .weak names it), and so
// is a .macro; call, jmp and the conditional jumps, bl, b, b.cond, cbz,
// cbnz, tbz and tbnz to NAME are calls, any other instruction's operand
// NAME (and a .quad's, .long's...) a reference, and a statement that
// starts with a macro's name calls it. Macros are expanded where they
// are run, so "ENTRY NAME" defines NAME: the file's own, and those of
// included (macros: by name; nil for none). A statement of a macro's
// body that names none of its parameters counts once, as the macro's.
func ScanAsm(src []byte, included map[string]*AsmMacro) (*Scan, error) {
	text, dirs, err := clean(src, false)
	if err != nil {
		return nil, err
	}
	s := &Scan{}
	for _, d := range dirs {
		s.directive(d, false)
	}
	a := &asmReader{s: s, included: included, globl: map[string]bool{}}
	if err := a.read(text); err != nil {
		return nil, err
	}
	for i := range s.Defs {
		if s.Defs[i].Kind == AsmLabel && a.globl[s.Defs[i].Name] {
			s.Defs[i].Local = false
		}
	}
	return s, nil
}

// A directive is one preprocessor line, comments removed and
// continuation lines joined.
type directive struct {
	text string
	line int
}

// clean blanks out comments and preprocessor lines (keeping every
// newline, so lines keep their numbers) and returns the directives
// apart. Strings stay; in C, character constants too.
func clean(src []byte, isC bool) ([]byte, []directive, error) {
	out := make([]byte, 0, len(src))
	var dirs []directive
	line := 1
	atStart := true // only blanks since the last newline
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			out = append(out, c)
			line++
			atStart = true
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				return nil, nil, fmt.Errorf("line %d: comment not closed", line)
			}
			for _, b := range src[i : i+2+end+2] {
				if b == '\n' {
					out = append(out, '\n')
					line++
				}
			}
			out = append(out, ' ')
			i += 2 + end + 2
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '#' && atStart:
			d, n, nl, err := readDirective(src[i:], line)
			if err != nil {
				return nil, nil, err
			}
			dirs = append(dirs, d)
			for range nl {
				out = append(out, '\n')
			}
			line += nl
			i += n
		case c == '"' || (c == '\'' && isC):
			n, err := quoted(src[i:], line)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, src[i:i+n]...)
			i += n
			atStart = false
		default:
			if c != ' ' && c != '\t' {
				atStart = false
			}
			out = append(out, c)
			i++
		}
	}
	return out, dirs, nil
}

// quoted gives the length of the string or character constant src
// starts with.
func quoted(src []byte, line int) (int, error) {
	q := src[0]
	for i := 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case q:
			return i + 1, nil
		case '\n':
			return 0, fmt.Errorf("line %d: %c not closed on its line", line, q)
		}
	}
	return 0, fmt.Errorf("line %d: %c not closed", line, q)
}

// readDirective reads the preprocessor line src starts with (at its
// '#'): its text without comments, its continuation lines joined; how
// many bytes it took, and how many newlines.
func readDirective(src []byte, line int) (directive, int, int, error) {
	var b strings.Builder
	nl := 0
	i := 1
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			return directive{b.String(), line}, i + 1, nl + 1, nil
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			b.WriteByte(' ')
			nl++
			i += 2
		case c == '\\' && i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n':
			b.WriteByte(' ')
			nl++
			i += 3
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				return directive{}, 0, 0, fmt.Errorf("line %d: comment not closed", line+nl)
			}
			nl += bytes.Count(src[i:i+2+end+2], []byte("\n"))
			b.WriteByte(' ')
			i += 2 + end + 2
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			n, err := quoted(src[i:], line+nl)
			if err != nil {
				// An apostrophe in an #error's text, say: keep it as it is.
				b.WriteByte(c)
				i++
				continue
			}
			b.Write(src[i : i+n])
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return directive{b.String(), line}, i, nl, nil
}

// directive records what an #include "..." or a #define says.
func (s *Scan) directive(d directive, isC bool) {
	t := strings.TrimSpace(d.text)
	word, rest := cutIdent(t)
	rest = strings.TrimLeft(rest, " \t")
	switch word {
	case "include":
		if strings.HasPrefix(rest, `"`) {
			if end := strings.IndexByte(rest[1:], '"'); end >= 0 {
				s.Includes = append(s.Includes, Include{Path: rest[1 : 1+end], Line: d.line})
			}
		}
	case "define":
		name, body := cutIdent(rest)
		if name == "" {
			return
		}
		in := ""
		var ps map[string]bool
		if strings.HasPrefix(body, "(") {
			s.Defs = append(s.Defs, Def{Name: name, Line: d.line, Kind: Macro})
			if end := strings.IndexByte(body, ')'); end >= 0 {
				ps = params(lexC([]byte(body[:end+1]), d.line))
				body = body[end+1:]
			}
			in = name
		}
		if isC {
			s.bodyUses(lexC([]byte(body), d.line), in, ps)
		}
	}
}

// cutIdent splits s after the identifier it starts with ("" if none).
func cutIdent(s string) (string, string) {
	i := 0
	for i < len(s) && isIdent(s[i], i == 0) {
		i++
	}
	return s[:i], s[i:]
}

func isIdent(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}

// A token of C: an identifier or a punctuator (strings, character
// constants and numbers are of no interest and left out).
type token struct {
	text  string
	line  int
	ident bool
}

// lexC splits cleaned C text into identifiers and punctuators.
func lexC(text []byte, line int) []token {
	var toks []token
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case isIdent(c, true):
			j := i
			for j < len(text) && isIdent(text[j], false) {
				j++
			}
			toks = append(toks, token{string(text[i:j]), line, true})
			i = j
		case c >= '0' && c <= '9':
			for i < len(text) && (isIdent(text[i], false) || text[i] == '.') {
				i++
			}
		case c == '"' || c == '\'':
			n, err := quoted(text[i:], line)
			if err != nil {
				n = 1
			}
			toks = append(toks, token{"\"\"", line, false})
			i += n
		case c == '-' && i+1 < len(text) && text[i+1] == '>':
			toks = append(toks, token{"->", line, false})
			i += 2
		case c == '#' && i+1 < len(text) && text[i+1] == '#':
			toks = append(toks, token{"##", line, false})
			i += 2
		default:
			toks = append(toks, token{string(c), line, false})
			i++
		}
	}
	return toks
}

// member: the token before an identifier makes it a struct's member
// (a.f(), p->f()), a stringified or pasted macro argument, not a name of
// its own.
func member(toks []token, i int) bool {
	if i == 0 {
		return false
	}
	switch toks[i-1].text {
	case ".", "->", "#", "##":
		return true
	}
	return i+1 < len(toks) && toks[i+1].text == "##"
}

// bodyUses records the uses in a #define's text (in: the macro's name,
// "" for an object-like one): NAME( a call, any other NAME a reference,
// unless it follows '.' or '->' or is one of the macro's parameters. The
// arguments of a call of a parameter (the X-macro's X(ID, name)) are
// not references: X decides what they become.
func (s *Scan) bodyUses(toks []token, in string, params map[string]bool) {
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if !t.ident || member(toks, i) || keyword[t.text] {
			continue
		}
		call := i+1 < len(toks) && toks[i+1].text == "("
		if params[t.text] {
			if call {
				if end := closing(toks, i+1); end > 0 {
					i = end
				}
			}
			continue
		}
		kind := Ref
		if call {
			kind = Call
		}
		s.Uses = append(s.Uses, Use{Name: t.text, Line: t.line, Kind: kind, In: in})
	}
}

// keyword holds C's keywords and the GNU ones that take parentheses:
// never a call.
var keyword = map[string]bool{
	"if": true, "while": true, "for": true, "switch": true, "return": true, "sizeof": true,
	"_Alignof": true, "alignof": true, "_Static_assert": true, "static_assert": true,
	"__attribute__": true, "__asm__": true, "asm": true, "__typeof__": true, "typeof": true,
	"__builtin_offsetof": true, "offsetof": true, "_Generic": true, "__volatile__": true, "volatile": true,
	"do": true, "else": true, "case": true, "default": true, "goto": true, "break": true, "continue": true,
	"struct": true, "union": true, "enum": true, "static": true, "const": true, "inline": true,
	"extern": true, "void": true, "int": true, "char": true, "long": true, "short": true,
	"unsigned": true, "signed": true, "_Alignas": true, "alignas": true, "_Atomic": true,
	"__extension__": true, "__inline__": true, "register": true, "restrict": true, "__restrict": true,
	"_Thread_local": true, "__thread": true, "_Noreturn": true, "_Bool": true, "float": true, "double": true,
}

// tagKeyword: the next identifier is a tag, not a name of code.
var tagKeyword = map[string]bool{"struct": true, "union": true, "enum": true}

// A brace kind: what a '{' opens.
type braceKind int

const (
	braceBody      braceKind = iota // a function's body, or a block in it
	braceAggregate                  // struct, union or enum members
	braceInit                       // an initialiser at file scope
)

// parseC finds definitions and uses in a C file's tokens.
func (s *Scan) parseC(toks []token) error {
	var stack []braceKind
	declStart := 0             // index of the first token of the current file-scope declaration
	afterAssign := false       // a file-scope '=' seen in the current declaration
	pendingBody := false       // the next '{' opens the function just defined
	fn := ""                   // the function whose body the tokens are in
	var locals map[string]bool // its parameters and the variables it declares: never a function of elsewhere
	aggClose := -1             // the last '}' that closed a struct's members ("struct { ... } x" declares x)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.text {
		case "{":
			var kind braceKind
			switch {
			case pendingBody:
				kind = braceBody
			case aggregateBrace(toks, i):
				kind = braceAggregate
			case len(stack) > 0:
				kind = stack[len(stack)-1]
			default:
				kind = braceInit
			}
			if kind == braceAggregate && len(stack) > 0 && stack[len(stack)-1] == braceInit {
				kind = braceInit // a compound literal's braces in an initialiser
			}
			pendingBody = false
			stack = append(stack, kind)
			continue
		case "}":
			if len(stack) == 0 {
				return fmt.Errorf("line %d: '}' closes no brace", t.line)
			}
			if stack[len(stack)-1] == braceAggregate {
				aggClose = i
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				fn = ""
				if !afterAssign {
					declStart = i + 1
				}
			}
			continue
		case ";":
			if len(stack) == 0 {
				declStart, afterAssign = i+1, false
			}
			continue
		case "=":
			if len(stack) == 0 {
				afterAssign = true
			}
			continue
		}
		if !t.ident || keyword[t.text] || member(toks, i) {
			continue
		}
		call := i+1 < len(toks) && toks[i+1].text == "("
		where := braceInit // file scope after '=' reads as an initialiser
		if len(stack) > 0 {
			where = stack[len(stack)-1]
		} else if !afterAssign {
			// A declaration or a definition at file scope.
			if !call {
				continue
			}
			end := closing(toks, i+1)
			if end < 0 {
				return fmt.Errorf("line %d: '(' after %s not closed", t.line, t.text)
			}
			k := skipAttributes(toks, end+1)
			if k < len(toks) && toks[k].text == "{" && !declHasParenBefore(toks, declStart, i) {
				static := false
				for _, d := range toks[declStart:i] {
					if d.text == "static" {
						static = true
					}
				}
				s.Defs = append(s.Defs, Def{Name: t.text, Line: t.line, Kind: Func, Local: static})
				pendingBody, fn = true, t.text
				locals = params(toks[i+1 : end+1])
				i = k - 1
				continue
			}
			// A prototype, or a macro run at file scope.
			s.Uses = append(s.Uses, Use{Name: t.text, Line: t.line, Kind: Call, MacroOnly: true})
			continue
		}
		switch {
		case where == braceAggregate:
			// Members' declarations: no code.
		case call && where == braceBody && locals[t.text]:
			// A call through a parameter or a variable.
		case call:
			// In a file-scope initialiser only a macro can run.
			s.Uses = append(s.Uses, Use{Name: t.text, Line: t.line, Kind: Call, MacroOnly: where == braceInit, In: fn})
		case i > 0 && (toks[i-1].ident && !keyword[toks[i-1].text] || i-1 == aggClose):
			// A declaration's name: "uint64_t now" names a variable,
			// which the body's "now" means from here on.
			if where == braceBody {
				locals[t.text] = true
			}
		case where == braceBody && i+2 < len(toks) && toks[i+1].text == "=" && toks[i+2].text != "=":
			// Assigned to ("a = 1, mcount = 2" declares two): a
			// variable.
			locals[t.text] = true
		case i > 0 && tagKeyword[toks[i-1].text], where == braceBody && locals[t.text]:
			// A struct's tag; a variable.
		default:
			s.Uses = append(s.Uses, Use{Name: t.text, Line: t.line, Kind: Ref, In: fn})
		}
	}
	if len(stack) != 0 {
		return fmt.Errorf("%d brace(s) not closed at the end", len(stack))
	}
	return nil
}

// params gives the names of a definition's parameters (toks: its
// parenthesised list): each identifier before a ',', a ')' or a '['.
func params(toks []token) map[string]bool {
	m := map[string]bool{}
	for i, t := range toks {
		if t.ident && !keyword[t.text] && i+1 < len(toks) {
			switch toks[i+1].text {
			case ",", ")", "[":
				m[t.text] = true
			}
		}
	}
	return m
}

// closing gives the index of the ')' that closes toks[open], or -1.
func closing(toks []token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// skipAttributes steps over __attribute__((...)) and __asm__("...")
// after a declarator.
func skipAttributes(toks []token, k int) int {
	for k < len(toks) && (toks[k].text == "__attribute__" || toks[k].text == "__asm__" || toks[k].text == "asm") {
		if k+1 >= len(toks) || toks[k+1].text != "(" {
			return k
		}
		end := closing(toks, k+1)
		if end < 0 {
			return len(toks)
		}
		k = end + 1
	}
	return k
}

// declHasParenBefore: the declaration has an unclosed '(' before the
// name at i, which then names a parameter or a pointer to a function,
// not the function defined.
func declHasParenBefore(toks []token, from, i int) bool {
	depth := 0
	for _, t := range toks[from:i] {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		}
	}
	return depth > 0
}

// aggregateBrace: the '{' at i opens a struct, union or enum's members
// (struct NAME {, struct {, enum {, struct __attribute__((packed)) NAME {).
func aggregateBrace(toks []token, i int) bool {
	for j := i - 1; j >= 0; j-- {
		t := toks[j]
		switch {
		case t.text == "struct" || t.text == "union" || t.text == "enum":
			return true
		case t.text == ")":
			// Step over an __attribute__((...)).
			depth := 0
			for ; j >= 0; j-- {
				if toks[j].text == ")" {
					depth++
				} else if toks[j].text == "(" {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if j < 1 || toks[j-1].text != "__attribute__" {
				return false
			}
			j--
		case !t.ident:
			return false
		}
	}
	return false
}
