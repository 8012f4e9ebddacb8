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
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"ftpatch/arch"
	"ftpatch/isa"
	"ftpatch/outfile"
	"ftpatch/runtime/abi"
	"slices"
)

//go:embed src
var sources embed.FS

// LibName is the file name of the built archive: the runtime, linked
// into a program.
const LibName = "libftrt.a"

// ModuleLibName is the file name of the module stub's archive, linked into
// a shared object with sites instead of the runtime: its hooks, its
// trampolines into the program's runtime, its config record, and the
// constructor that registers its site table with the runtime.
const ModuleLibName = "libftrt-module.a"

// SharedLibName is the file name of the runtime built as a shared object,
// for a program linked without it that has sites: `ftpatch record`
// preloads it (LD_PRELOAD). It is built from the archive's objects, but
// for the sources that say `#ifdef FTRT_PRELOAD`, compiled again with it
// defined (the start from a constructor rather than the program's
// .preinit_array, the interposed functions), and exports only
// PreloadExports.
const SharedLibName = "libftrt.so"

// ErrUnsupported: the runtime has no port to the architecture yet.
var ErrUnsupported = errors.New("runtime not available for this architecture")

// cflags build the runtime itself: optimised, position-independent (so
// the archive links into PIEs, fixed-address programs and shared objects
// alike), never instrumented (no -pg: it must not call its own hooks), and
// without SIMD registers, which carry the traced program's arguments and
// return values. Its thread-local variables are initial-exec: a fixed
// offset from the thread pointer, no call of __tls_get_addr on the hot
// path, in the shared build too (preloaded, it is in the initial set of
// modules, whose TLS is static).
var cflags = []string{"-O2", "-g", "-fPIC", "-ftls-model=initial-exec", "-fno-stack-protector", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror"}

// includeFlags are the compiler flags that resolve the runtime's
// #include lines for its sources laid out under src: a header beside the
// including file is named by its name, any other by its path from src
// ("arch/sys.h", "ftrt.h"), so each include says which folder, and so
// which layer, it reaches. -iquote, not -I: only quoted includes look
// there, and a runtime header never hides a system one.
func includeFlags(src string) []string { return []string{"-iquote", src} }

// files lists the sources of arch a: the runtime's (abi.h, ftrace.h and
// every layer's folder: arch/ and tracers/ with that architecture's
// folder in each, core/, record/, patch/, process/) and the module stub's (module/,
// its architecture's folder, and the config record and headers it shares
// with the runtime).
func files(a arch.Arch) (rt, mod []string, err error) {
	if !isa.For(a).Runtime {
		return nil, nil, fmt.Errorf("%w: %v (ports: x86_64, arm64)", ErrUnsupported, a)
	}
	err = fs.WalkDir(sources, "src", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		dir := strings.Split(path.Dir(p), "/")[1:] // the folders below src
		switch {
		case len(dir) > 0 && dir[0] == "module":
			if len(dir) == 1 || dir[1] == a.String() {
				mod = append(mod, p)
			}
		case len(dir) > 1 && (dir[0] == "arch" || dir[0] == "tracers") && dir[1] != a.String():
			// another architecture's (arch/ISA/, tracers/ISA/)
		default:
			rt = append(rt, p)
			if p == configSource || path.Ext(p) == ".h" {
				mod = append(mod, p)
			}
		}
		return nil
	})
	sort.Strings(rt)
	sort.Strings(mod)
	return rt, mod, err
}

// configSource is the config record's source, which the module stub
// builds too: each shared object with sites has its own.
const configSource = "src/core/config.c"

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

// Options say how to build the runtime, and where Cached and Find look
// for it.
type Options struct {
	CC   []string  // the C compiler command; default "cc" (or aarch64-linux-gnu-gcc for arm64 on another host)
	Arch arch.Arch // default x86_64
	Dir  string    // where Build writes libftrt.a
	// Cache is the cache directory Cached keeps built runtimes in
	// (under ftpatch/runtime); "" for the user's, os.UserCacheDir:
	// $XDG_CACHE_HOME, else ~/.cache.
	Cache string
	// Notes takes what Cached and Find say about a cached or installed
	// runtime they do not trust (one line each time, which says what
	// they did instead); nil discards it.
	Notes io.Writer
}

func (o *Options) defaults() {
	if o.Arch == arch.Unknown {
		o.Arch = arch.Default
	}
	if len(o.CC) == 0 {
		o.CC = slices.Clone(isa.For(o.Arch).CC)
	}
}

// Build compiles the runtime and the module stub and writes
// Dir/libftrt.a and Dir/libftrt-module.a atomically, and Header into
// IncludeDir(Dir), returning the runtime's path (the stub's lies beside
// it: ModulePath).
func Build(ctx context.Context, o Options) (string, error) {
	o.defaults()
	if _, err := buildArchives(ctx, o); err != nil {
		return "", err
	}
	if err := writeHeader(IncludeDir(o.Dir)); err != nil {
		return "", err
	}
	return filepath.Join(o.Dir, LibName), nil
}

// buildArchives compiles the runtime and the module stub of o (whose
// defaults are set) and writes Dir/libftrt.a and Dir/libftrt-module.a
// atomically; it returns the SHA-256 digest of each as written, by name.
func buildArchives(ctx context.Context, o Options) (map[string][sha256.Size]byte, error) {
	rt, mod, err := files(o.Arch)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "ftrt-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	// Lay the sources out as they are embedded, so each #include
	// resolves (includeFlags).
	for _, p := range append(append([]string{}, rt...), mod...) {
		b, err := sources.ReadFile(p)
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	sums := map[string][sha256.Size]byte{}
	var rtObjs []string
	for _, lib := range []struct {
		name string
		srcs []string
	}{{ModuleLibName, mod}, {LibName, rt}} {
		sum, objs, err := archive(ctx, o, work, lib.name, lib.srcs)
		if err != nil {
			return nil, err
		}
		sums[lib.name] = sum
		rtObjs = objs
	}
	sum, err := sharedObject(ctx, o, work, rt, rtObjs)
	if err != nil {
		return nil, err
	}
	sums[SharedLibName] = sum
	return sums, nil
}

// writeHeader writes Header into dir, atomically.
func writeHeader(dir string) error {
	hdr, err := sources.ReadFile(headerSource)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return outfile.WriteFile(filepath.Join(dir, Header), 0o644, hdr)
}

// Header is the runtime's API for the programs that link it (live
// patching, tracing_on and _off), installed into IncludeDir beside the
// archives.
const Header = "ftrace.h"

// headerSource is Header among the sources: beside abi.h, below every
// layer, as it holds definitions only (the API's types, which the
// tracers and the ISA's register access use, and its declarations,
// which the process layer defines).
const headerSource = "src/" + Header

// IncludeDir is where Build puts Header: dir/include, for the runtime
// built into dir; `ftpatch flags --cflags` names it with -I.
func IncludeDir(dir string) string { return filepath.Join(dir, "include") }

// archive compiles srcs (laid out under work) and writes the archive
// Dir/name atomically, returning the SHA-256 digest of what it wrote and
// the objects it holds, by source (in srcs' order; "" for a header).
func archive(ctx context.Context, o Options, work, name string, srcs []string) ([sha256.Size]byte, []string, error) {
	var objs []string
	bySrc := make([]string, len(srcs))
	for i, p := range srcs {
		if !compiled(p) {
			continue
		}
		obj, err := compile(ctx, o, work, p, strings.TrimSuffix(name, ".a"))
		if err != nil {
			return [sha256.Size]byte{}, nil, err
		}
		objs = append(objs, obj)
		bySrc[i] = obj
	}
	lib := filepath.Join(work, name)
	ar := append([]string{"ar", "rcsD", lib}, objs...)
	if out, err := exec.CommandContext(ctx, ar[0], ar[1:]...).CombinedOutput(); err != nil {
		return [sha256.Size]byte{}, nil, fmt.Errorf("archiving %s: %w\n%s", name, err, out)
	}
	b, err := os.ReadFile(lib)
	if err != nil {
		return [sha256.Size]byte{}, nil, err
	}
	return sha256.Sum256(b), bySrc, outfile.WriteFile(filepath.Join(o.Dir, name), 0o644, b)
}

// compiled says whether the source p is compiled (C or assembly), not
// included.
func compiled(p string) bool { return strings.HasSuffix(p, ".c") || strings.HasSuffix(p, ".S") }

// compile compiles the source p (laid out under work) into an object
// named for it and for what it is built into (tag), with the extra
// flags, and returns the object's path.
func compile(ctx context.Context, o Options, work, p, tag string, extra ...string) (string, error) {
	obj := filepath.Join(work, tag+"_"+strings.ReplaceAll(strings.TrimSuffix(p, filepath.Ext(p)), "/", "_")+".o")
	argv := append(append(append(append(append(append([]string{}, o.CC...), cflags...), isa.For(o.Arch).RuntimeCFlags...), extra...), includeFlags(filepath.Join(work, "src"))...), "-c", filepath.Join(work, p), "-o", obj)
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("compiling the runtime (%s): %w\n%s", strings.Join(argv, " "), err, out)
	}
	return obj, nil
}

// preloadMacro is defined when a source is compiled for the shared
// object (SharedLibName): the sources that name it are compiled again
// with it; the others' archive objects are linked as they are (every
// object is position-independent).
const preloadMacro = "FTRT_PRELOAD"

// sharedObject links the runtime's sources srcs (laid out under work),
// whose archive objects are objs (by source), into the shared object
// Dir/SharedLibName, written atomically, and returns its digest. Its
// dynamic symbol table holds PreloadExports alone (a version script
// makes every other symbol local), and it binds every symbol at load
// (-z now) and keeps its relocated data read-only (-z relro): nothing of
// it is resolved lazily while a traced call runs.
func sharedObject(ctx context.Context, o Options, work string, srcs, objs []string) ([sha256.Size]byte, error) {
	var link []string
	for i, p := range srcs {
		if !compiled(p) {
			continue
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return [sha256.Size]byte{}, err
		}
		obj := objs[i]
		if strings.Contains(string(b), preloadMacro) {
			if obj, err = compile(ctx, o, work, p, "preload", "-D"+preloadMacro); err != nil {
				return [sha256.Size]byte{}, err
			}
		}
		link = append(link, obj)
	}
	script := filepath.Join(work, "libftrt.map")
	if err := os.WriteFile(script, []byte(versionScript(o.Arch)), 0o644); err != nil {
		return [sha256.Size]byte{}, err
	}
	so := filepath.Join(work, SharedLibName)
	argv := append(append(append(append([]string{}, o.CC...), "-shared", "-o", so, "-Wl,--version-script="+script, "-Wl,-z,now", "-Wl,-z,relro",
		"-Wl,-z,noexecstack", "-Wl,-soname,"+SharedLibName), link...), "-lpthread", "-ldl")
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("linking %s (%s): %w\n%s", SharedLibName, strings.Join(argv, " "), err, out)
	}
	b, err := os.ReadFile(so)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), outfile.WriteFile(filepath.Join(o.Dir, SharedLibName), 0o755, b)
}

// versionScript makes every symbol of the shared runtime of arch a local
// but PreloadExports(a).
func versionScript(a arch.Arch) string {
	var b strings.Builder
	b.WriteString("{\n  global:\n")
	for _, s := range PreloadExports(a) {
		fmt.Fprintf(&b, "    %s;\n", s)
	}
	b.WriteString("  local: *;\n};\n")
	return b.String()
}

// PreloadExports are the symbols the shared runtime (SharedLibName) of
// arch a exports, and nothing else: the public API (ftrace.h); the hooks
// the compiler's sites call (__fentry__, mcount, _mcount), which the
// loader binds to the runtime's as it comes first in the lookup order;
// the registration of shared objects that link the module stub; and the
// C library's functions the static runtime wraps (wrapped), _exit and
// _Exit, and the unwinder's entry points
// (src/tracers/unwind.c), each defined by the runtime, which calls the C
// library's own.
func PreloadExports(a arch.Arch) []string {
	hooks := []string{"__fentry__", "mcount"}
	if a == arch.ARM64 {
		hooks = []string{"_mcount"}
	}
	out := append(slices.Clone(apiExports), hooks...)
	out = append(out, abi.ModuleRegister, abi.ModuleUnregister, "_exit", "_Exit")
	out = append(out, wrapped...)
	return append(out, unwindExports...)
}

// apiExports are the functions of the public API (src/ftrace.h).
var apiExports = []string{"ftrace_set_functions", "ftrace_enable_functions", "ftrace_disable_functions", "ftrace_set_tracer",
	"ftrace_current_tracer", "tracing_off", "tracing_on", "tracing_is_on", "ftrace_snapshot", "ftrace_set_filter",
	"ftrace_set_notrace", "register_ftrace_function", "unregister_ftrace_function", "register_ftrace_direct",
	"modify_ftrace_direct", "unregister_ftrace_direct", "ftrace_regs_get_argument", "ftrace_regs_get_fp_argument_bits",
	"ftrace_regs_get_stack_pointer", "ftrace_regs_get_instruction_pointer", "ftrace_regs_get_return_value",
	"ftrace_regs_set_return_value", "ftrace_regs_set_instruction_pointer", "ftrace_override_function_with_return",
	"register_fgraph", "unregister_fgraph", "fgraph_reserve_data", "fgraph_retrieve_data", "fgraph_get_task_var",
	"register_fprobe", "unregister_fprobe", "ftrace_enabled_sites", "ftrace_error"}

// unwindExports are the unwinder's entry points the runtime interposes
// (src/tracers/unwind.c, frames.c).
var unwindExports = []string{"_Unwind_RaiseException", "_Unwind_Resume_or_Rethrow", "_Unwind_ForcedUnwind", "_Unwind_SetIP",
	"_Unwind_Resume", "_Unwind_Find_FDE", "__cxa_begin_catch"}

// ModulePath is the module stub's archive beside the runtime at lib.
func ModulePath(lib string) string { return filepath.Join(filepath.Dir(lib), ModuleLibName) }

// CFlags are the compile flags that give a program patch sites the
// runtime handles, per architecture.
func CFlags(a arch.Arch) []string { return slices.Clone(isa.For(a).CFlags) }

// LinkFlags are the link flags of a program for the runtime's archive at
// lib. Naming ftrt_init and ftrt_preinit undefined pulls the load-time
// pass and its caller in the program's .preinit_array
// (src/process/lifetime.c, which nothing below it names) out of the
// archive even when no object calls a hook (-fpatchable-function-entry
// sites call nothing). The registration entry points are exported, so
// shared objects with sites, linked at start or loaded with dlopen, find
// the program's runtime. So is the runtime's _exit (and _Exit), named
// undefined to pull it in: a program or shared object that ends with
// _exit still flushes its trace (src/process/exit.c). The program's calls
// of the exec functions are wrapped, so a process writes its buffer out
// before an exec discards it, and they and posix_spawn pass the tracing
// settings on to a child given an environment without them
// (src/process/exec.c); so are its calls of backtrace, which then see
// through graphed frames (src/tracers/backtrace.c), and of makecontext
// (src/tracers/context.c).
func LinkFlags(lib string) []string {
	flags := []string{"-Wl,-u," + abi.Init, "-Wl,-u," + abi.Preinit, "-Wl,--export-dynamic-symbol=" + abi.ModuleRegister,
		"-Wl,--export-dynamic-symbol=" + abi.ModuleUnregister,
		"-Wl,-u,_exit", "-Wl,--export-dynamic-symbol=_exit", "-Wl,--export-dynamic-symbol=_Exit"}
	for _, f := range wrapped {
		flags = append(flags, "-Wl,--wrap="+f)
	}
	return append(flags, lib)
}

// wrapped are the C library's functions the runtime wraps in the program:
// the exec and spawn functions (src/process/exec.c), backtrace
// (src/tracers/backtrace.c), makecontext (src/tracers/context.c), and
// those that set a signal's action or block signals (src/process/trap.c:
// live patching's traps come first, and the flight recorder stands in
// for the default action of the fatal signals while leaving the
// program's own handlers to the kernel).
var wrapped = []string{"execve", "execv", "execvp", "execvpe", "execl", "execle", "execlp", "fexecve", "execveat",
	"posix_spawn", "posix_spawnp", "backtrace", "makecontext", "sigaction", "signal", "sigprocmask", "pthread_sigmask"}

// ModuleLinkFlags are the link flags of a shared object with sites, for
// the runtime's archive at lib: the module stub beside it, pulled in by
// naming its constructor undefined.
func ModuleLinkFlags(lib string) []string {
	return []string{"-Wl,-u," + abi.ModuleInit, ModulePath(lib)}
}
