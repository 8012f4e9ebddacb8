// Package docs_test keeps the manual true to the tree: the README stays
// a five-minute read, every relative link in README.md and docs/ leads
// to a file (and heading) that exists, and the environment reference
// names every FTRACE_* variable the runtime reads, and no other.
package docs_test

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top directory, seen from this package's.
const root = ".."

// readmeMax is the most lines README.md may have: what a newcomer reads
// before the manual takes over.
const readmeMax = 200

func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMax {
		t.Errorf("README.md has %d lines, more than %d: move the detail into docs/ and link to it", n, readmeMax)
	}
}

// commandsDir holds the command pages, generated from each command's
// help by another step than the one writing the guides. Links into it
// are pending, logged and not checked, only while the directory does
// not exist at all; once it exists, every link into it is checked like
// any other, so a page that is not generated is a broken link.
const commandsDir = "docs/commands"

func TestLinks(t *testing.T) {
	files := markdownFiles(t)
	_, err := os.Stat(filepath.Join(root, commandsDir))
	commandsPending := os.IsNotExist(err)
	anchors := map[string]map[string]bool{} // file (slash path from root) -> its anchors
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range links(string(src)) {
				target, frag, ok := resolve(f, l.target)
				if !ok {
					continue // another site's address
				}
				if commandsPending && (target == commandsDir || strings.HasPrefix(target, commandsDir+"/")) {
					t.Logf("line %d: %s: pending until %s/ is generated", l.line, l.target, commandsDir)
					continue
				}
				fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(target)))
				if err != nil {
					t.Errorf("line %d: link %q: %s does not exist", l.line, l.target, target)
					continue
				}
				if frag == "" {
					continue
				}
				if fi.IsDir() || path.Ext(target) != ".md" {
					t.Errorf("line %d: link %q: #%s in %s, which is not a Markdown file", l.line, l.target, frag, target)
					continue
				}
				a, ok := anchors[target]
				if !ok {
					b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(target)))
					if err != nil {
						t.Fatal(err)
					}
					a = headingAnchors(string(b))
					anchors[target] = a
				}
				if !a[frag] {
					t.Errorf("line %d: link %q: %s has no heading whose anchor is #%s", l.line, l.target, target, frag)
				}
			}
		})
	}
}

// markdownFiles are README.md and every .md file under docs/, as slash
// paths from the repository's top.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatal("no Markdown file under docs/")
	}
	return files
}

// A link is one link's target as written, and the line it is on.
type link struct {
	target string
	line   int
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(\S+)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	fence      = regexp.MustCompile("^ {0,3}(```|~~~)")
)

// links are the link targets of a Markdown text, outside code: fenced
// blocks, indented blocks and code spans.
func links(src string) []link {
	var out []link
	for i, line := range prose(src) {
		if line == "" {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{m[1], i + 1})
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			out = append(out, link{m[1], i + 1})
		}
	}
	return out
}

// prose is src's lines with those of code blocks emptied, so that the
// indexes stay line numbers - 1. An indented line is code when a blank
// line or other code comes before it (an indented block cannot interrupt
// a paragraph, as in CommonMark); blank lines inside a block keep it
// going. A list item's continuation lines, indented less than four
// spaces, are prose.
func prose(src string) []string {
	lines := strings.Split(src, "\n")
	inFence, prevBlank, inCode := false, true, false
	for i, l := range lines {
		if fence.MatchString(l) {
			inFence = !inFence
			lines[i], prevBlank, inCode = "", false, false
			continue
		}
		if inFence {
			lines[i] = ""
			continue
		}
		blank := strings.TrimSpace(l) == ""
		indented := strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t")
		if !blank {
			inCode = indented && (prevBlank || inCode)
		}
		if inCode {
			lines[i] = ""
		}
		prevBlank = blank
	}
	return lines
}

// resolve makes a link target written in file (a slash path from the
// repository's top) into the path it names from the top and its
// fragment; ok is false for an address with a scheme (https:, mailto:).
func resolve(file, target string) (p, frag string, ok bool) {
	if u, err := url.Parse(target); err == nil && u.Scheme != "" {
		return "", "", false
	}
	p, frag, _ = strings.Cut(target, "#")
	if un, err := url.PathUnescape(p); err == nil {
		p = un
	}
	if p == "" {
		return file, frag, true
	}
	return path.Clean(path.Join(path.Dir(file), p)), frag, true
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	linkText   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// headingAnchors are the anchors GitHub gives the headings of a
// Markdown text (and those of its <a name> or <a id> tags).
func headingAnchors(src string) map[string]bool {
	a := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(src) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			a[s+"-"+strconv.Itoa(n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	return a
}

// slug is GitHub's anchor for a heading's text: its rendered text in
// lower case, with every character but letters, digits, marks, '_', '-'
// and spaces dropped, and spaces made '-'.
func slug(heading string) string {
	text := linkText.ReplaceAllString(heading, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestEnvironmentReference checks docs/environment.md against the
// runtime: each FTRACE* variable it reads has a row, and each row names
// a variable it reads.
func TestEnvironmentReference(t *testing.T) {
	read := runtimeVariables(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "environment.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := tableVariables(string(b))
	for _, v := range read {
		if !documented[v] {
			t.Errorf("the runtime reads %s, which docs/environment.md's table has no row for", v)
		}
	}
	for v := range documented {
		if strings.HasPrefix(v, "FTRACE") && !slices.Contains(read, v) {
			t.Errorf("docs/environment.md has a row for %s, which the runtime does not read", v)
		}
	}
}

var (
	envDefine = regexp.MustCompile(`(?m)^#define\s+(ENV_\w+)\s+"(FTRACE\w*)"`)
	envRead   = regexp.MustCompile(`\b(?:ftrt_env|secure_getenv|getenv)\s*\(\s*(ENV_\w+|"FTRACE\w*")\s*\)`)
	rowName   = regexp.MustCompile("^\\|\\s*((?:`[A-Z_]+`(?:,\\s*)?)+)\\s*\\|")
)

// runtimeVariables are the names of the variables the runtime reads:
// the ENV_* macros of runtime/src/abi.h (ENV_PREFIX, the prefix every
// one of them shares, aside) passed to ftrt_env, secure_getenv or
// getenv anywhere under runtime/src, or such a call's literal FTRACE*
// name. A macro abi.h defines that no such call takes fails the test:
// either the runtime reads it some other way, which this test must
// learn, or it is read no more.
func runtimeVariables(t *testing.T) []string {
	t.Helper()
	src := filepath.Join(root, "runtime", "src")
	abi, err := os.ReadFile(filepath.Join(src, "abi.h"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // macro -> variable
	for _, m := range envDefine.FindAllStringSubmatch(string(abi), -1) {
		if m[1] != "ENV_PREFIX" {
			names[m[1]] = m[2]
		}
	}
	readBy := map[string]bool{}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains([]string{".c", ".h", ".S"}, filepath.Ext(p)) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range envRead.FindAllStringSubmatch(string(b), -1) {
			arg := m[1]
			if v, ok := strings.CutPrefix(arg, `"`); ok {
				readBy[strings.TrimSuffix(v, `"`)] = true
				continue
			}
			v, ok := names[arg]
			if !ok {
				t.Errorf("%s reads %s, which abi.h does not define as an FTRACE* name", p, arg)
				continue
			}
			readBy[v] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for macro, v := range names {
		if !readBy[v] {
			t.Errorf("abi.h defines %s (%s), which no ftrt_env, secure_getenv or getenv call under runtime/src reads", macro, v)
		}
	}
	var out []string
	for v := range readBy {
		out = append(out, v)
	}
	slices.Sort(out)
	for _, must := range []string{"FTRACE", "FTRACE_OUT", "FTRACE_FILTER"} {
		if !readBy[must] {
			t.Fatalf("found the runtime reading %v, without %s: the search for its getenv calls is broken", out, must)
		}
	}
	return out
}

// tableVariables are the variables the rows of a Markdown table name in
// their first cell (`NAME`, or several: `A`, `B`).
func tableVariables(src string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(src, "\n") {
		m := rowName.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, n := range strings.Split(m[1], ",") {
			out[strings.Trim(strings.TrimSpace(n), "`")] = true
		}
	}
	return out
}

// TestSlug checks the anchors against ones GitHub gives such headings.
func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Subtree filters: FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE", "subtree-filters-ftrace_graph_funcs-and-ftrace_graph_notrace"},
		{"C++ exceptions and forced unwinds", "c-exceptions-and-forced-unwinds"},
		{"From inside: ftrace.h", "from-inside-ftraceh"},
		{"ops: the program's own code at any traced function", "ops-the-programs-own-code-at-any-traced-function"},
		{"The `ftrace.h` API", "the-ftraceh-api"},
		{"[Reading](views.md) traces", "reading-traces"},
		{"**Bold** and `code_name`", "bold-and-code_name"},
		{"Limits: a full disk, the file size limit, a crash", "limits-a-full-disk-the-file-size-limit-a-crash"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// TestHeadingAnchors checks that a repeated heading's anchors are
// numbered and that headings inside code are none.
func TestHeadingAnchors(t *testing.T) {
	src := "# Title\n\n## Usage\n\n    # not a heading\n\n```\n## nor this\n```\n\n## Usage\n\n<a id=\"here\"></a>\n"
	got := headingAnchors(src)
	want := map[string]bool{"title": true, "usage": true, "usage-1": true, "here": true}
	if len(got) != len(want) {
		t.Errorf("headingAnchors = %v, want %v", got, want)
	}
	for a := range want {
		if !got[a] {
			t.Errorf("headingAnchors = %v, lacks %q", got, a)
		}
	}
}

// TestLinkSyntax checks which targets count as links: those of prose,
// not of code blocks or code spans.
func TestLinkSyntax(t *testing.T) {
	src := strings.Join([]string{
		"See [a](a.md) and [b](b.md#part \"title\").", // 1
		"",
		"    [code](indented.md)", // 3
		"",
		"```",
		"[fenced](fenced.md)", // 6
		"```",
		"- an item",
		"  continued: [c](c.md), `[span](span.md)`", // 9
		"[ref]: d.md", // 10
		"text right after a paragraph",
		"    [e](e.md) continues the paragraph", // 12
	}, "\n")
	var got []string
	for _, l := range links(src) {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	want := []string{"1:a.md", "1:b.md#part", "9:c.md", "10:d.md", "12:e.md"}
	if !slices.Equal(got, want) {
		t.Errorf("links = %q, want %q", got, want)
	}
}

// TestResolve checks how a target is read relative to its file.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		file, target, path, frag string
		ok                       bool
	}{
		{"README.md", "docs/live.md#sigtrap", "docs/live.md", "sigtrap", true},
		{"docs/views.md", "../trace/trace.go", "trace/trace.go", "", true},
		{"docs/views.md", "#replay", "docs/views.md", "replay", true},
		{"docs/views.md", "commands/ftpatch_c++.md", "docs/commands/ftpatch_c++.md", "", true},
		{"docs/views.md", "my%20page.md", "docs/my page.md", "", true},
		{"docs/views.md", "https://ui.perfetto.dev", "", "", false},
	} {
		p, frag, ok := resolve(c.file, c.target)
		if p != c.path || frag != c.frag || ok != c.ok {
			t.Errorf("resolve(%q, %q) = %q, %q, %v; want %q, %q, %v", c.file, c.target, p, frag, ok, c.path, c.frag, c.ok)
		}
	}
}
