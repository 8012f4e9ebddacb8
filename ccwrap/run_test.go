package ccwrap

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/launch"
	ftrt "ftpatch/runtime"
)

// runLog is a Wrapper whose commands are recorded, not run: each as one
// line, a response file's arguments read back in its place, the
// temporary directory written TMP. fail makes a command whose line
// matches exit with status 1.
type runLog struct {
	lines []string
	fail  *regexp.Regexp
}

func (l *runLog) exec(argv []string) (launch.Status, error) {
	var args []string
	for _, a := range argv {
		if strings.HasPrefix(a, "@") {
			b, err := os.ReadFile(a[1:])
			if err != nil {
				return launch.Status{}, err
			}
			args = append(args, "@{")
			args = append(args, SplitResponse(string(b))...)
			args = append(args, "}")
			continue
		}
		args = append(args, a)
	}
	line := regexp.MustCompile(`/[^ ]*/ftpatch-cc-[0-9]+`).ReplaceAllString(strings.Join(args, " "), "TMP")
	l.lines = append(l.lines, line)
	if l.fail != nil && l.fail.MatchString(line) {
		return launch.Exited(1), nil
	}
	return launch.Exited(0), nil
}

// TestRunCommands: what the wrapper runs for each kind of command: the
// compile flags first in a compile; the runtime (or the module stub)
// last in a link; a compile-and-link split into compiles of their own,
// without the link's options, and a link of their objects; link-time
// optimisation and gcc's -fomit-frame-pointer dropped; response files
// kept as response files; everything else unchanged.
func TestRunCommands(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is not installed: apt-get install gcc")
	}
	lib, err := ftrt.Cached(context.Background(), ftrt.Options{CC: []string{"gcc"}, Arch: arch.X86_64})
	if err != nil {
		t.Fatal(err)
	}
	rt := strings.Join(ftrt.LinkFlags(lib.Archive), " ")
	mod := strings.Join(ftrt.ModuleLinkFlags(lib.Archive), " ")
	cf := strings.Join(ftrt.CFlags(arch.X86_64), " ") + " -idirafter " + lib.Include
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "objs.rsp"), []byte("a.o 'b c.o'\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "flags.rsp"), []byte("-flto -O2\n"), 0o644)
	t.Chdir(dir)
	for _, tc := range []struct {
		name, args string
		fail       string
		want       []string
	}{
		{"query", "--version", "", []string{"gcc --version"}},
		{"preprocess", "-E -flto a.c", "", []string{"gcc -E -flto a.c"}},
		{"assembler", "-c a.s -o a.o", "", []string{"gcc -c a.s -o a.o"}},
		{"compile", "-O2 -c a.c -o a.o", "", []string{"gcc " + cf + " -O2 -c a.c -o a.o"}},
		{"compile drops lto and omit-frame-pointer", "-O2 -flto=auto -ffat-lto-objects -fomit-frame-pointer -c a.c", "",
			[]string{"gcc " + cf + " -O2 -c a.c"}},
		{"link", "-o prog a.o b.o -lm", "", []string{"gcc -o prog a.o b.o -lm " + rt}},
		{"link shared", "-shared -o libx.so a.o", "", []string{"gcc -shared -o libx.so a.o " + mod}},
		{"link C++ shared -nostdlib", "-shared -nostdlib crti.o a.o -lstdc++ -o libx.so", "", []string{"gcc -shared -nostdlib crti.o a.o -lstdc++ -o libx.so " + mod}},
		{"partial link", "-r a.o b.o -o ab.o", "", []string{"gcc -r a.o b.o -o ab.o"}},
		{"program -nostdlib", "-nostdlib -static start.o -o x", "", []string{"gcc -nostdlib -static start.o -o x"}},
		{"link drops lto", "-flto -O2 a.o -o prog", "", []string{"gcc -O2 a.o -o prog " + rt}},
		{"compile and link", "-O2 -Wa,--noexecstack -I inc a.o -x c b.txt -x none c.c -L lib -lm -Wl,-z,now -o prog", "", []string{
			"gcc " + cf + " -O2 -Wa,--noexecstack -I inc -x c -c b.txt -o TMP/0-b.o",
			"gcc " + cf + " -O2 -Wa,--noexecstack -I inc -c c.c -o TMP/1-c.o",
			"gcc -O2 -I inc a.o TMP/0-b.o TMP/1-c.o -L lib -lm -Wl,-z,now -o prog " + rt}},
		{"compile and link, dependency file", "-MD a.c -o prog", "", []string{
			"gcc " + cf + " -MD -c a.c -o TMP/0-a.o -MF a.d -MQ a.o",
			"gcc TMP/0-a.o -o prog " + rt}},
		{"compile and link, failed compile", "a.c b.c -o prog", "b.c", []string{
			"gcc " + cf + " -c a.c -o TMP/0-a.o",
			"gcc " + cf + " -c b.c -o TMP/1-b.o"}},
		{"compile and link a shared object", "-shared -fPIC x.c -o libx.so", "", []string{
			"gcc " + cf + " -fPIC -c x.c -o TMP/0-x.o",
			"gcc -shared -fPIC TMP/0-x.o -o libx.so " + mod}},
		{"response file, link", "@objs.rsp -o prog", "", []string{"gcc @{ a.o b c.o -o prog " + rt + " }"}},
		{"response file, compile", "@flags.rsp -c a.c", "", []string{"gcc @{ " + cf + " -O2 -c a.c }"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &runLog{}
			if tc.fail != "" {
				l.fail = regexp.MustCompile(regexp.QuoteMeta(tc.fail))
			}
			w := &Wrapper{Compiler: []string{"gcc"}, Stderr: io.Discard, Exec: l.exec}
			st, err := w.Run(context.Background(), strings.Fields(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if !slices.Equal(l.lines, want) {
				t.Errorf("ran\n  %s\nwant\n  %s", strings.Join(l.lines, "\n  "), strings.Join(want, "\n  "))
			}
			if st.Success() != (tc.fail == "") {
				t.Errorf("status %v", st)
			}
		})
	}
}

// TestRunObjects: a compile run for real writes objects with their site
// table; an object the pass cannot read (here a compiler that writes a
// cut-off one) is removed, not left without its table, and the command
// fails saying why.
func TestRunObjects(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is not installed: apt-get install gcc")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("a.c", []byte("int f(int x) { return x + 1; }\n"), 0o644)
	os.WriteFile("b.c", []byte("int g(int x) { return x * 2; }\n"), 0o644)
	w := &Wrapper{Compiler: []string{"gcc"}, Stderr: io.Discard}
	st, err := w.Run(context.Background(), []string{"-O2", "-c", "a.c", "b.c"})
	if err != nil || !st.Success() {
		t.Fatalf("compile: %v, %v", st, err)
	}
	for _, obj := range []string{"a.o", "b.o"} {
		if out, err := exec.Command("readelf", "-S", obj).Output(); err != nil || !strings.Contains(string(out), "__mcount_loc") {
			t.Errorf("%s: no __mcount_loc (%v)", obj, err)
		}
	}
	// An ELF header of an x86-64 relocatable object whose section
	// headers lie past its end.
	cut := make([]byte, 64)
	copy(cut, "\x7fELF\x02\x01\x01")
	cut[16], cut[18], cut[20] = 1, 62, 1    // ET_REL, EM_X86_64, EV_CURRENT
	cut[40], cut[58], cut[60] = 0xff, 64, 8 // e_shoff 255, e_shentsize 64, e_shnum 8
	w.Exec = func(argv []string) (launch.Status, error) {
		return launch.Exited(0), os.WriteFile("a.o", cut, 0o644)
	}
	_, err = w.Run(context.Background(), []string{"-O2", "-c", "a.c"})
	if err == nil || !strings.Contains(err.Error(), "a.o") || !strings.Contains(err.Error(), "removed") {
		t.Errorf("a compile whose object the pass fails on: %v", err)
	}
	if _, err := os.Stat("a.o"); err == nil {
		t.Error("the object the pass failed on is still there")
	}
}

// TestSameFile: a command whose output is one of its inputs is refused
// before anything runs, whatever names the file goes by (a link either
// way, a hard link, ./ and ../ paths), and so is one whose objects (which
// the object pass rewrites), response file or a.out would be an input;
// different files, and a device as input and output, are not.
func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, f := range []string{"f.c", "a.c", "a.o", "a.out", "args.rsp"} {
		if err := os.WriteFile(f, []byte("int x;\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile("args.rsp", []byte("f.c -o args.rsp\n"), 0o644)
	os.Symlink("f.c", "l.c")
	os.Link("f.c", "h.c")
	os.Mkdir("sub", 0o755)
	for _, c := range []struct {
		args string
		same string // in the error; "" for none
	}{
		{"f.c -o f.c", "input file f.c is the same as output file"},
		{"-O2 -c f.c -o f.c", "input file f.c is the same as output file"},
		{"f.c -o ./f.c", "input file f.c is the same as output file ./f.c"},
		{"f.c -o sub/../f.c", "output file sub/../f.c"},
		{"f.c -o ../" + filepath.Base(dir) + "/f.c", "output file ../"},
		{"l.c -o f.c", "input file l.c is the same as output file f.c"},
		{"f.c -o l.c", "input file f.c is the same as output file l.c"},
		{"h.c -o f.c", "input file h.c is the same as output file f.c"},
		{"x.c -of.c f.c", "input file f.c is the same as output file"},
		{"-c a.c a.o", "input file a.o is the same as output file"},
		{"f.c a.out", "input file a.out is the same as output file"},
		{"@args.rsp", "input file @args.rsp is the same as output file args.rsp"},
		{"f.c -o prog", ""},
		{"-c f.c -o sub/f.o", ""},
		{"-x c -c /dev/null -o /dev/null", ""},
		{"-E f.c -o -", ""},
	} {
		t.Run(c.args, func(t *testing.T) {
			ran := false
			w := &Wrapper{Compiler: []string{"gcc"}, Stderr: io.Discard, Exec: func([]string) (launch.Status, error) {
				ran = true
				return launch.Exited(0), nil
			}}
			cmd, err := Parse(strings.Fields(c.args), ReadResponse)
			if err != nil {
				t.Fatal(err)
			}
			err = cmd.checkOutputs()
			if c.same == "" {
				if err != nil {
					t.Errorf("%v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrSameFile) || !strings.Contains(err.Error(), c.same) {
				t.Errorf("%v; want ErrSameFile saying %q", err, c.same)
			}
			if _, err := w.Run(context.Background(), strings.Fields(c.args)); !errors.Is(err, ErrSameFile) || ran {
				t.Errorf("Run: %v, compiler run %v; want ErrSameFile and nothing run", err, ran)
			}
			if b, _ := os.ReadFile("f.c"); string(b) != "int x;\n" {
				t.Errorf("f.c now holds %q", b)
			}
		})
	}
}
