// Package funclist reads the lists of functions that `ftpatch enable` and
// `ftpatch disable` take, and matches function names against them.
//
// A list comes from three places, merged into one List: a list file (one
// glob per line, `!glob` to exclude, `#` comments), the function column of
// a previous `ftpatch report`, and globs given on the command line. A
// function is in the list when it matches at least one include glob and
// no exclude glob, the rule the runtime's FTRACE_FILTER follows, so a list
// and the same globs in FTRACE_FILTER choose the same functions.
//
// Globs are those of path.Match (`*`, `?`, `[a-z]`, `[^a-z]`, `\` escapes)
// with fnmatch's `[!a-z]` accepted as a synonym of `[^a-z]`; function
// names hold no `/`, so the two agree.
//
// Parsing only reads: every error names the input and the line, and
// nothing is written anywhere.
package funclist

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ianlancetaylor/demangle"

	"ftpatch/infile"
)

// Errors callers branch on. Parse errors are *LineError values wrapping
// ErrSyntax; a list that cannot choose anything wraps ErrEmpty or
// ErrOnlyExcludes.
var (
	// ErrSyntax: a line of a list or report is not what the format allows.
	ErrSyntax = errors.New("bad function list")
	// ErrEmpty: the inputs hold no glob at all (empty, or only comments).
	ErrEmpty = errors.New("no function globs")
	// ErrOnlyExcludes: every glob excludes, so nothing is chosen; a list
	// that means "all but these" says `*` first.
	ErrOnlyExcludes = errors.New("only excluding globs")
)

// A LineError is a bad line of an input: its name, line number (from 1)
// and what is wrong. It matches ErrSyntax.
type LineError struct {
	Name string // the input: a file name, or "argument 2"
	Line int    // 0 when the input has no lines (a command-line glob)
	Msg  string
}

func (e *LineError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.Name, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
}

// Is makes errors.Is(err, ErrSyntax) true.
func (e *LineError) Is(target error) bool { return target == ErrSyntax }

// A Glob is one pattern of a list.
type Glob struct {
	Pattern string // for path.Match, with `[!` already rewritten to `[^`
	Exclude bool   // written `!glob`: functions matching it are left out
	Source  string // where it was written, for messages: "list.txt:3", "argument 2"
}

// String gives the glob as a user writes it.
func (g Glob) String() string {
	if g.Exclude {
		return "!" + g.Pattern
	}
	return g.Pattern
}

// literal reports whether the pattern matches exactly one string, itself.
func (g Glob) literal() bool { return !strings.ContainsAny(g.Pattern, `*?[\`) }

// A List is the globs of every input, in the order given.
type List struct {
	Globs []Glob
}

// maxLine bounds a line of a list file: no function name comes near it,
// and a file that has such lines is not a list.
const maxLine = 64 << 10

// ParseFile reads the list file at path, a regular file (infile.Open: a
// FIFO or a device is refused at once, rather than waited on or read
// without end).
func ParseFile(path string) (*List, error) {
	f, _, err := infile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Parse reads a list: one glob per line, surrounding blanks ignored;
// `!glob` excludes; a line whose first non-blank character is `#` is a
// comment, and so is everything from a blank followed by `#`. Blank lines
// are allowed. name is used in errors.
func Parse(name string, r io.Reader) (*List, error) {
	l := &List{}
	err := lines(name, r, func(n int, line string) error {
		if i := strings.Index(line, "#"); i == 0 || (i > 0 && (line[i-1] == ' ' || line[i-1] == '\t')) {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			return nil
		}
		return l.add(line, name, n)
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// lines calls fn for each line of r, after checking it is text: no NUL,
// valid UTF-8, no control characters but tabs, not over maxLine.
func lines(name string, r io.Reader, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSuffix(sc.Text(), "\r")
		if err := checkText(line); err != "" {
			return &LineError{name, n, err + ": not a text file of function globs"}
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &LineError{name, n + 1, fmt.Sprintf("line longer than %d bytes: not a list of function globs", maxLine)}
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkText says what makes line unfit for a text file, or "".
func checkText(line string) string {
	if i := strings.IndexByte(line, 0); i >= 0 {
		return fmt.Sprintf("NUL byte at column %d", i+1)
	}
	if !utf8.ValidString(line) {
		return "invalid UTF-8"
	}
	for i, r := range line {
		if r != '\t' && unicode.IsControl(r) {
			return fmt.Sprintf("control character %U at column %d", r, i+1)
		}
	}
	return ""
}

// Add adds one glob given on the command line (`!glob` excludes); source
// names it in errors, such as "argument 2".
func (l *List) Add(glob, source string) error {
	if strings.TrimSpace(glob) == "" {
		return &LineError{source, 0, "empty glob"}
	}
	if err := checkText(glob); err != "" {
		return &LineError{source, 0, err}
	}
	return l.add(glob, source, 0)
}

// add checks one glob and appends it.
func (l *List) add(text, name string, line int) error {
	bad := func(format string, args ...any) error {
		return &LineError{name, line, fmt.Sprintf(format, args...)}
	}
	g := Glob{Source: name}
	if line > 0 {
		g.Source = name + ":" + strconv.Itoa(line)
	}
	if strings.HasPrefix(text, "!") {
		g.Exclude = true
		text = text[1:]
	}
	if text == "" {
		return bad("`!` with no glob after it")
	}
	if strings.ContainsAny(text, " \t") {
		return bad("%q holds a blank: one glob per line, and function names have none", text)
	}
	g.Pattern = strings.ReplaceAll(text, "[!", "[^")
	if _, err := path.Match(g.Pattern, ""); err != nil {
		return bad("bad glob %q: %v (use [a-z] classes closed by ], and \\ to escape *?[)", text, err)
	}
	l.Globs = append(l.Globs, g)
	return nil
}

// ParseReport reads the function column of an `ftpatch report` output,
// for either tracer:
//
//	CALLS  FUNCTION                      (function)
//	TOTAL  SELF  CALLS  FUNCTION         (function_graph)
//
// Each row adds its function name as an include glob (escaped, so that
// it matches only that name). Rows naming a bare address (0x...: no
// symbol) are skipped; a library function's row (its name followed by
// [lib]) adds its name. Lines starting with `#` are the report's summary.
// name is used in errors.
func ParseReport(name string, r io.Reader) (*List, error) {
	l := &List{}
	header := false
	err := lines(name, r, func(n int, line string) error {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			return nil
		}
		if f[len(f)-1] == "FUNCTION" && (f[0] == "CALLS" || f[0] == "TOTAL") {
			header = true
			return nil
		}
		if !header {
			return &LineError{name, n, "not an `ftpatch report` output: want its CALLS ... FUNCTION (or TOTAL ... FUNCTION) header first"}
		}
		if len(f) > 2 && f[len(f)-1] == libraryMark {
			f = f[:len(f)-1] // a library function's row: its name before the mark
		}
		if len(f) < 2 {
			return &LineError{name, n, fmt.Sprintf("want a row ending in CALLS FUNCTION, found %q", line)}
		}
		if _, err := strconv.ParseUint(f[len(f)-2], 10, 64); err != nil {
			return &LineError{name, n, fmt.Sprintf("want a call count before the function, found %q", f[len(f)-2])}
		}
		fn := f[len(f)-1]
		if strings.HasPrefix(fn, "0x") {
			return nil // an address no symbol names
		}
		g := Glob{Pattern: escape(fn), Source: name + ":" + strconv.Itoa(n)}
		if _, err := path.Match(g.Pattern, ""); err != nil {
			return &LineError{name, n, fmt.Sprintf("function name %q: %v", fn, err)}
		}
		l.Globs = append(l.Globs, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !header {
		return nil, &LineError{name, 0, "not an `ftpatch report` output: no CALLS ... FUNCTION header"}
	}
	return l, nil
}

// libraryMark follows a library function's name in a report's row
// (views.LibraryMark, without its blank).
const libraryMark = "[lib]"

// escape makes a name a glob matching only itself.
func escape(name string) string {
	if !strings.ContainsAny(name, `*?[\`) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Merge appends the globs of o.
func (l *List) Merge(o *List) { l.Globs = append(l.Globs, o.Globs...) }

// Check reports a list that cannot choose anything: no globs (ErrEmpty),
// or only excluding ones (ErrOnlyExcludes). inputs names where the globs
// came from, for the message.
func (l *List) Check(inputs string) error {
	if len(l.Globs) == 0 {
		return fmt.Errorf("%s: %w (the list is empty or holds only comments)", inputs, ErrEmpty)
	}
	for _, g := range l.Globs {
		if !g.Exclude {
			return nil
		}
	}
	return fmt.Errorf("%s: %w: they leave nothing to choose; to mean every other function, add a line `*`", inputs, ErrOnlyExcludes)
}

// Hash identifies the list's meaning: the same globs in any order, with
// repeats, hash alike. It is never 0, which the config record keeps for
// "no list".
func (l *List) Hash() uint64 {
	var keys []string
	for _, g := range l.Globs {
		keys = append(keys, g.String())
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{'\n'})
	}
	v := binary.LittleEndian.Uint64(h.Sum(nil))
	if v == 0 {
		v = 1
	}
	return v
}

// A Selection is the outcome of matching a list against a set of names.
type Selection struct {
	Chosen    []bool // per name: in the list
	Count     int    // names chosen
	Unmatched []Glob // include globs that matched no name at all (before excludes)
}

// Select matches every name against the list. Literal globs (no `*?[\`)
// are looked up in a set, so a list of thousands of names from a report
// costs one map lookup per name rather than a match per glob.
func (l *List) Select(names []string) Selection { return l.SelectAlso(names, nil) }

// SelectAlso is Select where each name may also go by a second name,
// also[k] ("" for none): a C++ function's demangled name beside its
// symbol, since lists are written, and reports print, in the demangled
// form. A name is chosen when either form matches an include glob and
// neither matches an exclude.
func (l *List) SelectAlso(names, also []string) Selection {
	litInc, litExc := map[string]int{}, map[string]bool{}
	var patInc, patExc []int // indexes into l.Globs
	for i, g := range l.Globs {
		switch {
		case g.literal() && g.Exclude:
			litExc[g.Pattern] = true
		case g.literal():
			if _, ok := litInc[g.Pattern]; !ok {
				litInc[g.Pattern] = i
			}
		case g.Exclude:
			patExc = append(patExc, i)
		default:
			patInc = append(patInc, i)
		}
	}
	// Most globs start with letters (parse_*): a name without that
	// prefix cannot match, which a prefix test says far faster than
	// path.Match; a glob that is a prefix and a final star needs nothing
	// more.
	type fast struct {
		prefix string
		star   bool // the glob is prefix + "*"
	}
	pre := make([]fast, len(l.Globs))
	for i, g := range l.Globs {
		pre[i].prefix, pre[i].star = literalPrefix(g.Pattern)
	}
	try := func(i int, name string) bool {
		f := pre[i]
		if !strings.HasPrefix(name, f.prefix) {
			return false
		}
		return f.star || match(l.Globs[i].Pattern, name)
	}
	matched := make([]bool, len(l.Globs))
	sel := Selection{Chosen: make([]bool, len(names))}
	// include reports whether name matches an include glob, marking the
	// globs it matches.
	include := func(name string, in bool) bool {
		if i, ok := litInc[name]; ok {
			in, matched[i] = true, true
		}
		for _, i := range patInc {
			// Once a name is in, only globs not yet seen to match need
			// trying: they may otherwise be reported as matching nothing.
			if (in && matched[i]) || !try(i, name) {
				continue
			}
			in, matched[i] = true, true
		}
		return in
	}
	exclude := func(name string) bool {
		if litExc[name] {
			return true
		}
		for _, i := range patExc {
			if try(i, name) {
				return true
			}
		}
		return false
	}
	for k, name := range names {
		alt := ""
		if k < len(also) && also[k] != name {
			alt = also[k]
		}
		in := include(name, false)
		if alt != "" {
			in = include(alt, in)
		}
		if !in || exclude(name) || (alt != "" && exclude(alt)) {
			continue
		}
		sel.Chosen[k] = true
		sel.Count++
	}
	// A glob written twice is reported once, and not at all if either
	// copy matched (a repeated literal is only tried as its first copy).
	hit, seen := map[string]bool{}, map[string]bool{}
	for i, g := range l.Globs {
		if matched[i] {
			hit[g.Pattern] = true
		}
	}
	for _, g := range l.Globs {
		if g.Exclude || hit[g.Pattern] || seen[g.Pattern] {
			continue
		}
		seen[g.Pattern] = true
		sel.Unmatched = append(sel.Unmatched, g)
	}
	return sel
}

// literalPrefix returns the characters a glob's matches must start with
// (up to its first wildcard, escapes resolved), and whether the rest of
// the glob is a lone final `*`.
func literalPrefix(p string) (prefix string, star bool) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*':
			return b.String(), i == len(p)-1
		case '?', '[':
			return b.String(), false
		case '\\':
			if i+1 < len(p) {
				i++
			}
		}
		b.WriteByte(p[i])
	}
	return b.String(), false
}

// match is path.Match for patterns already checked.
func match(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// Demangled gives each C++ name its demangled form ("" for a C name), as
// reports print them and users write them: "ns::Parser::parse(int)".
// Names repeat (a function per site): each is demangled once. The
// result is SelectAlso's second names.
func Demangled(names []string) []string {
	out := make([]string, len(names))
	memo := map[string]string{}
	for i, n := range names {
		if !strings.HasPrefix(n, "_Z") {
			continue
		}
		d, ok := memo[n]
		if !ok {
			d = demangle.Filter(n)
			if d == n {
				d = ""
			}
			memo[n] = d
		}
		out[i] = d
	}
	return out
}
