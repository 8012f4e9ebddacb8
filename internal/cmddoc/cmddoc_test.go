package cmddoc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestMarkdown: help text reads the same as Markdown: indented lines
// become code blocks (blank lines inside kept, blank lines put around),
// and the rest is escaped wherever Markdown would see markup.
func TestMarkdown(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain", "lists the sites,\nand changes nothing.", "lists the sites,\nand changes nothing."},
		{"markup escaped", "reads __mcount_loc; 'lzma_*' and *.o; <pid>-<tid>; [x] #1 ~/.cache `q`",
			`reads \_\_mcount\_loc; 'lzma\_\*' and \*.o; \<pid\>-\<tid\>; \[x\] \#1 \~/.cache ` + "\\`q\\`"},
		{"indented block", "so\n\n  cc -c a.c\n  recordmcount a.o\n\nneeds nothing.",
			"so\n\n```\n  cc -c a.c\n  recordmcount a.o\n```\n\nneeds nothing."},
		{"block between lines", "One line per site:\n  ADDRESS   where\n\n  KIND      how\nA last line.",
			"One line per site:\n\n```\n  ADDRESS   where\n\n  KIND      how\n```\n\nA last line."},
		{"block not escaped", "x\n  a_b *c*", "x\n\n```\n  a_b *c*\n```"},
		{"block at the end, trailing blank", "x\n  y\n", "x\n\n```\n  y\n```\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := markdown(c.in); got != c.want {
				t.Errorf("markdown(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

// tree is a small command tree: root, root sub, root sub leaf.
func tree(short string) *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool", Long: "tool does\n  things_a\nand_b.", Run: func(*cobra.Command, []string) {}}
	sub := &cobra.Command{Use: "sub", Short: short, Run: func(*cobra.Command, []string) {}}
	sub.AddCommand(&cobra.Command{Use: "leaf", Short: "A leaf", Run: func(*cobra.Command, []string) {}})
	root.AddCommand(sub)
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}

// TestPages: Markdown writes a page per command with no date line,
// removes the pages of its commands that are gone and no other file;
// Diff names each page that differs, is missing or is no command's.
func TestPages(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tool_old.md"), []byte("gone"), 0o644)
	os.WriteFile(filepath.Join(dir, "other.md"), []byte("kept"), 0o644)
	if err := Markdown(tree("A sub"), dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"other.md", "tool.md", "tool_sub.md", "tool_sub_leaf.md"}; !slices.Equal(names, want) {
		t.Errorf("Markdown wrote %v, want %v", names, want)
	}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		if strings.Contains(string(b), "Auto generated") {
			t.Errorf("%s has cobra's date line:\n%s", n, b)
		}
	}
	if diffs, err := Diff(tree("A sub"), dir); err != nil || len(diffs) != 0 {
		t.Errorf("Diff of fresh pages: %v, %q", err, diffs)
	}
	os.Remove(filepath.Join(dir, "tool_sub_leaf.md"))
	os.WriteFile(filepath.Join(dir, "tool_extra.md"), nil, 0o644)
	diffs, err := Diff(tree("Another sub"), dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		filepath.Join(dir, "tool.md") + ": stale (line ",
		filepath.Join(dir, "tool_sub.md") + ": stale (line 3 is \"A sub\", the command says \"Another sub\")",
		filepath.Join(dir, "tool_sub_leaf.md") + `: missing (the page of "tool sub leaf")`,
		filepath.Join(dir, "tool_extra.md") + ": no command has this page",
	} {
		if i >= len(diffs) || !strings.HasPrefix(diffs[i], want) {
			t.Errorf("Diff: %q, want [%d] to begin %q", diffs, i, want)
		}
	}
}

// TestMan: a man page per command, the text as Markdown renders it for
// man (escapes gone, the indented block kept as it is), the source in
// the footer.
func TestMan(t *testing.T) {
	dir := t.TempDir()
	if err := Man(tree("A sub"), dir, "tool 1.0"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tool.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`.TH "TOOL" "1"`, `"tool 1.0" "tool manual"`, "things_a", "and_b"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("tool.1 does not say %q:\n%s", want, b)
		}
	}
	for _, n := range []string{"tool-sub.1", "tool-sub-leaf.1"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Error(err)
		}
	}
}
