package ldso

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ftpatch/arch"
	"ftpatch/internal/asroot"
	"ftpatch/internal/minielf"
)

// A tree is a directory of constructed ELF files, by path relative to
// it; symlinks maps a link's path to what it points to.
type tree struct {
	files    map[string]minielf.File
	symlinks map[string]string
}

// lay writes the tree under root, each file with its directories; "$T"
// in strings of the files (search paths, needed names) is root.
func (tr tree) lay(t *testing.T, root string) {
	t.Helper()
	for p, f := range tr.files {
		f.Rpath = strings.ReplaceAll(f.Rpath, "$T", root)
		f.Runpath = strings.ReplaceAll(f.Runpath, "$T", root)
		var needed []string
		for _, n := range f.Needed {
			needed = append(needed, strings.ReplaceAll(n, "$T", root))
		}
		f.Needed = needed
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := f.Write(full); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range tr.symlinks {
		full := filepath.Join(root, link)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, full); err != nil {
			t.Fatal(err)
		}
	}
}

// lib is a 64-bit x86-64 shared object needing names.
func lib(needed ...string) minielf.File { return minielf.File{Needed: needed} }

// prog is a program needing names, with the given search paths.
func prog(rpath, runpath string, needed ...string) minielf.File {
	return minielf.File{Type: elf.ET_DYN, Rpath: rpath, Runpath: runpath, Needed: needed}
}

// show prints objects one a line, paths relative to root, for
// comparing with a case's want.
func show(root string, objs []Object) string {
	var b strings.Builder
	for _, o := range objs {
		p := o.Path
		if r, ok := strings.CutPrefix(p, root+"/"); ok {
			p = r
		}
		fmt.Fprintf(&b, "%s => %s (%s)\n", o.Name, p, o.From)
	}
	return b.String()
}

// TestSearch: the loader's search on trees of constructed files, each
// case one rule of the order; want is what All lists (paths relative to
// the tree).
func TestSearch(t *testing.T) {
	x64, a64 := uint32(flagELFLibc6|0x0300), uint32(flagELFLibc6|0x0a00)
	for _, c := range []struct {
		name   string
		tree   tree
		prog   string // the program's path in the tree
		env    Env    // "$T" in LibraryPath is the tree; Root and Cache are set by the test
		cache  []cacheEntry
		direct bool // Needed instead of All
		want   string
	}{
		{name: "runpath",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"), "r/liba.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\n"},
		{name: "rpath",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("$T/a", "", "liba.so.1"), "a/liba.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => a/liba.so.1 (DT_RPATH)\n"},
		{name: "rpath-ignored-with-runpath",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("$T/a", "$T/r", "liba.so.1", "libb.so.1"),
				"a/liba.so.1": lib(), "r/liba.so.1": lib(), "a/libb.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\nlibb.so.1 =>  (not found)\n"},
		{name: "library-path-before-runpath",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"), "r/liba.so.1": lib(), "l/liba.so.1": lib()}},
			env:  Env{LibraryPath: "$T/none;$T/l"},
			prog: "bin/p", want: "liba.so.1 => l/liba.so.1 (LD_LIBRARY_PATH)\n"},
		{name: "rpath-before-library-path",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("$T/a", "", "liba.so.1"), "a/liba.so.1": lib(), "l/liba.so.1": lib()}},
			env:  Env{LibraryPath: "$T/l"},
			prog: "bin/p", want: "liba.so.1 => a/liba.so.1 (DT_RPATH)\n"},
		{name: "secure-ignores-library-path",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"), "r/liba.so.1": lib(), "l/liba.so.1": lib()}},
			env:  Env{LibraryPath: "$T/l", Secure: true},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\n"},
		{name: "origin",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$ORIGIN/../lib", "liba.so.1"), "lib/liba.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => lib/liba.so.1 (DT_RUNPATH)\n"},
		{name: "origin-of-program-through-link",
			tree: tree{files: map[string]minielf.File{"real/bin/p": prog("", "${ORIGIN}/../lib", "liba.so.1"), "real/lib/liba.so.1": lib(), "lib/liba.so.1": lib()},
				symlinks: map[string]string{"bin/p": "../real/bin/p"}},
			prog: "bin/p", want: "liba.so.1 => real/lib/liba.so.1 (DT_RUNPATH)\n"},
		{name: "origin-of-library",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"),
				"r/liba.so.1": {Needed: []string{"libb.so.1"}, Runpath: "$ORIGIN/sub"}, "r/sub/libb.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\nlibb.so.1 => r/sub/libb.so.1 (DT_RUNPATH)\n"},
		// $ORIGINAL is no token: the element is a relative path, left
		// as it is (a wrong expansion would find binAL/x).
		{name: "origin-not-a-token",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$ORIGINAL/x", "liba.so.1"), "binAL/x/liba.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 =>  (not found)\n"},
		{name: "lib-and-platform",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/$LIB/${PLATFORM}", "liba.so.1"), "lib/x86_64-linux-gnu/x86_64/liba.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => lib/x86_64-linux-gnu/x86_64/liba.so.1 (DT_RUNPATH)\n"},
		{name: "secure-origin-dropped",
			tree: tree{files: map[string]minielf.File{"app/bin/p": prog("", "$ORIGIN/../lib", "liba.so.1"), "app/lib/liba.so.1": lib()}},
			env:  Env{Secure: true},
			prog: "app/bin/p", want: "liba.so.1 =>  (not found)\n"},
		{name: "secure-origin-of-library",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"),
				"r/liba.so.1": {Needed: []string{"libb.so.1"}, Runpath: "$ORIGIN/sub"}, "r/sub/libb.so.1": lib()}},
			env:  Env{Secure: true},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\nlibb.so.1 => r/sub/libb.so.1 (DT_RUNPATH)\n"},
		// An x32 library: 32-bit, and EM_X86_64 all the same.
		{name: "wrong-class-skipped",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"),
				"l/liba.so.1": {Class: elf.ELFCLASS32, Machine: elf.EM_X86_64}, "r/liba.so.1": lib()}},
			env:  Env{LibraryPath: "$T/l"},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\n"},
		{name: "wrong-machine-skipped",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"),
				"l/liba.so.1": {Machine: elf.EM_AARCH64}, "r/liba.so.1": lib()}},
			env:  Env{LibraryPath: "$T/l"},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\n"},
		{name: "not-a-shared-object-skipped",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"),
				"l/liba.so.1": {Type: elf.ET_EXEC}, "r/liba.so.1": lib()}},
			env:  Env{LibraryPath: "$T/l"},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\n"},
		{name: "runpath-for-direct-needs-only",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1"),
				"r/liba.so.1": lib("libb.so.1"), "r/libb.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\nlibb.so.1 =>  (not found)\n"},
		{name: "rpath-inherited",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("$T/a", "", "liba.so.1"),
				"a/liba.so.1": lib("libb.so.1"), "a/libb.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => a/liba.so.1 (DT_RPATH)\nlibb.so.1 => a/libb.so.1 (DT_RPATH)\n"},
		{name: "rpath-not-inherited-past-runpath",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("$T/a", "", "liba.so.1"),
				"a/liba.so.1": {Needed: []string{"libb.so.1"}, Runpath: "$T/none"}, "a/libb.so.1": lib()}},
			prog: "bin/p", want: "liba.so.1 => a/liba.so.1 (DT_RPATH)\nlibb.so.1 =>  (not found)\n"},
		{name: "cache",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "", "libq.so.1"), "c/libq.so.1": lib(), "arm/libq.so.1": {Machine: elf.EM_AARCH64}}},
			cache: []cacheEntry{{flags: int32(a64), key: "libq.so.1", value: "$T/arm/libq.so.1"},
				{flags: int32(x64), key: "libq.so.1", value: "$T/c/libq.so.1", hwcap: 1 << 62},
				{flags: int32(x64), key: "libq.so.1", value: "$T/c/libq.so.1"}},
			prog: "bin/p", want: "libq.so.1 => c/libq.so.1 (ld.so.cache)\n"},
		{name: "default-directory",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "", "libd.so.1"), "usr/lib/x86_64-linux-gnu/libd.so.1": lib()}},
			prog: "bin/p", want: "libd.so.1 => usr/lib/x86_64-linux-gnu/libd.so.1 (default directory)\n"},
		{name: "nodeflib",
			tree: tree{files: map[string]minielf.File{"bin/p": {Needed: []string{"libd.so.1"}, Flags1: elf.DF_1_NODEFLIB},
				"usr/lib/x86_64-linux-gnu/libd.so.1": lib()}},
			prog: "bin/p", want: "libd.so.1 =>  (not found)\n"},
		{name: "path-with-slash",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "", "$T/abs/libz.so"), "abs/libz.so": lib()}},
			prog: "bin/p", want: "$T/abs/libz.so => abs/libz.so (path)\n"},
		{name: "interp-needed-by-soname",
			tree: tree{files: map[string]minielf.File{"bin/p": {Interp: "/lib64/ld-linux-x86-64.so.2", Needed: []string{"liba.so.1"}, Runpath: "$T/r"},
				"r/liba.so.1": lib("ld-linux-x86-64.so.2"), "lib64/ld-linux-x86-64.so.2": {Soname: "ld-linux-x86-64.so.2"}}},
			prog: "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\nld-linux-x86-64.so.2 => lib64/ld-linux-x86-64.so.2 (the loader)\n"},
		{name: "breadth-first-each-once",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("$T/a", "", "liba.so.1", "libb.so.1"),
				"a/liba.so.1": lib("libc1.so", "libb.so.1"), "a/libb.so.1": lib("libc1.so", "libalias.so"), "a/libc1.so": lib()},
				symlinks: map[string]string{"a/libalias.so": "liba.so.1"}},
			prog: "bin/p", want: "liba.so.1 => a/liba.so.1 (DT_RPATH)\nlibb.so.1 => a/libb.so.1 (DT_RPATH)\nlibc1.so => a/libc1.so (DT_RPATH)\n"},
		{name: "needed-direct-only",
			tree: tree{files: map[string]minielf.File{"bin/p": prog("", "$T/r", "liba.so.1", "libz.so.9"),
				"r/liba.so.1": lib("libb.so.1"), "r/libb.so.1": lib()}},
			direct: true,
			prog:   "bin/p", want: "liba.so.1 => r/liba.so.1 (DT_RUNPATH)\nlibz.so.9 =>  (not found)\n"},
		{name: "arm64-program",
			tree: tree{files: map[string]minielf.File{"bin/p": {Machine: elf.EM_AARCH64, Needed: []string{"libc.so.6"}},
				"lib/aarch64-linux-gnu/libc.so.6": {Machine: elf.EM_AARCH64}}},
			prog: "bin/p", want: "libc.so.6 => lib/aarch64-linux-gnu/libc.so.6 (default directory)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.tree.lay(t, root)
			env := c.env
			env.LibraryPath = strings.ReplaceAll(env.LibraryPath, "$T", root)
			// The default directories and the loader are found under
			// the tree, as qemu's -L prefix would.
			env.Root = root
			env.Cache = filepath.Join(root, "ld.so.cache")
			var entries []cacheEntry
			for _, e := range c.cache {
				e.value = strings.ReplaceAll(e.value, "$T", root)
				entries = append(entries, e)
			}
			if err := writeCache(env.Cache, entries); err != nil {
				t.Fatal(err)
			}
			find := All
			if c.direct {
				find = Needed
			}
			objs, err := find(filepath.Join(root, c.prog), env)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(c.want, "$T", root)
			if got := show(root, objs); got != want {
				t.Errorf("got:\n%swant:\n%s", got, want)
			}
			for _, o := range objs {
				if o.From != NotFound && o.From != Loaded && o.Needer == "" {
					t.Errorf("%s: no needer", o.Name)
				}
			}
		})
	}
}

// TestSubstitute: the tokens of a search path element, and what secure
// mode drops, element by element.
func TestSubstitute(t *testing.T) {
	main := &object{origin: "/usr/bin"}
	other := &object{origin: "/opt/app/bin"}
	for _, c := range []struct {
		e      string
		o      *object
		secure bool
		want   string // "-" for dropped
	}{
		{"$ORIGIN/../lib", other, false, "/opt/app/bin/../lib"},
		{"${ORIGIN}", other, false, "/opt/app/bin"},
		{"$ORIGINAL/x", other, false, "$ORIGINAL/x"},
		{"$ORIGIN_x", other, false, "$ORIGIN_x"},
		{"/a$ORIGIN", other, false, "/a/opt/app/bin"},
		{"/$LIB/${PLATFORM}/$HOME", other, false, "/lib/x86_64-linux-gnu/x86_64/$HOME"},
		{"$", other, false, "$"},
		// Secure: $ORIGIN only at the start, whole; in the program's own
		// paths only into a trusted directory.
		{"/a$ORIGIN", other, true, "-"},
		{"$ORIGINx", other, true, "$ORIGINx"},
		{"${ORIGIN}x", other, true, "-"},
		{"$ORIGIN/../lib", other, true, "/opt/app/bin/../lib"},
		{"$ORIGIN/../lib", main, true, "/usr/bin/../lib"},
		{"$ORIGIN/../share", main, true, "-"},
		{"/opt/lib", main, true, "/opt/lib"},
	} {
		s := &search{env: Env{Secure: c.secure}, m: machines[arch.X86_64], main: main}
		got, ok := s.substitute(c.e, c.o)
		if !ok {
			got = "-"
		}
		if got != c.want {
			t.Errorf("substitute(%q, origin %s, secure %v) = %q, want %q", c.e, c.o.origin, c.secure, got, c.want)
		}
	}
}

// TestSearchErrors: a program that cannot be read is an error naming
// it; one that needs nothing lists nothing.
func TestSearchErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("#! /bin/sh\n"), 0o755)
	static := filepath.Join(dir, "static")
	minielf.File{Type: elf.ET_EXEC}.Write(static)
	elf32 := filepath.Join(dir, "elf32")
	minielf.File{Class: elf.ELFCLASS32}.Write(elf32)
	// A library found but unreadable: its PT_DYNAMIC past the end of
	// the file (minielf's second program header; p_filesz at 32).
	broken := filepath.Join(dir, "broken")
	minielf.File{Runpath: filepath.Join(dir, "r"), Needed: []string{"libbad.so"}}.Write(broken)
	bad := minielf.File{}.Bytes()
	binary.LittleEndian.PutUint64(bad[64+56+32:], 1<<20)
	os.Mkdir(filepath.Join(dir, "r"), 0o755)
	os.WriteFile(filepath.Join(dir, "r", "libbad.so"), bad, 0o755)
	for _, c := range []struct{ path, err string }{
		{broken, "needed by " + broken + ": " + filepath.Join(dir, "r", "libbad.so") + ": malformed ELF"},
		{filepath.Join(dir, "missing"), "no such file"},
		{script, script + ": not an ELF file"},
		{elf32, elf32 + ": unsupported ELF file"},
		{static, ""},
	} {
		objs, err := All(c.path, Env{})
		if c.err == "" {
			if err != nil || len(objs) != 0 {
				t.Errorf("%s: %v, %v; want nothing", c.path, objs, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v; want an error with %q", c.path, err, c.err)
		}
	}
}

// TestEnvFor: the environment the program gets, its mode and its
// machine make the Env.
func TestEnvFor(t *testing.T) {
	dir := t.TempDir()
	host, foreign := minielf.File{Machine: elf.EM_X86_64}, minielf.File{Machine: elf.EM_AARCH64}
	if runtime.GOARCH == "arm64" {
		host, foreign = foreign, host
	}
	hostProg, foreignProg, setuid := filepath.Join(dir, "host"), filepath.Join(dir, "foreign"), filepath.Join(dir, "setuid")
	host.Write(hostProg)
	foreign.Write(foreignProg)
	host.Write(setuid)
	if err := os.Chmod(setuid, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prog    string
		environ []string
		want    Env
	}{
		{hostProg, []string{"LD_LIBRARY_PATH=/a", "QEMU_LD_PREFIX=/q", "LD_LIBRARY_PATH=/b:/c"}, Env{LibraryPath: "/b:/c"}},
		{setuid, []string{"LD_LIBRARY_PATH=/a"}, Env{LibraryPath: "/a", Secure: true}},
		{foreignProg, []string{"QEMU_LD_PREFIX=/q"}, Env{Root: "/q"}},
	} {
		got, err := EnvFor(c.prog, c.environ)
		if err != nil || got != c.want {
			t.Errorf("EnvFor(%s, %q) = %+v, %v; want %+v", filepath.Base(c.prog), c.environ, got, err, c.want)
		}
	}
	t.Run("capabilities", func(t *testing.T) {
		asroot.Need(t, "gives a program file capabilities")
		capProg := filepath.Join(dir, "cap")
		host.Write(capProg)
		// struct vfs_cap_data, revision 2: CAP_NET_RAW (13) permitted.
		capData := []byte{0, 0, 0, 2, 1 << 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		if err := unix.Setxattr(capProg, "security.capability", capData, 0); err != nil {
			t.Fatalf("setting file capabilities: %v", err)
		}
		if got, err := EnvFor(capProg, nil); err != nil || !got.Secure {
			t.Errorf("EnvFor(a program with capabilities) = %+v, %v; want Secure", got, err)
		}
	})
	// Without QEMU_LD_PREFIX, a foreign program's root is a sysroot
	// that exists (the cross C library's, where installed).
	got, err := EnvFor(foreignProg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != "" {
		if st, err := os.Stat(got.Root); err != nil || !st.IsDir() {
			t.Errorf("root %q: not a directory", got.Root)
		}
	}
}

// TestCacheAgainstLdconfig: the machine's /etc/ld.so.cache, read here,
// lists what `ldconfig -p` lists from it: the same names to the same
// paths, in the same order.
func TestCacheAgainstLdconfig(t *testing.T) {
	ldconfig, err := exec.LookPath("ldconfig")
	if err != nil {
		ldconfig = "/sbin/ldconfig"
	}
	out, err := exec.Command(ldconfig, "-p").Output()
	if err != nil {
		t.Fatalf("ldconfig -p (package libc-bin): %v", err)
	}
	var want []string
	for _, line := range strings.Split(string(out), "\n")[1:] {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), " (")
		if !ok || !strings.Contains(rest, " => ") {
			continue // the count, and "Cache generated by"
		}
		_, path, _ := strings.Cut(rest, " => ")
		want = append(want, name+" => "+path)
	}
	data, err := os.ReadFile("/etc/ld.so.cache")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := parseCache(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.key+" => "+e.value)
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("ld.so.cache: %d entries read, ldconfig -p lists %d\nread: %.10q\nldconfig: %.10q", len(got), len(want), got, want)
	}
}

// TestCacheErrors: a cache that is not one, or that points outside
// itself, is an error; the old format's header is passed over.
func TestCacheErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := writeCache(good, []cacheEntry{{flags: 0x303, key: "liba.so.1", value: "/x/liba.so.1"}}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	old := append([]byte(oldCacheMagic+"\x00\x01\x00\x00\x00"), make([]byte, oldEntry+4)...) // one old entry, padded to 8
	for _, c := range []struct {
		name string
		data []byte
		err  string
	}{
		{"good", data, ""},
		{"after-old-format", append(old, data...), ""},
		{"empty", nil, "no \"glibc-ld.so.cache1.1\" header"},
		{"truncated", data[:60], "entries run past the end"},
		{"string-outside", append(slices.Clone(data[:cacheHeader+entrySize]), 0), "string"},
	} {
		e, err := parseCache(c.data)
		if c.err == "" {
			if err != nil || len(e) != 1 || e[0].key != "liba.so.1" || e[0].value != "/x/liba.so.1" {
				t.Errorf("%s: %+v, %v", c.name, e, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.err)
		}
	}
}

// TestAgainstLoader: on programs built now (a library found through
// $ORIGIN in DT_RUNPATH, another through LD_LIBRARY_PATH, the C
// library through the cache or the default directories), All finds
// what the real loader maps, in its order: glibc's ld.so --list,
// natively on x86-64 and under qemu-aarch64 -L for arm64.
func TestAgainstLoader(t *testing.T) {
	for _, c := range []struct {
		name   string
		cc     string
		root   string   // qemu's -L
		loader []string // the command that lists
		tools  string   // Debian packages, for the message
	}{
		{"x86_64", "gcc", "", []string{"/lib64/ld-linux-x86-64.so.2", "--list"}, "gcc"},
		{"arm64", "aarch64-linux-gnu-gcc", "/usr/aarch64-linux-gnu",
			[]string{"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1", "--list"},
			"gcc-aarch64-linux-gnu, qemu-user"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, tool := range []string{c.cc, c.loader[0]} {
				if _, err := exec.LookPath(tool); err != nil {
					t.Fatalf("%s is not installed: run `make deps` (Debian packages %s)", tool, c.tools)
				}
			}
			dir := t.TempDir()
			write := func(name, text string) string {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			}
			cc := func(args ...string) {
				if out, err := exec.Command(c.cc, args...).CombinedOutput(); err != nil {
					t.Fatalf("%s %s: %v\n%s", c.cc, strings.Join(args, " "), err, out)
				}
			}
			for _, d := range []string{"lib", "env", "bin"} {
				os.Mkdir(filepath.Join(dir, d), 0o755)
			}
			cc("-shared", "-fpic", "-o", filepath.Join(dir, "env/libb.so"), write("b.c", "int b(void) { return 0; }\n"))
			cc("-shared", "-fpic", "-o", filepath.Join(dir, "lib/libb.so"), write("b2.c", "int b(void) { return 1; }\n"))
			cc("-shared", "-fpic", "-o", filepath.Join(dir, "lib/liba.so"), write("a.c", "int b(void); int a(void) { return b(); }\n"),
				"-L"+filepath.Join(dir, "env"), "-Wl,--no-as-needed", "-lb")
			prog := filepath.Join(dir, "bin/m")
			cc("-o", prog, write("m.c", "int a(void); int main(void) { return a(); }\n"),
				"-L"+filepath.Join(dir, "lib"), "-Wl,--no-as-needed", "-la", "-lm", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib")
			libPath := filepath.Join(dir, "env")

			cmd := exec.Command(c.loader[0], append(c.loader[1:], prog)...)
			cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+libPath)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
			}
			var want []string
			for _, line := range strings.Split(string(out), "\n") {
				name, rest, ok := strings.Cut(strings.TrimSpace(line), " => ")
				if !ok || strings.HasPrefix(name, "/") { // the loader itself
					continue
				}
				path, _, _ := strings.Cut(rest, " (")
				want = append(want, name+" => "+filepath.Clean(path))
			}
			objs, err := All(prog, Env{LibraryPath: libPath, Root: c.root})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				if o.From == Loaded {
					continue
				}
				p := o.Path
				if c.root != "" {
					p = strings.TrimPrefix(p, c.root)
				}
				got = append(got, o.Name+" => "+filepath.Clean(p))
			}
			if len(want) < 4 || !slices.Equal(got, want) {
				t.Errorf("got:\n%s\nthe loader maps:\n%s\n(its output:\n%s)", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
			}
		})
	}
}
