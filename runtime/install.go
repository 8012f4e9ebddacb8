package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"ftpatch/arch"
	"ftpatch/infile"
	"ftpatch/outfile"
)

// An installed runtime (make install) lies under a prefix, such as
// /usr/local, as
//
//	lib/ftpatch/ARCH/libftrt.a         the archives, built at install
//	lib/ftpatch/ARCH/libftrt-module.a
//	lib/ftpatch/ARCH/libftrt.so        the runtime to preload (SharedLibName)
//	lib/ftpatch/ARCH/SHA256SUMS        their digests as built (digest.go)
//	lib/ftpatch/ARCH/version           Version() of the sources they were built from
//	include/ftpatch/ftrace.h           Header, the same for every architecture
//	lib/pkgconfig/NAME.pc              PkgConfigName: ftrt, ftrt-module (and -ARCH)
//
// The archives and the header sit in directories of ftpatch's own, not
// in the prefix's lib/ and include/ themselves: the archives are linked
// by their path (LinkFlags), never found with -l, and ftrace.h is a
// common name. `ftpatch flags --cflags` and `pkg-config --cflags ftrt`
// both name include/ftpatch, so a program includes <ftrace.h> either way.

// VersionFile is the file beside an installed runtime's archives that
// says which sources they were built from (Version()).
const VersionFile = "version"

// InstallDir is where the archives of arch a lie under prefix.
func InstallDir(prefix string, a arch.Arch) string {
	return filepath.Join(prefix, "lib", "ftpatch", a.String())
}

// InstallInclude is the directory of Header under prefix.
func InstallInclude(prefix string) string { return filepath.Join(prefix, "include", "ftpatch") }

// PkgConfigDir is the directory of the pkg-config files under prefix.
func PkgConfigDir(prefix string) string { return filepath.Join(prefix, "lib", "pkgconfig") }

// PkgConfigName is the pkg-config name of the runtime of arch a: ftrt
// for a program, ftrt-module for a shared object (shared; as
// `ftpatch flags --shared`), with -ARCH after it for another
// architecture than arch.Default (as `ftpatch flags --arch ARCH`): a
// build for arm64 names ftrt-arm64 where it names its cross compiler.
func PkgConfigName(a arch.Arch, shared bool) string {
	name := "ftrt"
	if shared {
		name = "ftrt-module"
	}
	if a != arch.Default {
		name += "-" + a.String()
	}
	return name
}

// A Lib is a runtime ready to link: its archive (the module stub's lies
// beside it: ModulePath) and the directory of its Header.
type Lib struct {
	Archive string
	Include string
	// Shared is the runtime built as a shared object, beside the
	// archive: what `ftpatch record` preloads into a program that has
	// sites but was linked without the runtime.
	Shared string
	// Scratch, when not "", is the private directory Cached built this
	// runtime into for one use, the cache being untrusted: the caller
	// removes it once the runtime is linked.
	Scratch string
}

// Install builds the runtime of o.Arch and writes it under prefix as
// laid out above: the archives, VersionFile, Header and the pkg-config
// files of o.Arch (for a program and for a shared object), whose Version
// field is version. Every path the files name is under prefix; the files
// themselves are written under destdir+prefix (make install's DESTDIR:
// a staging directory whose tree is later copied to /). Each file is
// written atomically.
func Install(ctx context.Context, o Options, prefix, destdir, version string) error {
	if !filepath.IsAbs(prefix) {
		return fmt.Errorf("install prefix %q: not an absolute path", prefix)
	}
	o.defaults()
	root := destdir + prefix
	o.Dir = InstallDir(root, o.Arch)
	sums, err := buildArchives(ctx, o)
	if err != nil {
		return err
	}
	if err := writeSums(o.Dir, installFiles, sums); err != nil {
		return err
	}
	if err := outfile.WriteFile(filepath.Join(o.Dir, VersionFile), 0o644, []byte(Version()+"\n")); err != nil {
		return err
	}
	if err := writeHeader(InstallInclude(root)); err != nil {
		return err
	}
	if err := os.MkdirAll(PkgConfigDir(root), 0o755); err != nil {
		return err
	}
	for _, shared := range []bool{false, true} {
		pc := PkgConfig(o.Arch, shared, prefix, version)
		if err := outfile.WriteFile(filepath.Join(PkgConfigDir(root), PkgConfigName(o.Arch, shared)+".pc"), 0o644, []byte(pc)); err != nil {
			return err
		}
	}
	return nil
}

// PkgConfig is the pkg-config file of the runtime of arch a installed
// under prefix: its Cflags and Libs are what `ftpatch flags --cflags`
// and `--libs` print (with --shared for shared), from the same
// functions, with the paths written from ${prefix} so that
// `pkg-config --define-prefix` (or --define-variable=prefix=...) finds a
// relocated or staged install.
func PkgConfig(a arch.Arch, shared bool, prefix, version string) string {
	const archive = "${archivedir}/" + LibName
	cflags := CFlags(a)
	libs := LinkFlags(archive)
	what := "a program"
	if shared {
		cflags = append(cflags, "-fPIC")
		libs = ModuleLinkFlags(archive)
		what = "a shared object (the module stub: the program links " + PkgConfigName(a, false) + ")"
	}
	cflags = append(cflags, "-I${includedir}")
	var b strings.Builder
	fmt.Fprintf(&b, "# The ftpatch runtime for %s on %v: what `ftpatch flags%s` prints.\n", what, a, flagsArgs(a, shared))
	fmt.Fprintf(&b, "prefix=%s\n", prefix)
	fmt.Fprintf(&b, "includedir=%s\n", InstallInclude("${prefix}"))
	fmt.Fprintf(&b, "archivedir=%s\n\n", InstallDir("${prefix}", a))
	fmt.Fprintf(&b, "Name: %s\n", PkgConfigName(a, shared))
	fmt.Fprintf(&b, "Description: ftpatch's runtime for %s on %v: compile with Cflags, link with Libs, trace with FTRACE=function\n", what, a)
	fmt.Fprintf(&b, "Version: %s\n", version)
	fmt.Fprintf(&b, "Cflags: %s\n", strings.Join(cflags, " "))
	fmt.Fprintf(&b, "Libs: %s\n", strings.Join(libs, " "))
	return b.String()
}

// flagsArgs are the arguments of `ftpatch flags` that select the same
// runtime as PkgConfigName(a, shared).
func flagsArgs(a arch.Arch, shared bool) string {
	s := ""
	if a != arch.Default {
		s += " --arch " + a.String()
	}
	if shared {
		s += " --shared"
	}
	return s
}

// installFiles are the files of an installed runtime that its
// SHA256SUMS lists.
var installFiles = []string{LibName, ModuleLibName, SharedLibName}

// ErrOtherVersion: an installed runtime was built from other sources
// than this binary's.
var ErrOtherVersion = errors.New("built from other sources than this ftpatch's")

// maxVersionFile bounds what Installed reads of VersionFile.
const maxVersionFile = 256 // bytes

// Installed returns the runtime of arch a installed under prefix when it
// is complete, was built from this binary's sources (its VersionFile
// says Version()), is as built (its archives' digests are the ones its
// SHA256SUMS records, its header this binary's) and can be trusted: each
// of its files, and every directory on the way to it, passes
// outfile.Trusted (root's or the user's, writable by no one else), so
// that no other user could have put code of theirs in it. This is the
// cache's rule, but for the owner: an install is root's, whoever runs
// ftpatch, and root can change any file anyway. Otherwise the error
// wraps fs.ErrNotExist when there is none (or a part is missing),
// ErrOtherVersion when it is another version's, outfile.ErrUntrusted
// when another user could have changed it, errDigest when a file is not
// as built.
func Installed(prefix string, a arch.Arch) (Lib, error) {
	dir, err := outfile.Trusted(InstallDir(prefix, a))
	if err != nil {
		return Lib{}, err
	}
	inc, err := outfile.Trusted(InstallInclude(prefix))
	if err != nil {
		return Lib{}, err
	}
	f, fi, err := openTrusted(filepath.Join(dir, VersionFile))
	if err != nil {
		return Lib{}, err
	}
	v, err := io.ReadAll(io.LimitReader(f, maxVersionFile+1))
	f.Close()
	if err != nil {
		return Lib{}, err
	}
	if len(v) > maxVersionFile {
		return Lib{}, fmt.Errorf("%s: %d bytes, more than a version", filepath.Join(dir, VersionFile), fi.Size())
	}
	if got := strings.TrimSpace(string(v)); got != Version() {
		return Lib{}, fmt.Errorf("the runtime under %s: %w (version %.20q, this one's is %s)", prefix, ErrOtherVersion, got, Version())
	}
	if err := checkSums(dir, installFiles, openTrusted); err != nil {
		return Lib{}, err
	}
	if err := checkHeader(filepath.Join(inc, Header), openTrusted); err != nil {
		return Lib{}, err
	}
	return Lib{Archive: filepath.Join(dir, LibName), Include: inc, Shared: filepath.Join(dir, SharedLibName)}, nil
}

// openTrusted opens the regular file path, where its links lead, when it
// passes outfile.Trusted.
func openTrusted(path string) (*os.File, fs.FileInfo, error) {
	r, err := outfile.Trusted(path)
	if err != nil {
		return nil, nil, err
	}
	return infile.OpenNoFollow(r)
}

// Find returns the runtime to link for o: the one installed under
// prefix (the prefix of the running ftpatch) when o names no compiler
// and Installed finds it, else the cache's (Cached), built there on
// first use. An empty prefix skips the installed one. An installed
// runtime refused because another user could have changed it, or not
// as built, is named in o.Notes.
func Find(ctx context.Context, o Options, prefix string) (Lib, error) {
	if o.Arch == arch.Unknown {
		o.Arch = arch.Default
	}
	if prefix != "" && len(o.CC) == 0 {
		l, err := Installed(prefix, o.Arch)
		if err == nil {
			return l, nil
		}
		if errors.Is(err, outfile.ErrUntrusted) || errors.Is(err, errDigest) {
			note(o.Notes, "not using the runtime installed under %s (%v): using the cache's", prefix, err)
		}
	}
	return Cached(ctx, o)
}
