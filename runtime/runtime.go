// Package runtime holds ftpatch's in-process runtime, libftrt: its C and
// assembly sources (under src/, where the Go build does not look), and how
// to build them into a static archive with the system C compiler.
//
// The sources are embedded in every binary that imports this package, so
// `ftpatch runtime build` and `ftpatch flags --libs` need nothing but the
// ftpatch binary and a compiler.
package runtime

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"ftpatch/arch"
	"ftpatch/elfx"
)

//go:embed src
var sources embed.FS

// LibName is the file name of the built archive.
const LibName = "libftrt.a"

// ErrUnsupported: the runtime has no port to the architecture yet.
var ErrUnsupported = errors.New("runtime not available for this architecture")

// cflags build the runtime itself: optimised, position-independent (so
// the archive links into PIEs, fixed-address programs and shared objects
// alike), never instrumented (no -pg: it must not call its own hooks), and
// without SIMD registers, which carry the traced program's arguments and
// return values.
var cflags = []string{"-O2", "-g", "-fPIC", "-fno-stack-protector", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror"}

var archFlags = map[arch.Arch][]string{
	arch.X86_64: {"-mgeneral-regs-only"},
	arch.ARM64:  {"-mgeneral-regs-only"},
}

// files lists the sources of arch a: the common C files and that
// architecture's directory.
func files(a arch.Arch) ([]string, error) {
	if a != arch.X86_64 {
		return nil, fmt.Errorf("%w: %v (x86_64 only, for now)", ErrUnsupported, a)
	}
	var out []string
	err := fs.WalkDir(sources, "src", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		dir := filepath.Dir(p)
		if dir == "src" || dir == "src/"+a.String() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Version identifies the embedded sources: a hash of every file, so a
// cached archive is rebuilt whenever they change.
func Version() string {
	h := sha256.New()
	fs.WalkDir(sources, "src", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := sources.ReadFile(p)
			fmt.Fprintf(h, "%s %d\n", p, len(b))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Options say how to build the runtime.
type Options struct {
	CC   []string  // the C compiler command; default "cc" (or aarch64-linux-gnu-gcc for arm64 on another host)
	Arch arch.Arch // default x86_64
	Dir  string    // where to write libftrt.a
}

func (o *Options) defaults() {
	if o.Arch == arch.Unknown {
		o.Arch = arch.X86_64
	}
	if len(o.CC) == 0 {
		o.CC = []string{"cc"}
		if o.Arch == arch.ARM64 {
			o.CC = []string{"aarch64-linux-gnu-gcc"}
		}
	}
}

// Build compiles the runtime and writes Dir/libftrt.a atomically,
// returning its path.
func Build(ctx context.Context, o Options) (string, error) {
	o.defaults()
	srcs, err := files(o.Arch)
	if err != nil {
		return "", err
	}
	work, err := os.MkdirTemp("", "ftrt-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	// Lay the sources out as they are embedded, so #include "../ftrt.h"
	// resolves.
	for _, p := range srcs {
		b, err := sources.ReadFile(p)
		if err != nil {
			return "", err
		}
		dst := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return "", err
		}
	}
	var objs []string
	for _, p := range srcs {
		if !strings.HasSuffix(p, ".c") && !strings.HasSuffix(p, ".S") {
			continue
		}
		obj := filepath.Join(work, strings.ReplaceAll(strings.TrimSuffix(p, filepath.Ext(p)), "/", "_")+".o")
		argv := append(append(append(append([]string{}, o.CC...), cflags...), archFlags[o.Arch]...), "-c", filepath.Join(work, p), "-o", obj)
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("compiling the runtime (%s): %v\n%s", strings.Join(argv, " "), err, out)
		}
		objs = append(objs, obj)
	}
	lib := filepath.Join(work, LibName)
	ar := append([]string{"ar", "rcsD", lib}, objs...)
	if out, err := exec.CommandContext(ctx, ar[0], ar[1:]...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("archiving the runtime: %v\n%s", err, out)
	}
	b, err := os.ReadFile(lib)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(o.Dir, LibName)
	if err := elfx.WriteFile(out, 0o644, b); err != nil {
		return "", err
	}
	return out, nil
}

// Cached returns the runtime built for o in the per-user cache, building
// it there on first use. The cache key is the sources' version, the
// architecture and the compiler's own version line, so a new ftpatch or a
// new compiler gets a fresh build.
func Cached(ctx context.Context, o Options) (string, error) {
	o.defaults()
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %w (set XDG_CACHE_HOME or HOME)", err)
	}
	ver, err := exec.CommandContext(ctx, o.CC[0], append(o.CC[1:], "--version")...).Output()
	if err != nil {
		return "", fmt.Errorf("C compiler %q: %w", strings.Join(o.CC, " "), err)
	}
	first, _, _ := strings.Cut(string(ver), "\n")
	h := sha256.Sum256([]byte(strings.Join(o.CC, " ") + "\n" + first))
	o.Dir = filepath.Join(base, "ftpatch", "runtime", fmt.Sprintf("%s-%v-%s", Version(), o.Arch, hex.EncodeToString(h[:])[:12]))
	lib := filepath.Join(o.Dir, LibName)
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	return Build(ctx, o)
}

// CFlags are the compile flags that give a program patch sites the
// runtime handles, per architecture.
func CFlags(a arch.Arch) []string {
	if a == arch.ARM64 {
		return []string{"-fpatchable-function-entry=4,2", "-falign-functions=8"}
	}
	return []string{"-pg", "-mfentry"}
}

// LinkFlags are the link flags for the archive at lib. Naming ftrt_init
// undefined pulls the load-time pass out of the archive even when no
// object calls a hook (-fpatchable-function-entry sites call nothing).
func LinkFlags(lib string) []string { return []string{"-Wl,-u,ftrt_init", lib} }
