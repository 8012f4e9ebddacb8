package runtime

import (
	"bytes"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxLines is the most lines a runtime source file may have: past it a
// file holds more than one job, and the runtime splits it by job
// (src/record/tracer.h and src/patch/pass.h say which file does what).
const maxLines = 600

// TestSourcesShort: every C, header and assembly file of the runtime
// and the module stub is at most maxLines lines long.
func TestSourcesShort(t *testing.T) {
	n := 0
	err := fs.WalkDir(sources, "src", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch path.Ext(p) {
		case ".c", ".h", ".S":
		default:
			return nil
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if lines := bytes.Count(b, []byte("\n")); lines > maxLines {
			t.Errorf("%s: %d lines, more than %d: split it by job", p, lines, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no runtime source found under src")
	}
}

// TestNoCallsUp: the files below others in the runtime reach what is
// above them only through what they are given (lifetime.c gives it), so
// the runtime's files call one another without a circle.
func TestNoCallsUp(t *testing.T) {
	for _, c := range []struct {
		file  string
		never []string // functions of files above it
	}{
		{"src/core/registry.c", []string{"ftrt_init", "ftrt_pass", "ftrt_trace_meta_update"}},
		{"src/record/trace.c", []string{"ftrt_exit_watch"}},
	} {
		b, err := sources.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range c.never {
			if bytes.Contains(b, []byte(name+"(")) {
				t.Errorf("%s calls %s, a function of a file above it: take it as a call given (ftrt_modules_wire, ftrt_trace_arm)", c.file, name)
			}
		}
	}
}

// include is a quoted #include line: the header's name as written.
var include = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]+"([^"]*)"`)

// TestIncludesFromSrc: every quoted #include of the runtime and the
// module stub names a header beside the including file by its name, and
// any other by its path from src/ (includeFlags), never climbing with
// "..": so an include line says which folder, and so which layer, it
// reaches, and reads the same wherever the file moves.
func TestIncludesFromSrc(t *testing.T) {
	n := 0
	err := fs.WalkDir(sources, "src", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range include.FindAllSubmatch(b, -1) {
			name := string(m[1])
			n++
			if slices.Contains(strings.Split(name, "/"), "..") {
				t.Errorf("%s: #include %q climbs out of its folder: name it by its path from src/", p, name)
				continue
			}
			beside := !strings.Contains(name, "/") && exists(path.Join(path.Dir(p), name))
			if !beside && !exists(path.Join("src", name)) {
				t.Errorf("%s: #include %q is neither beside it nor a path from src/", p, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no #include found under src")
	}
}

// exists says whether the embedded sources hold the file p.
func exists(p string) bool {
	_, err := fs.Stat(sources, p)
	return err == nil
}
