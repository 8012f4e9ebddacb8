// Package ldso finds the shared objects a program needs as glibc's
// dynamic loader (ld.so) would find them when the program starts,
// without running anything: for each DT_NEEDED name, the file the loader
// would map. ftpatch uses it to tell a user that the functions a glob
// names are in a library the program links, and to read the DWARF of
// every module a program loads. Needed gives a file's direct needs,
// All the whole tree the program loads at start; EnvFor makes the Env
// (LD_LIBRARY_PATH, secure mode, a cross sysroot) from how the program
// is run.
//
// The search is glibc's (elf/dl-load.c, _dl_map_object), in its order:
//
//  1. a name with a slash is a path, used as it is;
//  2. unless the needing object has DT_RUNPATH: the DT_RPATH of the
//     needing object, then of the object that loaded it, and so up to
//     the program (an object with DT_RUNPATH has no DT_RPATH: the loader
//     ignores it);
//  3. LD_LIBRARY_PATH, unless the program runs in secure mode (setuid,
//     setgid, file capabilities);
//  4. the needing object's own DT_RUNPATH (it applies to its direct
//     needs only, not to theirs);
//  5. /etc/ld.so.cache, read here (format "glibc-ld.so.cache1.1");
//  6. the architecture's default directories, as Debian's glibc has
//     them: /lib/TRIPLET, /usr/lib/TRIPLET, /lib, /usr/lib.
//
// Steps 5 and 6 are skipped for an object with DF_1_NODEFLIB (5 only
// for cache entries in the default directories). In the search paths
// $ORIGIN is the directory of the object that holds them (the program's
// with symbolic links resolved, as /proc/self/exe gives it; a
// library's as the path it was found by names it), $LIB and
// $PLATFORM are the architecture's; an empty element is the current
// directory. In secure mode, as glibc does, an element with $ORIGIN
// anywhere but at its start is dropped, and in the program's own paths
// one whose expansion is not under a default directory.
//
// A candidate file is taken only if it is an ELF shared object of the
// program's class, byte order and machine: the loader passes over
// others (a 32-bit library of the same name, an x86-64 one for an arm64
// program) and goes on searching.
//
// What the loader does and this does not: the glibc-hwcaps and legacy
// hwcaps subdirectories of each directory (the same library built for
// a newer processor); LD_PRELOAD and /etc/ld.so.preload (not needs);
// other distributions' default directories (/lib64, /usr/lib64), whose
// libraries their ld.so.cache lists all the same.
//
// For a program of another architecture run under qemu-user, Env.Root
// is the sysroot qemu's -L (QEMU_LD_PREFIX) gives: each absolute path is
// tried under it first, then as it is, as qemu opens files for the
// program.
package ldso

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/infile"
)

// A Source is the step of the search that found an object.
type Source uint8

// The steps, in the loader's order.
const (
	NotFound    Source = iota // no step found it: the program would not start
	Path                      // the name has a slash: a path
	Loaded                    // already loaded by that name: the program's loader (PT_INTERP)
	RPATH                     // DT_RPATH of the needing object or of one that loaded it
	LibraryPath               // LD_LIBRARY_PATH
	RUNPATH                   // DT_RUNPATH of the needing object
	Cache                     // /etc/ld.so.cache
	Default                   // a default directory of the architecture
)

var sourceNames = [...]string{NotFound: "not found", Path: "path", Loaded: "the loader", RPATH: "DT_RPATH",
	LibraryPath: "LD_LIBRARY_PATH", RUNPATH: "DT_RUNPATH", Cache: "ld.so.cache", Default: "default directory"}

func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// An Object is one needed shared object.
type Object struct {
	Name   string // as DT_NEEDED names it
	Path   string // the file the loader would map; "" when NotFound
	From   Source // which step of the search found it
	Needer string // the object whose DT_NEEDED names it (the first to, in All)
}

// An Env is what the search depends on besides the files: how the
// program would be run.
type Env struct {
	// LibraryPath is LD_LIBRARY_PATH as the program gets it:
	// directories separated by ':' or ';'.
	LibraryPath string
	// Secure: the program runs in secure mode (setuid, setgid or file
	// capabilities): LD_LIBRARY_PATH is ignored, $ORIGIN restricted.
	Secure bool
	// Root is a directory each absolute path is tried under first (then
	// as it is), as qemu-user's -L opens files: the arm64 C library's
	// sysroot when the program runs under qemu. "" for none.
	Root string
	// Cache is the ld.so.cache to read; "" reads /etc/ld.so.cache
	// (under Root first). A file that does not exist is no cache.
	Cache string
}

// A machine is what the loader knows of an architecture.
type machine struct {
	elf        elf.Machine
	cacheFlags int32  // ld.so.cache's flags for its libraries: FLAG_ELF_LIBC6 | the architecture's
	triplet    string // Debian's multiarch directory name
	platform   string // AT_PLATFORM, $PLATFORM
	goarch     string // runtime.GOARCH of a host that runs it natively
}

// machines are the architectures' facts: glibc's sysdeps/generic/ldconfig.h
// flags, Debian's multiarch triplets.
var machines = map[arch.Arch]machine{
	arch.X86_64: {elf.EM_X86_64, flagELFLibc6 | 0x0300, "x86_64-linux-gnu", "x86_64", "amd64"},    // FLAG_X8664_LIB64
	arch.ARM64:  {elf.EM_AARCH64, flagELFLibc6 | 0x0a00, "aarch64-linux-gnu", "aarch64", "arm64"}, // FLAG_AARCH64_LIB64
}

// defaults are the default directories: the trusted directories of
// Debian's glibc, in its order.
func (m machine) defaults() []string {
	return []string{"/lib/" + m.triplet, "/usr/lib/" + m.triplet, "/lib", "/usr/lib"}
}

// lib is $LIB: the library directory, relative to a prefix.
func (m machine) lib() string { return "lib/" + m.triplet }

// EnvFor is the Env of the program at prog run with environment environ
// (KEY=VALUE): its LD_LIBRARY_PATH; secure mode for a setuid or setgid
// file, or one with file capabilities; for a program of another
// architecture than this host's, the root qemu-user would use:
// QEMU_LD_PREFIX, else Debian's qemu-user-binfmt prefix
// /etc/qemu-binfmt/PLATFORM when it exists, else the cross C library's
// /usr/TRIPLET.
func EnvFor(prog string, environ []string) (Env, error) {
	var env Env
	get := func(k string) string {
		for _, kv := range slices.Backward(environ) {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	env.LibraryPath = get("LD_LIBRARY_PATH")
	fi, err := os.Stat(prog)
	if err != nil {
		return env, err
	}
	env.Secure = fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0
	if n, err := unix.Getxattr(prog, "security.capability", nil); err == nil && n > 0 {
		env.Secure = true // file capabilities: AT_SECURE as well
	}
	m, err := machineOf(prog)
	if err != nil {
		return env, err
	}
	if m.goarch != runtime.GOARCH {
		env.Root = get("QEMU_LD_PREFIX")
		for _, d := range []string{"/etc/qemu-binfmt/" + m.platform, "/usr/" + m.triplet} {
			if env.Root != "" {
				break
			}
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				env.Root = d
			}
		}
	}
	return env, nil
}

// machineOf reads the architecture of the ELF file at path.
func machineOf(path string) (machine, error) {
	f, err := os.Open(path)
	if err != nil {
		return machine{}, err
	}
	defer f.Close()
	h := make([]byte, 20)
	if _, err := io.ReadFull(f, h); err != nil || string(h[:4]) != elf.ELFMAG {
		return machine{}, fmt.Errorf("%s: %w", path, elfx.ErrNotELF)
	}
	a := arch.FromELF(elf.Machine(uint16(h[18]) | uint16(h[19])<<8))
	m, ok := machines[a]
	if !ok || elf.Class(h[elf.EI_CLASS]) != elf.ELFCLASS64 {
		return machine{}, fmt.Errorf("%s: %w", path, elfx.ErrUnsupported)
	}
	return m, nil
}

// Needed returns the objects the ELF file at path needs directly (its
// DT_NEEDED, in order), each where the loader would find it when path
// is the program it runs (or a library the program loaded first). An
// object not found is listed with From NotFound; the error is for path
// itself (unreadable, not ELF, malformed).
func Needed(path string, env Env) ([]Object, error) {
	s, err := newSearch(path, env)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, name := range s.main.dyn.Needed {
		o := Object{Name: name, Needer: s.main.path}
		o.Path, o.From = s.find(name, s.main)
		out = append(out, o)
	}
	return out, nil
}

// All returns every object the program at path loads at start, in the
// loader's order (breadth first: the program's needs, then the first
// one's, and so on), each once: a name already loaded, or a path that
// is a file already loaded, is not listed again. The program's own
// loader (PT_INTERP) is listed only where something needs it. Objects
// not found are listed with From NotFound and their needs are unknown.
// A found object that cannot be read ends the walk with an error naming
// it.
func All(path string, env Env) ([]Object, error) {
	s, err := newSearch(path, env)
	if err != nil {
		return nil, err
	}
	var out []Object
	loaded := []*object{s.main}
	if s.interp != nil {
		loaded = append(loaded, s.interp)
	}
	listed := map[*object]bool{s.main: true}
	missing := map[string]bool{}
	known := func(name string) *object {
		for _, l := range loaded {
			if slices.Contains(l.names, name) {
				return l
			}
		}
		return nil
	}
	for queue := []*object{s.main}; len(queue) > 0; queue = queue[1:] {
		l := queue[0]
		for _, name := range l.dyn.Needed {
			if missing[name] {
				continue
			}
			if k := known(name); k != nil {
				if !listed[k] { // the program's loader, needed at last
					listed[k] = true
					out = append(out, Object{Name: name, Path: k.path, From: Loaded, Needer: l.path})
				}
				continue
			}
			p, from := s.find(name, l)
			if from == NotFound {
				missing[name] = true
				out = append(out, Object{Name: name, Needer: l.path})
				continue
			}
			if k := sameFile(loaded, p); k != nil {
				k.names = append(k.names, name)
				continue
			}
			o, err := s.open(p, l)
			if err != nil {
				return out, fmt.Errorf("needed by %s: %w", l.path, err)
			}
			o.names = append(o.names, name)
			loaded = append(loaded, o)
			listed[o] = true
			queue = append(queue, o)
			out = append(out, Object{Name: name, Path: p, From: from, Needer: l.path})
		}
	}
	return out, nil
}

// sameFile is the loaded object whose file is the one at path, if one
// is: the loader maps a file once, whatever name reaches it.
func sameFile(loaded []*object, path string) *object {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	for _, l := range loaded {
		if li, err := os.Stat(l.path); err == nil && os.SameFile(fi, li) {
			return l
		}
	}
	return nil
}

// An object is a loaded ELF file.
type object struct {
	path   string // as opened
	origin string // $ORIGIN
	dyn    *elfx.Dynamic
	loader *object  // the object whose need loaded it; nil for the program
	names  []string // the names it is known by: those it was needed by, its soname
}

// A search is one program's loader state.
type search struct {
	env    Env
	m      machine
	main   *object
	interp *object // the program's loader, loaded before any need; nil for none
	cache  []cacheEntry
}

// newSearch reads the program at path.
func newSearch(path string, env Env) (*search, error) {
	s := &search{env: env}
	a, dyn, err := readDynamic(path)
	if err != nil {
		return nil, err
	}
	m, ok := machines[a]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, elfx.ErrUnsupported)
	}
	s.m = m
	// The program's $ORIGIN is its directory with links resolved, as
	// the kernel names it in /proc/self/exe.
	origin := ""
	if abs, err := filepath.Abs(path); err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		origin = filepath.Dir(abs)
	}
	s.main = &object{path: path, origin: origin, dyn: dyn, names: []string{path}}
	if dyn.Interp != "" {
		// The loader itself is loaded, as the name in PT_INTERP and by
		// its soname, before any need is looked up.
		p := s.rooted(dyn.Interp)
		s.interp = &object{path: p, names: []string{dyn.Interp, filepath.Base(dyn.Interp)}}
		if _, d, err := readDynamic(p); err == nil && d.Soname != "" {
			s.interp.names = append(s.interp.names, d.Soname)
		}
	}
	s.cache = s.readCache()
	return s, nil
}

// readDynamic reads the architecture and the dynamic entries of the ELF
// file at path. The file is mapped, not read: only its headers and
// dynamic strings are looked at, and a library may be 100 MiB.
func readDynamic(path string) (arch.Arch, *elfx.Dynamic, error) {
	m, err := infile.Map(path)
	if err != nil {
		return arch.Unknown, nil, err
	}
	defer m.Close()
	f, err := elfx.Parse(path, m.Data)
	if err != nil {
		return arch.Unknown, nil, fmt.Errorf("%s: %w", path, err)
	}
	d, err := f.Dynamic() // copies what it keeps
	if err != nil {
		return arch.Unknown, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Arch, d, nil
}

// open reads the object at path, loaded by loader.
func (s *search) open(path string, loader *object) (*object, error) {
	_, dyn, err := readDynamic(path)
	if err != nil {
		return nil, err
	}
	o := &object{path: path, dyn: dyn, loader: loader}
	if abs, err := filepath.Abs(path); err == nil {
		o.origin = filepath.Dir(abs)
	}
	if dyn.Soname != "" {
		o.names = append(o.names, dyn.Soname)
	}
	return o, nil
}

// rooted is where an absolute path opens: under Root when the file is
// there, else the path itself (qemu-user's rule).
func (s *search) rooted(p string) string {
	if s.env.Root != "" && filepath.IsAbs(p) {
		if _, err := os.Stat(filepath.Join(s.env.Root, p)); err == nil {
			return filepath.Join(s.env.Root, p)
		}
	}
	return p
}

// find looks name up for the object l as the loader does: the path it
// would map and the step that found it.
func (s *search) find(name string, l *object) (string, Source) {
	if strings.Contains(name, "/") {
		if p := s.rooted(name); s.fits(p) {
			return p, Path
		}
		return "", NotFound
	}
	if s.interp != nil && slices.Contains(s.interp.names, name) {
		return s.interp.path, Loaded
	}
	if !l.dyn.HasRunpath {
		for o := l; o != nil; o = o.loader {
			if o.dyn.HasRpath {
				if p := s.inDirs(name, s.expand(o.dyn.Rpath, o)); p != "" {
					return p, RPATH
				}
			}
		}
	}
	if !s.env.Secure && s.env.LibraryPath != "" {
		if p := s.inDirs(name, s.expand(strings.ReplaceAll(s.env.LibraryPath, ";", ":"), nil)); p != "" {
			return p, LibraryPath
		}
	}
	if l.dyn.HasRunpath {
		if p := s.inDirs(name, s.expand(l.dyn.Runpath, l)); p != "" {
			return p, RUNPATH
		}
	}
	nodeflib := l.dyn.Flags1&elf.DF_1_NODEFLIB != 0
	for _, e := range s.cache {
		if e.key != name || e.flags != s.m.cacheFlags || e.hwcap != 0 {
			continue
		}
		if nodeflib && s.underDefault(e.value) {
			break
		}
		if p := s.rooted(e.value); s.fits(p) {
			return p, Cache
		}
		break // the loader tries the first entry only
	}
	if !nodeflib {
		if p := s.inDirs(name, s.m.defaults()); p != "" {
			return p, Default
		}
	}
	return "", NotFound
}

// inDirs is the first dirs/name that fits, or "".
func (s *search) inDirs(name string, dirs []string) string {
	for _, d := range dirs {
		if p := s.rooted(filepath.Join(d, name)); s.fits(p) {
			return p
		}
	}
	return ""
}

// expand splits a colon-separated search path and expands each
// element's dynamic string tokens for object o (nil: LD_LIBRARY_PATH,
// where $ORIGIN is the program's), dropping the elements the loader
// drops. An empty element is the current directory.
func (s *search) expand(list string, o *object) []string {
	if o == nil {
		o = s.main
	}
	var dirs []string
	for _, e := range strings.Split(list, ":") {
		if e == "" {
			e = "."
		}
		if d, ok := s.substitute(e, o); ok {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// substitute expands the tokens of one search path element as glibc's
// _dl_dst_substitute does: $ORIGIN (or ${ORIGIN}), $LIB and $PLATFORM,
// each ended by a character that cannot continue a name; another $ is
// kept as it is. In secure mode $ORIGIN counts only at the element's
// start, followed by '/' or its end, and in the program's own paths
// only where the result is in a trusted (default) directory; otherwise
// the element is dropped (false).
func (s *search) substitute(e string, o *object) (string, bool) {
	var b strings.Builder
	trusted := false
	for i := 0; i < len(e); i++ {
		if e[i] != '$' {
			b.WriteByte(e[i])
			continue
		}
		name, n := dst(e[i+1:])
		switch name {
		case "ORIGIN":
			end := i + 1 + n
			if s.env.Secure && (i != 0 || (end < len(e) && e[end] != '/')) {
				return "", false
			}
			if o.origin == "" {
				return "", false
			}
			b.WriteString(o.origin)
			trusted = s.env.Secure && o == s.main
		case "LIB":
			b.WriteString(s.m.lib())
		case "PLATFORM":
			b.WriteString(s.m.platform)
		default:
			b.WriteByte('$')
			continue
		}
		i += n
	}
	if trusted && !s.underDefault(b.String()) {
		return "", false
	}
	return b.String(), true
}

// dst reads a dynamic string token's name after a '$': NAME or {NAME}
// for the three the loader knows, and how many bytes it spans; "" for
// none.
func dst(in string) (string, int) {
	for _, name := range []string{"ORIGIN", "LIB", "PLATFORM"} {
		if strings.HasPrefix(in, "{"+name+"}") {
			return name, len(name) + 2
		}
		if rest, ok := strings.CutPrefix(in, name); ok && (rest == "" || !isNameByte(rest[0])) {
			return name, len(name)
		}
	}
	return "", 0
}

// isNameByte says whether c may continue a token's name.
func isNameByte(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// underDefault says whether path is in a default directory (glibc's
// trusted directories).
func (s *search) underDefault(path string) bool {
	path = filepath.Clean(path)
	for _, d := range s.m.defaults() {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// fits says whether the file at p is one the loader would take: an ELF
// shared object (ET_DYN) of the program's class (64-bit: elfx reads no
// other), byte order and machine.
func (s *search) fits(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	h := make([]byte, 20)
	if _, err := io.ReadFull(f, h); err != nil || string(h[:4]) != elf.ELFMAG {
		return false
	}
	return elf.Class(h[elf.EI_CLASS]) == elf.ELFCLASS64 && elf.Data(h[elf.EI_DATA]) == elf.ELFDATA2LSB &&
		elf.Type(uint16(h[16])|uint16(h[17])<<8) == elf.ET_DYN &&
		elf.Machine(uint16(h[18])|uint16(h[19])<<8) == s.m.elf
}
