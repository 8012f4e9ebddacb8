package runtime

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/arch"
)

// layout lays out an installed runtime of arch a under prefix by hand:
// the archives (a line of text each), their SHA256SUMS, this ftpatch's
// header and a version file saying version.
func layout(t *testing.T, prefix string, a arch.Arch, version string) {
	t.Helper()
	dir := InstallDir(prefix, a)
	header, err := sources.ReadFile(headerSource)
	if err != nil {
		t.Fatal(err)
	}
	for p, text := range map[string]string{
		filepath.Join(dir, LibName):                   "the runtime\n",
		filepath.Join(dir, ModuleLibName):             "the module stub\n",
		filepath.Join(dir, SharedLibName):             "the runtime to preload\n",
		filepath.Join(dir, VersionFile):               version + "\n",
		filepath.Join(InstallInclude(prefix), Header): string(header),
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sums := map[string][sha256.Size]byte{
		LibName:       sha256.Sum256([]byte("the runtime\n")),
		ModuleLibName: sha256.Sum256([]byte("the module stub\n")),
		SharedLibName: sha256.Sum256([]byte("the runtime to preload\n")),
	}
	if err := writeSums(dir, installFiles, sums); err != nil {
		t.Fatal(err)
	}
}

// TestInstalled: an installed runtime is taken when it is complete and
// of these sources, and Find takes it unless a compiler is named; one of
// another version, or missing a file, is not.
func TestInstalled(t *testing.T) {
	prefix := t.TempDir()
	layout(t, prefix, arch.X86_64, Version())
	want := Lib{Archive: filepath.Join(prefix, "lib/ftpatch/x86_64/libftrt.a"), Include: filepath.Join(prefix, "include/ftpatch"),
		Shared: filepath.Join(prefix, "lib/ftpatch/x86_64/libftrt.so")}
	if l, err := Installed(prefix, arch.X86_64); err != nil || l != want {
		t.Errorf("Installed = %+v, %v; want %+v", l, err, want)
	}
	if l, err := Find(context.Background(), Options{}, prefix); err != nil || l != want {
		t.Errorf("Find = %+v, %v; want the installed %+v", l, err, want)
	}
	if _, err := Installed(prefix, arch.ARM64); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Installed finds an arm64 runtime where none is: %v", err)
	}
	if l, err := Find(context.Background(), Options{CC: []string{"cc"}}, prefix); err != nil || l == want {
		t.Errorf("Find with a compiler named = %+v, %v; want the cache's", l, err)
	}

	// Installed by stow, say: the archive a link to a file as trusted.
	stowed := filepath.Join(t.TempDir(), LibName)
	if err := os.Rename(want.Archive, stowed); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(stowed, want.Archive); err != nil {
		t.Fatal(err)
	}
	if l, err := Installed(prefix, arch.X86_64); err != nil || l != want {
		t.Errorf("Installed, the archive a link = %+v, %v; want %+v", l, err, want)
	}

	old := t.TempDir()
	layout(t, old, arch.X86_64, "0123456789abcdef")
	if _, err := Installed(old, arch.X86_64); !errors.Is(err, ErrOtherVersion) {
		t.Errorf("Installed takes another version's runtime: %v", err)
	}
	os.Remove(filepath.Join(prefix, "lib/ftpatch/x86_64", ModuleLibName))
	if _, err := Installed(prefix, arch.X86_64); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Installed takes a runtime without its module stub: %v", err)
	}
}

// TestInstalledDigests: an installed runtime is taken only as it was
// built: an archive changed since, a header other than this ftpatch's,
// or no digests at all, and it is not; Find says why it passes over one
// not as built.
func TestInstalledDigests(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(dir, inc string) error
		want  error
	}{
		{"archive changed", func(dir, _ string) error { return appendTo(filepath.Join(dir, LibName), "extra constructor") }, errDigest},
		{"module stub changed", func(dir, _ string) error { return appendTo(filepath.Join(dir, ModuleLibName), "x") }, errDigest},
		{"shared runtime changed", func(dir, _ string) error { return appendTo(filepath.Join(dir, SharedLibName), "x") }, errDigest},
		{"header another's", func(_, inc string) error { return appendTo(filepath.Join(inc, Header), "#define X 1\n") }, errDigest},
		{"no digests", func(dir, _ string) error { return os.Remove(filepath.Join(dir, sumsFile)) }, fs.ErrNotExist},
		{"no digest of the stub", func(dir, _ string) error {
			return writeSums(dir, []string{LibName}, map[string][sha256.Size]byte{LibName: sha256.Sum256([]byte("the runtime\n"))})
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := t.TempDir()
			layout(t, prefix, arch.X86_64, Version())
			if err := c.spoil(InstallDir(prefix, arch.X86_64), InstallInclude(prefix)); err != nil {
				t.Fatal(err)
			}
			_, err := Installed(prefix, arch.X86_64)
			if err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Installed: %v; want %v", err, c.want)
			}
			if !errors.Is(err, errDigest) {
				return
			}
			// A cache that is a file fails at once, once the note is
			// written.
			var notes strings.Builder
			file := filepath.Join(t.TempDir(), "file")
			os.WriteFile(file, nil, 0o644)
			if _, err := Find(context.Background(), Options{Cache: file, Notes: &notes}, prefix); err == nil ||
				!strings.Contains(notes.String(), "not using the runtime installed under "+prefix) || !strings.Contains(notes.String(), errDigest.Error()) {
				t.Errorf("Find: %v, notes %q; want a note saying why the installed runtime was not used", err, notes.String())
			}
		})
	}
}

// TestPkgConfig: the pkg-config files give ftpatch flags' flags, from
// ${prefix}, under the names ftpatch flags' options map to.
func TestPkgConfig(t *testing.T) {
	for _, c := range []struct {
		a            arch.Arch
		shared       bool
		name         string
		cflags, libs string
	}{
		{arch.X86_64, false, "ftrt", strings.Join(CFlags(arch.X86_64), " ") + " -I${includedir}",
			strings.Join(LinkFlags("${archivedir}/libftrt.a"), " ")},
		{arch.X86_64, true, "ftrt-module", strings.Join(CFlags(arch.X86_64), " ") + " -fPIC -I${includedir}",
			"-Wl,-u,ftrt_module_init ${archivedir}/libftrt-module.a"},
		{arch.ARM64, false, "ftrt-arm64", strings.Join(CFlags(arch.ARM64), " ") + " -I${includedir}",
			strings.Join(LinkFlags("${archivedir}/libftrt.a"), " ")},
		{arch.ARM64, true, "ftrt-module-arm64", strings.Join(CFlags(arch.ARM64), " ") + " -fPIC -I${includedir}",
			"-Wl,-u,ftrt_module_init ${archivedir}/libftrt-module.a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n := PkgConfigName(c.a, c.shared); n != c.name {
				t.Errorf("PkgConfigName(%v, %v) = %q, want %q", c.a, c.shared, n, c.name)
			}
			pc := PkgConfig(c.a, c.shared, "/opt/ft", "v1")
			for _, want := range []string{
				"\nprefix=/opt/ft\n", "\nincludedir=${prefix}/include/ftpatch\n", "\narchivedir=${prefix}/lib/ftpatch/" + c.a.String() + "\n",
				"\nName: " + c.name + "\n", "\nVersion: v1\n", "\nCflags: " + c.cflags + "\n", "\nLibs: " + c.libs + "\n",
			} {
				if !strings.Contains(pc, want) {
					t.Errorf("%s.pc does not say %q:\n%s", c.name, want, pc)
				}
			}
		})
	}
}
