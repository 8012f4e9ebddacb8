package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/bounded"
	"ftpatch/internal/fixture"
	"ftpatch/internal/sitetest"
	"ftpatch/internal/special"
	"ftpatch/internal/untouched"
	"ftpatch/record"
	"ftpatch/sites"
)

// An outcome is what one run of recordmcount did.
type outcome struct {
	stdout, stderr string
	failed         bool // in-process: Execute returned an error (main exits 1)
	code           int  // exec'd: the exit status; -1 in-process
}

// A runner runs recordmcount with args, in-process or as a process.
type runner func(t *testing.T, args ...string) outcome

// inProcess runs the command the way main does, with its own output
// buffers.
func inProcess(t *testing.T, args ...string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := newCommand(&stdout, &stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return outcome{stdout.String(), stderr.String(), err != nil, -1}
}

// specials are the bad inputs the file system makes rather than files of
// testdata/bad: the special files, and a file that is not there.
var specials = append(slices.Clone(special.Files), special.File{
	Name: "missing",
	Make: func(t testing.TB, path string) string { return path },
	Want: "no such file or directory",
})

// makeSpecial makes c as dir/<name>.o and returns the path to pass.
func makeSpecial(t *testing.T, c special.File, dir string) string {
	t.Helper()
	return c.Make(t, filepath.Join(dir, c.Name+".o"))
}

// corpusFiles lists testdata/bad, failing if it is empty or holds a file
// no case describes.
func corpusFiles(t *testing.T) []badCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(badDir, "*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus under %s (%v): run go test -run '^TestCorpusUpToDate$' -regen", badDir, err)
	}
	var out []badCase
	for _, p := range paths {
		i := slices.IndexFunc(corpus, func(c badCase) bool { return c.name == filepath.Base(p) })
		if i < 0 {
			t.Errorf("%s: no case in the corpus table says what recordmcount must report", p)
			continue
		}
		out = append(out, corpus[i])
	}
	return out
}

// TestBadInputs runs recordmcount in-process on every bad input, in place
// and with -o: one error line naming the file and the problem, failure,
// and the input and its directory left exactly as they were.
func TestBadInputs(t *testing.T) {
	for _, c := range corpusFiles(t) {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(badDir, c.name))
			if err != nil {
				t.Fatal(err)
			}
			// A panic in record.Files' worker goroutine cannot be
			// recovered and would end this whole test binary; a loop
			// that allocates without end would take the machine with
			// it. So the pass first runs on the file in a child
			// process, with a time and memory limit; TestBinary still
			// runs the command itself on every file.
			if crash := probe(t, data); crash != "" {
				t.Fatalf("BUG: record.Rewrite on %s does not return: %s", c.name, crash)
			}
			for _, mode := range []string{"in-place", "nop", "output", "list"} {
				t.Run(mode, func(t *testing.T) {
					dir := t.TempDir()
					p := copyInto(t, dir, filepath.Join(badDir, c.name), c.name)
					checkBad(t, inProcess, mode, dir, p, c.want)
				})
			}
		})
	}
	for _, c := range specials {
		if c.Hazard {
			continue // TestBinary runs it under limits
		}
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			p := makeSpecial(t, c, dir)
			checkBad(t, inProcess, "in-place", dir, p, c.Want)
		})
	}
}

// probeEnv names the file a child test process runs the pass on; see
// TestMain.
const probeEnv = "RECORDMCOUNT_TEST_PROBE"

// TestMain makes the test binary, started by probe with probeEnv set, run
// record.Rewrite (with and without --nop) on one file and exit: 0 when
// the pass returned, whatever it returned.
func TestMain(m *testing.M) {
	if p := os.Getenv(probeEnv); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		record.Rewrite(p, data, record.Options{})
		record.Rewrite(p, data, record.Options{Nop: true})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// probe runs record.Rewrite on data in a child process under limits and
// returns how it failed to return (a panic, running out of memory or
// time), or "" when it returned.
func probe(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "probe.o")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := limits.Command(t, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), probeEnv+"="+p)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return ""
	}
	first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
	if cmd.ProcessState != nil && !cmd.ProcessState.Exited() {
		return fmt.Sprintf("killed after %v (%v): %s", limits.Time, err, first)
	}
	return fmt.Sprintf("%v: %s", err, first)
}

// limits bound a child process, so a bug that loops or allocates without
// end fails one test instead of hanging the run or exhausting memory.
var limits = bounded.Limits{Time: 20 * time.Second, Mem: 4 << 20}

// checkBad runs recordmcount on the bad input p in dir and checks the run
// failed with one error line naming p and containing want, and changed
// nothing on disk.
func checkBad(t *testing.T, run runner, mode, dir, p, want string) {
	t.Helper()
	before := untouched.TakeTree(t, dir)
	var args []string
	out := filepath.Join(t.TempDir(), "out.o")
	switch mode {
	case "in-place":
		args = []string{p}
	case "nop":
		args = []string{"--nop", p}
	case "output":
		args = []string{"-o", out, p}
	case "list":
		args = []string{"--list", p}
	}
	o := run(t, args...)
	if !o.failed {
		t.Errorf("recordmcount %s: succeeded, want failure", strings.Join(args, " "))
	}
	if o.code >= 0 && o.code != 1 {
		t.Errorf("recordmcount %s: exit status %d, want 1", strings.Join(args, " "), o.code)
	}
	switch mode {
	case "list":
		// The table header, and no site.
		if n := strings.Count(o.stdout, "\n"); n != 1 || !strings.HasPrefix(o.stdout, "OBJECT") {
			t.Errorf("--list stdout = %q, want only the header", o.stdout)
		}
	default:
		if o.stdout != "" {
			t.Errorf("stdout = %q, want nothing", o.stdout)
		}
	}
	checkErrLine(t, o.stderr, p, want)
	before.Check(t, "the input's directory changed")
	if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("-o %s: output written for a failed input (stat: %v)", out, err)
	}
}

// checkErrLine checks stderr is exactly one line "recordmcount: ..." that
// names path and contains want.
func checkErrLine(t *testing.T, stderr, path, want string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		lines := strings.SplitAfter(stderr, "\n")
		t.Errorf("stderr is %d lines, want exactly one:\n%s", len(lines)-1, strings.Join(lines[:min(len(lines), 8)], ""))
	}
	line, _, _ := strings.Cut(stderr, "\n")
	if !strings.HasPrefix(line, "recordmcount: ") {
		t.Errorf("error line %q does not start with %q", line, "recordmcount: ")
	}
	if !strings.Contains(line, path) {
		t.Errorf("error line %q does not name the file %s", line, path)
	}
	if !strings.Contains(line, want) {
		t.Errorf("error line %q does not say %q", line, want)
	}
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.Geteuid() != 0 && errors.Is(err, fs.ErrPermission) {
			return "unreadable"
		}
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// copyInto copies src to dir/name and returns the new path.
func copyInto(t *testing.T, dir, src, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkRecorded checks that path is a valid object with a recordmcount
// table listing n sites.
func checkRecorded(t *testing.T, path string, n int) {
	t.Helper()
	_, obj := sitetest.Object(t, path)
	if obj.Table != sites.TableOurs || len(obj.Sites) != n {
		t.Errorf("%s: table %v with %d sites, want %v with %d", path, obj.Table, len(obj.Sites), sites.TableOurs, n)
	}
}

// goodSites is how many functions good.c has: hook and work (add is
// inlined).
const goodSites = 2

// TestGoodObject: a good object is rewritten in place with its mode kept
// and nothing said; a second run leaves it alone and says so.
func TestGoodObject(t *testing.T) {
	dir := t.TempDir()
	p := copyInto(t, dir, goodObj, "good.o")
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	orig := sha256File(t, p)

	o := inProcess(t, p)
	if o.failed || o.stdout != "" || o.stderr != "" {
		t.Fatalf("first run: failed %v, stdout %q, stderr %q", o.failed, o.stdout, o.stderr)
	}
	if sha256File(t, p) == orig {
		t.Fatal("first run left the object unchanged")
	}
	checkRecorded(t, p, goodSites)
	want := untouched.TakeTree(t, dir)
	ents, _ := os.ReadDir(dir)
	var mode os.FileMode
	if fi, err := os.Stat(p); err == nil {
		mode = fi.Mode()
	}
	if len(ents) != 1 || mode != 0o751 {
		t.Errorf("after the first run the directory holds %d entries, good.o with mode %v; want good.o alone, mode -rwxr-x--x", len(ents), mode)
	}
	b, _ := os.ReadFile(p)
	if r, _ := os.ReadFile(recordedObj); !bytes.Equal(b, r) {
		t.Errorf("output differs from %s (run go test -run '^TestCorpusUpToDate$' -regen if record changed on purpose)", recordedObj)
	}

	o = inProcess(t, p)
	if o.failed || o.stdout != "" {
		t.Fatalf("second run: failed %v, stdout %q", o.failed, o.stdout)
	}
	if strings.Count(o.stderr, "\n") != 1 || !strings.Contains(o.stderr, p) || !strings.Contains(o.stderr, "unchanged") {
		t.Errorf("second run: stderr %q, want one line naming %s and saying it is unchanged", o.stderr, p)
	}
	want.Check(t, "second run changed the directory")
}

// TestOutputFlag: -o writes the result to OUT with the input's mode and
// leaves the input alone; with nothing to change OUT is a copy.
func TestOutputFlag(t *testing.T) {
	for _, src := range []string{goodObj, recordedObj} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			in := t.TempDir()
			p := copyInto(t, in, src, "in.o")
			if err := os.Chmod(p, 0o640); err != nil {
				t.Fatal(err)
			}
			before := untouched.TakeTree(t, in)
			outDir := t.TempDir()
			out := filepath.Join(outDir, "out.o")
			o := inProcess(t, "-o", out, p)
			if o.failed || o.stdout != "" {
				t.Fatalf("failed %v, stdout %q, stderr %q", o.failed, o.stdout, o.stderr)
			}
			before.Check(t, "input directory changed")
			st, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o640 {
				t.Errorf("output mode %v, want the input's -rw-r-----", st.Mode())
			}
			if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
				t.Errorf("output directory holds %d entries, want out.o alone", len(ents))
			}
			checkRecorded(t, out, goodSites)
			got, _ := os.ReadFile(out)
			want, _ := os.ReadFile(recordedObj)
			if !bytes.Equal(got, want) {
				t.Errorf("-o output differs from the in-place result %s", recordedObj)
			}
		})
	}
}

// TestList: --list and --list --json report the sites and write nothing.
func TestList(t *testing.T) {
	dir := t.TempDir()
	p := copyInto(t, dir, goodObj, "good.o")
	before := untouched.TakeTree(t, dir)

	o := inProcess(t, "--list", p)
	if o.failed || o.stderr != "" {
		t.Fatalf("--list: failed %v, stderr %q", o.failed, o.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n")
	if len(lines) != 1+goodSites || !strings.HasPrefix(lines[0], "OBJECT") {
		t.Errorf("--list printed %q, want a header and %d sites", o.stdout, goodSites)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, p) || !strings.Contains(l, "fentry") {
			t.Errorf("--list line %q does not name %s and an fentry site", l, p)
		}
	}

	o = inProcess(t, "--list", "--json", p)
	if o.failed || o.stderr != "" {
		t.Fatalf("--list --json: failed %v, stderr %q", o.failed, o.stderr)
	}
	var files []struct {
		Object string
		Arch   string
		Table  string
		Error  string
		Sites  []struct {
			Section  string
			Function string
			Kind     string
			Len      int
		}
	}
	if err := json.Unmarshal([]byte(o.stdout), &files); err != nil {
		t.Fatalf("--list --json output does not parse: %v\n%s", err, o.stdout)
	}
	if len(files) != 1 || files[0].Object != p || files[0].Arch != "x86_64" || files[0].Error != "" || len(files[0].Sites) != goodSites {
		t.Fatalf("--list --json = %+v, want one object %s with %d sites", files, p, goodSites)
	}
	var fns []string
	for _, s := range files[0].Sites {
		fns = append(fns, s.Function)
		if s.Section != ".text" || s.Kind != "fentry" || s.Len != 6 {
			t.Errorf("site %+v, want a 6-byte fentry site in .text", s)
		}
	}
	if !slices.Equal(fns, []string{"hook", "work"}) {
		t.Errorf("sites in %v, want hook and work", fns)
	}

	// A failed file is in the JSON with its error, and the run fails.
	bad := copyInto(t, dir, filepath.Join(badDir, "elf32.o"), "elf32.o")
	before = untouched.TakeTree(t, dir)
	o = inProcess(t, "--list", "--json", bad)
	if !o.failed {
		t.Error("--list --json on a bad file succeeded")
	}
	checkErrLine(t, o.stderr, bad, "32-bit")
	if err := json.Unmarshal([]byte(o.stdout), &files); err != nil || len(files) != 1 || !strings.Contains(files[0].Error, "32-bit") {
		t.Errorf("--list --json on a bad file: %v, %+v; want one entry with its error", err, files)
	}
	before.Check(t, "--list changed the directory")
}

// TestManyFiles: one bad file among good ones is reported and fails the
// run; the good ones are processed all the same.
func TestManyFiles(t *testing.T) {
	for _, jobs := range []string{"1", "4"} {
		t.Run("jobs="+jobs, func(t *testing.T) {
			dir := t.TempDir()
			a := copyInto(t, dir, goodObj, "a.o")
			bad := copyInto(t, dir, filepath.Join(badDir, "big-endian.o"), "bad.o")
			b := copyInto(t, dir, goodObj, "b.o")
			c := copyInto(t, dir, recordedObj, "c.o")
			badSum, cSum := sha256File(t, bad), sha256File(t, c)
			o := inProcess(t, "-j", jobs, a, bad, b, c)
			if !o.failed {
				t.Error("succeeded with a bad file among the inputs")
			}
			if o.stdout != "" {
				t.Errorf("stdout = %q, want nothing", o.stdout)
			}
			checkErrLine(t, o.stderr, bad, "big-endian")
			checkRecorded(t, a, goodSites)
			checkRecorded(t, b, goodSites)
			if sha256File(t, bad) != badSum {
				t.Error("the bad file changed")
			}
			if sha256File(t, c) != cSum {
				t.Error("the already recorded file changed")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 4 {
				t.Errorf("directory holds %d entries, want the 4 inputs alone", len(ents))
			}
		})
	}
}

// TestUsageErrors: flags that do not go together are refused before any
// file is read.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args func(a, b, out string) []string
		want string
	}{
		{"json-without-list", func(a, _, _ string) []string { return []string{"--json", a} }, "--json goes with --list"},
		{"output-with-two-inputs", func(a, b, out string) []string { return []string{"-o", out, a, b} }, "-o takes exactly one input file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a := copyInto(t, dir, goodObj, "a.o")
			b := copyInto(t, dir, goodObj, "b.o")
			before := untouched.TakeTree(t, dir)
			out := filepath.Join(t.TempDir(), "out.o")
			o := inProcess(t, c.args(a, b, out)...)
			if !o.failed || o.stdout != "" {
				t.Errorf("failed %v, stdout %q; want a failure and no output", o.failed, o.stdout)
			}
			if o.stderr != "recordmcount: "+c.want+"\n" {
				t.Errorf("stderr = %q, want %q", o.stderr, "recordmcount: "+c.want+"\n")
			}
			before.Check(t, "inputs changed")
			if _, err := os.Stat(out); err == nil {
				t.Error("-o output written despite the usage error")
			}
		})
	}
}

// TestBinary builds recordmcount and runs it as a process, so the exit
// status is the real one: 0 for a good object, 1 for every bad input and
// usage error, each with a message.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("no go command on PATH to build recordmcount with")
	}
	bin := filepath.Join(t.TempDir(), "recordmcount")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	execRun := func(t *testing.T, args ...string) outcome {
		t.Helper()
		stdout, stderr, code := limits.Run(t, "", append([]string{bin}, args...)...)
		return outcome{stdout, stderr, code != 0, code}
	}

	t.Run("good", func(t *testing.T) {
		dir := t.TempDir()
		p := copyInto(t, dir, goodObj, "good.o")
		if o := execRun(t, p); o.code != 0 || o.stderr != "" {
			t.Errorf("exit status %d, stderr %q; want 0 and nothing", o.code, o.stderr)
		}
		checkRecorded(t, p, goodSites)
	})
	for _, c := range corpusFiles(t) {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := copyInto(t, dir, filepath.Join(badDir, c.name), c.name)
			checkBad(t, execRun, "in-place", dir, p, c.want)
		})
	}
	// Each is one error line and exit status 1 in every mode, at once:
	// a device that reads without end or a FIFO with no writer must not
	// hang the tool or exhaust its memory (limited kills it, failing the
	// test).
	for _, c := range specials {
		t.Run(c.Name, func(t *testing.T) {
			for _, mode := range []string{"in-place", "output", "list"} {
				dir := t.TempDir()
				checkBad(t, execRun, mode, dir, makeSpecial(t, c, dir), c.Want)
			}
		})
	}

	// Usage errors cobra itself detects must be reported too: a silent
	// exit status 1 leaves the user guessing.
	for _, c := range []struct {
		name string
		args []string // "OBJ" stands for a copy of the good object
		want string
	}{
		{"no-arguments", nil, "requires at least 1 arg"},
		{"unknown-flag", []string{"--bogus", "OBJ"}, "--bogus"},
		{"bad-flag-value", []string{"-j", "many", "OBJ"}, "many"},
		{"json-without-list", []string{"--json", "OBJ"}, "--json goes with --list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := copyInto(t, dir, goodObj, "good.o")
			before := untouched.TakeTree(t, dir)
			args := slices.Clone(c.args)
			if i := slices.Index(args, "OBJ"); i >= 0 {
				args[i] = p
			}
			o := execRun(t, args...)
			if o.code != 1 {
				t.Errorf("exit status %d, want 1", o.code)
			}
			if !strings.Contains(o.stderr, c.want) {
				t.Errorf("stderr = %q, want a message saying %q", o.stderr, c.want)
			}
			before.Check(t, "the input changed")
		})
	}
}

// TestSectionSymbolValue: the table must point at the sites even when the
// section symbol it is written against has a value other than 0 (in an
// object, st_value is an offset in the section, and nothing makes it 0
// for a section symbol); refusing the object is fine too. Found by
// FuzzFindObject (sites/testdata/fuzz/FuzzFindObject/section-symbol-value).
func TestSectionSymbolValue(t *testing.T) {
	g := loadObj(t, goodObj)
	syms, err := g.f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	text := g.index(".text")
	i := slices.IndexFunc(syms, func(s elf.Symbol) bool {
		return elf.ST_TYPE(s.Info) == elf.STT_SECTION && int(s.Section) == text
	})
	if i < 0 {
		t.Fatal("no section symbol for .text")
	}
	// Symbols() leaves out the null symbol: entry i+1; st_value at +8.
	data := put(slices.Clone(g.b), int(g.sec(".symtab").Offset)+(i+1)*24+8, 8, 1)
	dir := t.TempDir()
	p := filepath.Join(dir, "value.o")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sitetest.Find(t, sitetest.Parse(t, p, data), sites.FindObject)
	before := untouched.TakeTree(t, dir)

	o := inProcess(t, p)
	if o.failed {
		checkErrLine(t, o.stderr, p, "")
		before.Check(t, "refused, but the directory changed")
		return
	}
	out := sitetest.Open(t, p)
	got, err := sites.FindObject(out)
	if err != nil {
		t.Fatalf("the table written does not point at the sites: %v", err)
	}
	if len(got.Sites) != len(want.Sites) {
		t.Fatalf("%d sites in the table, want %d", len(got.Sites), len(want.Sites))
	}
	for j := range want.Sites {
		if g, w := got.Sites[j], want.Sites[j]; g.Section != w.Section || g.Off != w.Off {
			t.Errorf("table entry %d: section %d+%#x, want the site at %d+%#x", j, g.Section, g.Off, w.Section, w.Off)
		}
	}
}

// TestHugeAlignment: a legal but absurd sh_addralign (2^62) on a section
// the pass grows must neither exhaust memory nor blow up the output: the
// object is recorded, and the output stays about the input's size. (It
// once allocated until the process died.)
func TestHugeAlignment(t *testing.T) {
	g := loadObj(t, goodObj)
	data := g.shdr(".shstrtab", shAddralign, 1<<62)
	if crash := probe(t, data); crash != "" {
		t.Fatalf("record.Rewrite does not return: %s", crash)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "align.o")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := inProcess(t, p); o.failed || o.stderr != "" {
		t.Fatalf("failed %v, stderr %q", o.failed, o.stderr)
	}
	checkRecorded(t, p, goodSites)
	if st, err := os.Stat(p); err != nil || st.Size() > int64(len(data))+64<<10 {
		t.Errorf("output is %d bytes for a %d-byte input (%v)", st.Size(), len(data), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the object alone", len(ents))
	}
}

// TestOddShapes: objects with gcc's nested functions (`push %r10` before
// the call of __fentry__) and functions with a patchable area beside the
// compiler's call (the patchable_function_entry attribute, or the flag,
// with -pg or -pg -mfentry) are recorded, not refused: the call is each
// function's one site, a nested function's a chain site, and -v notes the
// areas left alone; a second run changes nothing.
func TestOddShapes(t *testing.T) {
	for _, fx := range fixture.Corpus(t, filepath.Join("..", ".."), "shapes-*.o") {
		if fx.Has("mrecord") {
			continue // gcc's own table: left alone (TestGoodObject's second run)
		}
		t.Run(fx.Base, func(t *testing.T) {
			dir := t.TempDir()
			p := copyInto(t, dir, fx.Path, "shapes.o")
			o := inProcess(t, "-v", p)
			if o.failed || !strings.Contains(o.stderr, "note: ") || !strings.Contains(o.stderr, "patchable area") {
				t.Fatalf("failed %v, stderr %q; want success and a note on the patchable areas", o.failed, o.stderr)
			}
			_, obj := sitetest.Object(t, p)
			got := map[string]string{}
			for _, s := range obj.Sites {
				got[s.Func] = fmt.Sprintf("%v +%d", s.Kind, s.FuncOff)
			}
			// Where gcc and clang put the call (see the objects' goldens
			// in sites/testdata): after the areas' NOPs, after endbr64.
			want := map[string]string{"padded": "fentry +5", "padded_pre": "fentry +3"}
			if fx.Has("cet") {
				want = map[string]string{"padded": "fentry +9", "padded_pre": "fentry +7"}
			}
			if fx.Has("mfentry") && fx.CC == "gcc" {
				want["add.0"] = map[bool]string{false: "chain +2", true: "chain +6"}[fx.Has("cet")]
				if fx.Has("pfe5") {
					want["add.0"] = map[bool]string{false: "chain +7", true: "chain +11"}[fx.Has("cet")]
				}
			}
			if !fx.Has("mfentry") {
				want = map[string]string{"padded": "mcount +9", "padded_pre": "mcount +7", "add.0": "mcount +6"}
			}
			for fn, w := range want {
				if got[fn] != w {
					t.Errorf("%s: site %q, want %q (all: %v)", fn, got[fn], w, got)
				}
			}
			if obj.Table != sites.TableOurs || obj.Untabled != 0 {
				t.Errorf("table %v, %d sites not in it", obj.Table, obj.Untabled)
			}
			if o := inProcess(t, p); o.failed || !strings.Contains(o.stderr, "unchanged") {
				t.Errorf("second run: failed %v, stderr %q; want it unchanged", o.failed, o.stderr)
			}
		})
	}
}
