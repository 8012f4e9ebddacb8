// Package cmddoc writes the manual of a command from the command itself:
// a Markdown page per command (checked in under docs/commands) and a man
// page per command (installed by make install), both made by cobra's doc
// generator from the Short, Long, Example and flags that --help prints,
// so the manual cannot say something --help does not.
//
// A command's help is plain text laid out for a terminal: paragraphs of
// wrapped lines, and indented lines (command lines, tables) that must
// keep their layout. The pages keep that reading: indented lines become
// code blocks, and every character Markdown would take for markup
// (`*`, `_`, `<`, ...) in the rest is escaped, so a glob such as 'lzma_*'
// or a name such as <pid>-<tid> reads as it does in --help.
package cmddoc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// Gen holds the hidden flags by which a command writes its own pages:
// --gen-markdown DIR (make docs) and --gen-man DIR (make install). They
// are hidden: they are for the build, and appear in no page.
type Gen struct {
	markdown, man string
	source        string // the man pages' footer: the program and its version
}

// Register adds the flags to fs; source names the program and its
// version for the man pages' footer ("ftpatch v1.2").
func (g *Gen) Register(fs *pflag.FlagSet, source string) {
	g.source = source
	fs.StringVar(&g.markdown, "gen-markdown", "", "write a Markdown page per command into `DIR`")
	fs.StringVar(&g.man, "gen-man", "", "write a man page per command into `DIR`")
	fs.MarkHidden("gen-markdown")
	fs.MarkHidden("gen-man")
}

// Requested reports whether either flag was given.
func (g *Gen) Requested() bool { return g.markdown != "" || g.man != "" }

// Write writes the pages the flags asked for, of root and every command
// under it.
func (g *Gen) Write(root *cobra.Command) error {
	if g.markdown != "" {
		if err := Markdown(root, g.markdown); err != nil {
			return err
		}
	}
	if g.man != "" {
		return Man(root, g.man, g.source)
	}
	return nil
}

// Markdown writes a page per command of root's tree into dir, named as
// cobra names them (ftpatch.md, ftpatch_runtime_build.md), without
// cobra's date line, so that the same commands give the same bytes.
// Pages of root's name in dir that no command has any more are removed;
// no other file in dir is touched. Each page is written atomically.
func Markdown(root *cobra.Command, dir string) error {
	prepare(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".cmddoc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := doc.GenMarkdownTree(root, tmp); err != nil {
		return fmt.Errorf("markdown pages: %w", err)
	}
	fresh, err := pages(root, tmp)
	if err != nil {
		return err
	}
	old, err := pages(root, dir)
	if err != nil {
		return err
	}
	for _, p := range old {
		if !slices.Contains(fresh, p) {
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				return err
			}
		}
	}
	for _, p := range fresh {
		if err := os.Rename(filepath.Join(tmp, p), filepath.Join(dir, p)); err != nil {
			return err
		}
	}
	return nil
}

// Man writes a man page per command of root's tree into dir, in section
// 1 (ftpatch.1, ftpatch-runtime-build.1), with source in the footer. The
// date in the header is SOURCE_DATE_EPOCH's where it is set (as cobra
// does), so a build can make the pages reproducible.
func Man(root *cobra.Command, dir, source string) error {
	prepare(root)
	visit(root, func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				// The flags' text is Markdown to the man page generator
				// (Markdown pages show it in a code block, as --help
				// does), less the quotes around a value's name, as in
				// --help.
				if f.Annotations["cmddoc"] == nil {
					_, u := pflag.UnquoteUsage(f)
					f.Usage = escape(u)
					if f.Annotations == nil {
						f.Annotations = map[string][]string{}
					}
					f.Annotations["cmddoc"] = []string{"escaped"}
				}
			})
		}
	})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := doc.GenManTree(root, &doc.GenManHeader{Section: "1", Source: source, Manual: root.Name() + " manual"}, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}

// Diff compares the Markdown pages root's tree makes with those of
// root's name in dir (the checked-in ones): one line for each page that
// differs, is missing or belongs to no command, naming the file; none
// when dir is up to date.
func Diff(root *cobra.Command, dir string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "cmddoc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := Markdown(root, tmp); err != nil {
		return nil, err
	}
	fresh, err := pages(root, tmp)
	if err != nil {
		return nil, err
	}
	old, err := pages(root, dir)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for _, p := range fresh {
		want, _ := os.ReadFile(filepath.Join(tmp, p))
		got, err := os.ReadFile(filepath.Join(dir, p))
		switch {
		case errors.Is(err, os.ErrNotExist):
			diffs = append(diffs, fmt.Sprintf("%s: missing (the page of %q)", filepath.Join(dir, p), strings.ReplaceAll(strings.TrimSuffix(p, ".md"), "_", " ")))
		case err != nil:
			return nil, err
		case !bytes.Equal(got, want):
			diffs = append(diffs, fmt.Sprintf("%s: stale (%s)", filepath.Join(dir, p), firstDiff(got, want)))
		}
	}
	for _, p := range old {
		if !slices.Contains(fresh, p) {
			diffs = append(diffs, fmt.Sprintf("%s: no command has this page", filepath.Join(dir, p)))
		}
	}
	return diffs, nil
}

// firstDiff says where got first differs from want, by line.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d is %q, the command says %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, the command makes %d", len(g), len(w))
}

// pages lists the Markdown pages of root's name in dir: root.md and
// root_*.md, sorted.
func pages(root *cobra.Command, dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() && (n == root.Name()+".md" || strings.HasPrefix(n, root.Name()+"_") && strings.HasSuffix(n, ".md")) {
			out = append(out, n)
		}
	}
	return out, nil
}

// prepare readies root's tree for the generator, once: cobra's
// completion command added, no date line (cobra's auto-generated tag),
// and the help's text as Markdown.
func prepare(root *cobra.Command) {
	if root.Annotations["cmddoc"] != "" {
		return
	}
	// The completion command cobra adds when the tree runs: its pages
	// too, whether the tree has run or not.
	root.InitDefaultCompletionCmd()
	visit(root, func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		c.Short = escape(c.Short)
		c.Long = markdown(c.Long)
	})
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations["cmddoc"] = "prepared"
}

// visit calls f on c and every command under it.
func visit(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, s := range c.Commands() {
		visit(s, f)
	}
}

// markdown turns help text into Markdown that reads the same: runs of
// indented lines (with the blank lines between them) become fenced code
// blocks, kept as they are; every other line is escaped.
func markdown(text string) string {
	lines := strings.Split(text, "\n")
	indented := func(l string) bool { return strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") }
	var b strings.Builder
	for i := 0; i < len(lines); {
		if !indented(lines[i]) {
			b.WriteString(escape(lines[i]))
			b.WriteString("\n")
			i++
			continue
		}
		// A block runs to the last indented line before a plain one.
		j := i
		for k := i; k < len(lines) && (indented(lines[k]) || strings.TrimSpace(lines[k]) == ""); k++ {
			if indented(lines[k]) {
				j = k + 1
			}
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n") {
			b.WriteString("\n")
		}
		b.WriteString("```\n")
		for _, l := range lines[i:j] {
			b.WriteString(strings.TrimRight(l, " \t"))
			b.WriteString("\n")
		}
		b.WriteString("```\n")
		if j < len(lines) && strings.TrimSpace(lines[j]) != "" {
			b.WriteString("\n")
		}
		i = j
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// escape backslash-escapes the characters Markdown (CommonMark, GitHub's,
// and the man page generator's) could take for markup.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>#~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
