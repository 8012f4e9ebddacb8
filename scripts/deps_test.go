package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The packages deps.sh must ask for on a machine with none of the tools
// (and without the arm64 C library): every tool the tests run, each by
// the Debian package that has it. qemu-user comes from
// bookworm-backports on bookworm, in an install of its own.
var wantFresh = []string{
	"autoconf", "automake", "binutils", "binutils-aarch64-linux-gnu", "clang", "cmake",
	"g++", "g++-aarch64-linux-gnu", "gcc", "gcc-aarch64-linux-gnu",
	"libc6-dev-arm64-cross", "librsvg2-bin", "libtool", "lld", "llvm", "make", "pkgconf", "uftrace", "xz-utils",
}

// The tools deps.sh probes for, by the name it runs.
var tools = []string{
	"gcc", "g++", "as", "make", "cmake", "xz", "readelf", "objdump",
	"clang", "clang++", "ld.lld", "llvm-readelf",
	"aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "aarch64-linux-gnu-objdump",
	"qemu-aarch64", "rsvg-convert", "pkg-config", "autoreconf", "automake", "libtoolize", "uftrace", "sqlite3",
}

// The commands deps.sh itself runs, linked into the test's PATH from the
// machine's (the PATH holds nothing else, so every tool above is
// missing unless a case provides it).
var shell = []string{"bash", "env", "sed", "awk", "grep", "sort", "tr", "tee", "id", "cat", "rm", "mktemp", "head"}

// A machine is what a case gives deps.sh: its root (etc/apt,
// etc/os-release, the cross C library) and its PATH.
type machine struct {
	root, bin, log string
}

// newMachine makes a machine of the given Debian release whose apt
// sources are sources (file name -> content), with a stand-in apt-get
// that records each call's arguments, a line a call, and exits with
// aptExit.
func newMachine(t *testing.T, codename string, sources map[string]string, aptExit int) *machine {
	t.Helper()
	m := &machine{root: t.TempDir(), bin: t.TempDir()}
	m.log = filepath.Join(m.root, "apt-get.log")
	must(t, os.MkdirAll(filepath.Join(m.root, "etc/apt/sources.list.d"), 0o755))
	must(t, os.WriteFile(filepath.Join(m.root, "etc/os-release"), []byte("PRETTY_NAME=\"Debian GNU/Linux\"\nVERSION_CODENAME="+codename+"\nID=debian\n"), 0o644))
	for name, text := range sources {
		must(t, os.WriteFile(filepath.Join(m.root, "etc/apt", name), []byte(text), 0o644))
	}
	for _, c := range shell {
		p, err := exec.LookPath(c)
		if err != nil {
			t.Fatalf("%s, which deps.sh runs, is not installed: %v", c, err)
		}
		must(t, os.Symlink(p, filepath.Join(m.bin, c)))
	}
	m.script("apt-get", "echo \"$*\" >> "+m.log+"\nexit "+string(rune('0'+aptExit)))
	// Whoever runs the test, deps.sh runs sudo when not root: a stand-in
	// that runs the command.
	m.script("sudo", `exec "$@"`)
	return m
}

// script puts an executable shell script named name on the machine's PATH.
func (m *machine) script(name, body string) {
	os.WriteFile(filepath.Join(m.bin, name), []byte("#!/bin/bash\n"+body+"\n"), 0o755)
}

// have provides tools (as stand-ins that print a version) and the cross
// C library.
func (m *machine) have(t *testing.T, names ...string) {
	for _, n := range names {
		m.script(n, "echo \""+n+" version 10.0.2\"")
	}
	lib := filepath.Join(m.root, "usr/aarch64-linux-gnu/lib")
	must(t, os.MkdirAll(lib, 0o755))
	must(t, os.WriteFile(filepath.Join(lib, "libc.so.6"), nil, 0o644))
}

// run runs deps.sh on m with args; it returns its output, the apt-get
// calls it made, and whether it succeeded.
func (m *machine) run(t *testing.T, args ...string) (string, []string, bool) {
	t.Helper()
	cmd := exec.Command(filepath.Join(m.bin, "bash"), append([]string{"deps.sh"}, args...)...)
	cmd.Env = []string{"PATH=" + m.bin, "FTPATCH_DEPS_ROOT=" + m.root, "HOME=" + m.root}
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running deps.sh: %v", err)
	}
	var calls []string
	if b, err := os.ReadFile(m.log); err == nil {
		calls = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	return string(out), calls, err == nil
}

const debianSources = `Types: deb
# a comment
URIs: http://mirror.example/debian http://second.example/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
`

// installed is the packages the apt-get install calls asked for, and the
// -t suite of each.
func installed(calls []string) map[string]string {
	got := map[string]string{}
	for _, c := range calls {
		f := strings.Fields(c)
		if len(f) == 0 || f[0] != "install" {
			continue
		}
		suite := ""
		for i := 1; i < len(f); i++ {
			switch {
			case f[i] == "-t" && i+1 < len(f):
				suite = f[i+1]
				i++
			case !strings.HasPrefix(f[i], "-"):
				got[f[i]] = suite
			}
		}
	}
	return got
}

func TestDepsFresh(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources map[string]string
		uri     string
	}{
		{"deb822", map[string]string{"sources.list.d/debian.sources": debianSources}, "http://mirror.example/debian"},
		{"one-line", map[string]string{"sources.list": "# mirror\ndeb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://proxy.example:3142/debian bookworm main\ndeb http://proxy.example:3142/debian-security bookworm-security main\n"}, "http://proxy.example:3142/debian"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, "bookworm", tc.sources, 0)
			out, calls, ok := m.run(t)
			if !ok {
				t.Fatalf("deps.sh failed on a fresh machine:\n%s", out)
			}
			got := installed(calls)
			for _, p := range wantFresh {
				if _, ok := got[p]; !ok {
					t.Errorf("deps.sh did not ask for %s; apt-get calls:\n%s", p, strings.Join(calls, "\n"))
				}
			}
			if got["qemu-user"] != "bookworm-backports" {
				t.Errorf("qemu-user: want it from bookworm-backports, got calls:\n%s", strings.Join(calls, "\n"))
			}
			if n := slices.Index(calls, "update -qq"); n != 0 || slices.Index(calls[1:], "update -qq") >= 0 {
				t.Errorf("want one apt-get update, first; calls:\n%s", strings.Join(calls, "\n"))
			}
			for file, want := range map[string][]string{
				"ftpatch-src.sources":       {"Types: deb-src", "URIs: " + tc.uri, "Suites: bookworm", "Components: main", "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"},
				"ftpatch-backports.sources": {"Types: deb", "URIs: " + tc.uri, "Suites: bookworm-backports", "Components: main"},
			} {
				b, err := os.ReadFile(filepath.Join(m.root, "etc/apt/sources.list.d", file))
				if err != nil {
					t.Errorf("deps.sh did not add %s: %v", file, err)
					continue
				}
				for _, line := range want {
					if !strings.Contains(string(b), line+"\n") {
						t.Errorf("%s lacks %q:\n%s", file, line, b)
					}
				}
			}
			if n := strings.Count(out, "deps.sh: installing "); n != 1 {
				t.Errorf("want one line saying what is installed and why, got %d:\n%s", n, out)
			}
			for _, p := range wantFresh {
				if !strings.Contains(out, p+" (") {
					t.Errorf("the install line does not name %s with its reason:\n%s", p, out)
				}
			}
		})
	}
}

func TestDepsBench(t *testing.T) {
	m := newMachine(t, "bookworm", map[string]string{"sources.list.d/debian.sources": debianSources}, 0)
	m.have(t, tools...)
	out, calls, ok := m.run(t, "bench")
	if !ok {
		t.Fatalf("deps.sh bench failed:\n%s", out)
	}
	got := installed(calls)
	bench := []string{"linux-kbuild-6.1", "libclang-rt-14-dev", "tcl"}
	for _, p := range bench {
		if _, ok := got[p]; !ok {
			t.Errorf("deps.sh bench did not ask for %s; calls:\n%s", p, strings.Join(calls, "\n"))
		}
	}
	if len(got) != len(bench) {
		t.Errorf("deps.sh bench asked for more than the bench tools: %v", got)
	}
}

func TestDepsNothingMissing(t *testing.T) {
	m := newMachine(t, "bookworm", map[string]string{
		"sources.list.d/debian.sources": debianSources,
		"sources.list.d/src.sources":    "Types: deb-src\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\n",
		"sources.list.d/bpo.list":       "deb http://mirror.example/debian bookworm-backports main\n",
	}, 0)
	m.have(t, tools...)
	out, calls, ok := m.run(t)
	if !ok || len(calls) != 0 || out != "" {
		t.Fatalf("with every tool present, deps.sh should do and say nothing; ok %v, apt-get calls %q, output:\n%s", ok, calls, out)
	}
	entries, _ := os.ReadDir(filepath.Join(m.root, "etc/apt/sources.list.d"))
	if len(entries) != 3 {
		t.Errorf("deps.sh added sources though they were there: %v", entries)
	}
}

func TestDepsFailsLoudly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources map[string]string
		apt     int
		want    string
	}{
		{"no Debian source", map[string]string{"sources.list.d/other.sources": "Types: deb\nURIs: https://example.com/apt\nSuites: nodistro\nComponents: main\n"}, 0, "no Debian source for bookworm main"},
		{"apt-get fails", map[string]string{"sources.list.d/debian.sources": debianSources}, 1, "apt-get update -qq failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, "bookworm", tc.sources, tc.apt)
			out, _, ok := m.run(t)
			if ok {
				t.Fatalf("deps.sh succeeded; want it to fail with %q:\n%s", tc.want, out)
			}
			if !strings.Contains(out, "deps.sh: "+tc.want) {
				t.Errorf("want the reason %q, got:\n%s", tc.want, out)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
