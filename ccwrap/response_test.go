package ccwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSplitResponseGCC: response files read as gcc reads them, checked
// against the installed gcc (-###, whose COLLECT_GCC_OPTIONS lists the
// options it read): quotes, backslashes in and out of them, one at the
// very end, a newline escaped, every kind of white space, a quote left
// open, text after a NUL byte, nested files. Every argument is a -D, so
// that gcc reports each one back.
func TestSplitResponseGCC(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is not installed: apt-get install gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "f.c")
	os.WriteFile(src, []byte("int x;\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "inner.rsp"), []byte("-DINNER='a b'"), 0o644)
	for _, text := range []string{
		`-DA='x\'y' -DB='x"y'`,
		`-DA="x\y" -DB="x\"y" -DC="x\\y" -DD="a$b"`,
		"-DA=a\\\nb -DB='a\nb' -DC=\"a\\\nb\"",
		`-DA=x\ y -DB=\'q -DC=\"`,
		`-DA=x -DB=\`,
		"-DA=1\t-DB=2\r\n-DC=3\f-DD=4\v-DE=5\n\n",
		`"-DA=unterminated`,
		`'-DA=unterminated too`,
		`-DA='' -DB="" -DC=x''y""z`,
		"-DA=1\x00-DB=2",
		"-DA=1 @" + filepath.Join(dir, "inner.rsp") + " -DC=3",
	} {
		t.Run(fmt.Sprintf("%q", text), func(t *testing.T) {
			rsp := filepath.Join(dir, "args.rsp")
			if err := os.WriteFile(rsp, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("gcc", "-###", "-E", "@"+rsp, src).CombinedOutput()
			if err != nil {
				t.Fatalf("gcc -###: %v\n%s", err, out)
			}
			var want []string
			opts := collectOptions(t, string(out))
			for i := 0; i+1 < len(opts); i++ {
				if opts[i] == "-D" {
					want = append(want, "-D"+opts[i+1])
				}
			}
			c, err := Parse([]string{"@" + rsp}, ReadResponse)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Args, want) {
				t.Errorf("read %q\ngcc read %q", c.Args, want)
			}
		})
	}
}

// collectOptions reads the options of the COLLECT_GCC_OPTIONS line of
// gcc -### output: each in single quotes, a quote in one written '\”.
func collectOptions(t *testing.T, out string) []string {
	t.Helper()
	const key = "COLLECT_GCC_OPTIONS="
	i := strings.Index(out, key)
	if i < 0 {
		t.Fatalf("no %s in gcc's output:\n%s", key, out)
	}
	s := out[i+len(key):]
	var opts []string
	var cur strings.Builder
	in, started := false, false
	for j := 0; j < len(s); j++ {
		switch ch := s[j]; {
		case ch == '\'':
			in, started = !in, true
		case ch == '\\' && !in && j+1 < len(s):
			j++
			cur.WriteByte(s[j])
		case (ch == ' ' || ch == '\n') && !in:
			if started {
				opts = append(opts, cur.String())
				cur.Reset()
				started = false
			}
			if ch == '\n' {
				return opts
			}
		default:
			cur.WriteByte(ch)
		}
	}
	return opts
}

// TestReadResponse: what is a response file and what is not, as gcc
// takes them, and nothing blocks: /dev/zero is empty (gcc seeks its end
// and finds 0), a FIFO no one writes is refused at once (gcc would wait
// for a writer, then take the argument for a file name), a directory is
// an error, a missing file or a socket is no response file (the argument
// stays), and a file past the bytes left to read is an error.
func TestReadResponse(t *testing.T) {
	dir := t.TempDir()
	rsp := filepath.Join(dir, "a.rsp")
	os.WriteFile(rsp, []byte("-O2 -c"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		name  string
		max   int64
		want  string
		fatal string // in an error wrapping ErrResponse; "" for none
		other bool   // another error: not a response file
	}{
		{name: rsp, max: 100, want: "-O2 -c"},
		{name: rsp, max: 3, fatal: "6 bytes, past the bytes left"},
		{name: "/dev/zero", max: 100},
		{name: "/dev/null", max: 100},
		{name: fifo, max: 100, fatal: "a FIFO"},
		{name: dir, max: 100, fatal: "@-file refers to a directory"},
		{name: filepath.Join(dir, "missing"), max: 100, other: true},
		{name: sock, max: 100, other: true},
	} {
		t.Run(filepath.Base(c.name), func(t *testing.T) {
			type result struct {
				b   []byte
				err error
			}
			done := make(chan result, 1)
			go func() {
				b, err := ReadResponse(c.name, c.max)
				done <- result{b, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("ReadResponse(%s) still runs after 10 s", c.name)
			}
			switch {
			case c.fatal != "":
				if !errors.Is(r.err, ErrResponse) || !strings.Contains(r.err.Error(), c.fatal) {
					t.Errorf("%q, %v; want an error saying %q", r.b, r.err, c.fatal)
				}
			case c.other:
				if r.err == nil || errors.Is(r.err, ErrResponse) {
					t.Errorf("%q, %v; want it taken for no response file", r.b, r.err)
				}
			default:
				if r.err != nil || string(r.b) != c.want {
					t.Errorf("%q, %v; want %q", r.b, r.err, c.want)
				}
			}
		})
	}
}

// TestExpandBounds: gcc's bound on @ arguments (the 2000th, readable or
// not, is an error: a file naming itself ends there) and the wrapper's
// on the bytes and the arguments of a command's response files, which a
// file named many times (each small) or one of many short arguments
// would pass.
func TestExpandBounds(t *testing.T) {
	files := map[string]string{
		"self":  "@self",
		"big":   strings.Repeat("x", 600),
		"many":  strings.Repeat("@big ", 10),
		"short": strings.Repeat("a ", 300),
	}
	read := func(name string, max int64) ([]byte, error) {
		s, ok := files[name]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
	missing := func(n int) []string {
		var a []string
		for range n {
			a = append(a, "@missing")
		}
		return a
	}
	small := bounds{bytes: 5000, args: 500}
	for _, c := range []struct {
		name string
		args []string
		err  string // "" for none
	}{
		{"names itself", []string{"@self"}, "too many @-files encountered (2000"},
		{"1999 unreadable", missing(1999), ""},
		{"2000 unreadable", missing(2000), "too many @-files encountered"},
		{"bytes", []string{"@many"}, "past the 5000 bytes"},
		{"arguments", []string{"@short", "@short"}, "more than 500 arguments"},
		{"within", []string{"@big", "@short"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := small
			if c.name == "names itself" {
				b = bounds{maxResponseBytes, maxArgs}
			}
			out, _, err := expandWithin(c.args, read, b)
			if c.err == "" {
				if err != nil {
					t.Errorf("%v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrResponse) || !strings.Contains(err.Error(), c.err) || out != nil {
				t.Errorf("%d arguments, %v; want an error saying %q", len(out), err, c.err)
			}
		})
	}
}

// TestExpandSplitsWithinBound: a response file of more one-letter
// arguments than the bound is refused after splitting no more of it than
// the bound: split whole first, a file at the bytes' bound (64 MiB) took
// a minute and 2 GB to be refused.
func TestExpandSplitsWithinBound(t *testing.T) {
	data := []byte(strings.Repeat("a ", 1<<19)) // 512 Ki arguments
	read := func(string, int64) ([]byte, error) { return data, nil }
	b := bounds{bytes: int64(len(data)), args: 100}
	var err error
	allocs := testing.AllocsPerRun(1, func() { _, _, err = expandWithin([]string{"-c", "@many"}, read, b) })
	if !errors.Is(err, ErrResponse) || !strings.Contains(err.Error(), "more than 100 arguments") {
		t.Errorf("%v; want an error saying there are more than 100 arguments", err)
	}
	if allocs > 1000 {
		t.Errorf("%v allocations, for a bound of 100 arguments", allocs)
	}
}
