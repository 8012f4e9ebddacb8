package callgraph

import (
	"fmt"
	"strings"
)

// An AsmMacro is an assembler .macro: the statements of its body that
// name its parameters, expanded where it is run.
type AsmMacro struct {
	Name   string
	params []string
	body   []asmStmt
}

// An asmStmt is one statement of assembly: a line, or a part of one
// between ';'.
type asmStmt struct {
	text string
	line int
}

// asmReader reads one file's statements.
type asmReader struct {
	s        *Scan
	included map[string]*AsmMacro
	globl    map[string]bool
	in       string    // the last global-looking label: where a use is
	open     *AsmMacro // the .macro being read, until .endm
}

// maxExpand bounds macros run inside macros.
const maxExpand = 16

// read reads cleaned text, a statement at a time.
func (a *asmReader) read(text []byte) error {
	for n, line := range strings.Split(string(text), "\n") {
		for _, st := range splitStmts(line) {
			if err := a.stmt(asmStmt{st, n + 1}); err != nil {
				return err
			}
		}
	}
	if a.open != nil {
		return fmt.Errorf(".macro %s has no .endm", a.open.Name)
	}
	return nil
}

// splitStmts splits a line at the ';' outside strings.
func splitStmts(line string) []string {
	var out []string
	start, inStr := 0, false
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			if inStr {
				i++
			}
		case '"':
			inStr = !inStr
		case ';':
			if !inStr {
				out = append(out, line[start:i])
				start = i + 1
			}
		}
	}
	return append(out, line[start:])
}

// macro finds a macro by name: the file's own, then the included ones.
func (a *asmReader) macro(name string) *AsmMacro {
	if m := a.s.Macros[name]; m != nil {
		return m
	}
	return a.included[name]
}

// stmt reads one statement of the file: into the .macro being read, if
// one is, else as code.
func (a *asmReader) stmt(st asmStmt) error {
	t := strings.TrimSpace(st.text)
	if a.open == nil {
		return a.exec(asmStmt{t, st.line}, 0)
	}
	switch w, _ := cutAsmWord(t); {
	case strings.EqualFold(w, ".endm"):
		a.open = nil
	case strings.Contains(t, `\`):
		a.open.body = append(a.open.body, asmStmt{t, st.line})
	default:
		// A statement that names no parameter is the macro's own: read
		// once, here.
		return a.exec(asmStmt{t, st.line}, 0)
	}
	return nil
}

// exec reads a statement of code, depth macros deep.
func (a *asmReader) exec(st asmStmt, depth int) error {
	t := st.text
	// Labels first: NAME: (numeric and .L labels are local to the code).
	for {
		n := 0
		for n < len(t) && (isAsmIdent(t[n], false) || t[n] == '\\') {
			n++
		}
		w, rest := t[:n], t[n:]
		if w == "" || !strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "::") {
			break
		}
		if !strings.HasPrefix(w, ".L") && !isDigits(w) && !strings.Contains(w, `\`) {
			a.s.Defs = append(a.s.Defs, Def{Name: w, Line: st.line, Kind: AsmLabel, Local: true})
			if a.open == nil {
				a.in = w
			}
		}
		t = strings.TrimSpace(rest[1:])
	}
	w, rest := cutAsmWord(t)
	if w == "" {
		return nil
	}
	in := a.in
	if a.open != nil {
		in = a.open.Name
	}
	lw := strings.ToLower(w)
	switch {
	case lw == ".macro":
		if a.open != nil {
			return fmt.Errorf("line %d: .macro inside .macro %s", st.line, a.open.Name)
		}
		fields := strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
		if len(fields) == 0 {
			return fmt.Errorf("line %d: .macro without a name", st.line)
		}
		m := &AsmMacro{Name: fields[0]}
		for _, p := range fields[1:] {
			p, _, _ = strings.Cut(p, "=") // a default value
			p, _, _ = strings.Cut(p, ":") // :req, :vararg
			m.params = append(m.params, p)
		}
		if a.s.Macros == nil {
			a.s.Macros = map[string]*AsmMacro{}
		}
		a.s.Macros[m.Name] = m
		a.s.Defs = append(a.s.Defs, Def{Name: m.Name, Line: st.line, Kind: Macro})
		a.open = m
	case lw == ".globl" || lw == ".global" || lw == ".weak":
		for _, n := range strings.Split(rest, ",") {
			a.globl[strings.TrimSpace(n)] = true
		}
	case dataDirective[lw]:
		a.operands(rest, st.line, Ref, in)
	case strings.HasPrefix(w, "."):
		// Other directives name no code.
	case a.macro(w) != nil:
		m := a.macro(w)
		a.s.Uses = append(a.s.Uses, Use{Name: w, Line: st.line, Kind: Call, In: in})
		if depth >= maxExpand {
			return fmt.Errorf("line %d: macros run %d deep (%s)", st.line, depth, w)
		}
		args := splitArgs(rest)
		for _, b := range m.body {
			text := b.text
			for i, p := range m.params {
				v := ""
				if i < len(args) {
					v = args[i]
				}
				text = strings.ReplaceAll(text, `\`+p, v)
			}
			// The statement's place is where the macro runs.
			if err := a.exec(asmStmt{strings.TrimSpace(text), st.line}, depth+1); err != nil {
				return err
			}
		}
	case branch(lw):
		a.operands(rest, st.line, Call, in)
	default:
		a.operands(rest, st.line, Ref, in)
	}
	return nil
}

// dataDirective: directives whose operands may be code's addresses.
var dataDirective = map[string]bool{
	".quad": true, ".8byte": true, ".xword": true, ".long": true, ".4byte": true, ".word": true, ".int": true,
}

// branch: an instruction whose operand is where the code goes: x86's
// call and jumps, arm64's branches.
func branch(m string) bool {
	switch m {
	case "call", "callq", "jmp", "jmpq", "bl", "b", "cbz", "cbnz", "tbz", "tbnz":
		return true
	}
	if strings.HasPrefix(m, "b.") {
		return true
	}
	// x86's conditional jumps: ja, jae, jb, ..., jz.
	if len(m) >= 2 && len(m) <= 5 && m[0] == 'j' {
		for _, c := range m[1:] {
			if c < 'a' || c > 'z' {
				return false
			}
		}
		return true
	}
	return false
}

// operands records the names in an instruction's operands: not a
// register (%rax), a relocation's operator (@PLT, :lo12:), a number.
func (a *asmReader) operands(ops string, line int, kind UseKind, in string) {
	for i := 0; i < len(ops); {
		c := ops[i]
		if c >= '0' && c <= '9' {
			// A number, or a numeric label's reference (1f, 2b).
			for i < len(ops) && isAsmIdent(ops[i], false) {
				i++
			}
			continue
		}
		if !isAsmIdent(c, true) {
			i++
			continue
		}
		j := i
		for j < len(ops) && isAsmIdent(ops[j], false) {
			j++
		}
		name := ops[i:j]
		prev := byte(0)
		if i > 0 {
			prev = ops[i-1]
		}
		next := byte(0)
		if j < len(ops) {
			next = ops[j]
		}
		skip := prev == '%' || prev == '@' || prev == '\\' || prev == ':' && next == ':' ||
			strings.HasPrefix(name, ".L") || name == "."
		if !skip {
			a.s.Uses = append(a.s.Uses, Use{Name: name, Line: line, Kind: kind, In: in})
		}
		i = j
	}
}

// cutAsmWord splits s after the name it starts with (a label, a
// mnemonic, a directive, a macro's parameter).
func cutAsmWord(s string) (string, string) {
	i := 0
	for i < len(s) && (isAsmIdent(s[i], i == 0) || s[i] == '\\') {
		i++
	}
	return s[:i], s[i:]
}

func isAsmIdent(c byte, first bool) bool {
	return isIdent(c, first) || c == '.' || c == '$' && !first
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// splitArgs splits a macro's arguments at the commas outside
// parentheses ("ftrace_caller5, 5, 40(%rsp)").
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" || len(out) > 0 {
		out = append(out, rest)
	}
	if len(out) == 1 && !strings.ContainsAny(s, ",") {
		// "STUB name": arguments may be separated by blanks too.
		out = strings.Fields(s)
	}
	return out
}
