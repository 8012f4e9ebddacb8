package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"ftpatch/infile"
	"ftpatch/outfile"
)

// Cached keeps the runtimes it builds in the user's cache directory
// (CACHE: Options.Cache, else $XDG_CACHE_HOME, else ~/.cache), an entry
// per key:
//
//	CACHE/ftpatch/runtime/KEY/libftrt.a
//	CACHE/ftpatch/runtime/KEY/libftrt-module.a
//	CACHE/ftpatch/runtime/KEY/libftrt.so       the runtime to preload
//	CACHE/ftpatch/runtime/KEY/include/ftrace.h
//	CACHE/ftpatch/runtime/KEY/SHA256SUMS   the four files' digests as built (sha256sum's format)
//	CACHE/ftpatch/runtime/.lock            held while an entry is built
//
// KEY is the sources' Version, the architecture and a hash of the
// compiler command and its version line.
//
// What an entry holds is linked into programs (and the header compiled
// into them), so it is code that runs as whoever runs them: a configure
// script's probes run at once, as whoever builds. An entry is used only
// when no other user could have put it there or changed it:
//
//   - CACHE and every directory above it pass outfile.Trusted: root's or
//     the user's, writable by no one else (a sticky directory such as
//     /tmp excepted, whose names only their owners may move);
//   - ftpatch/, ftpatch/runtime/, the entry, its include directory and
//     its five files are the user's own and writable by no one else
//     (outfile.CheckOwned), the files regular and reached without a link;
//   - each file's SHA-256 digest is the one SHA256SUMS recorded when the
//     entry was built (the header's is also the one embedded in ftpatch).
//
// An entry that fails is built again, whole, into a new private
// directory beside it, which is then renamed into its place (the old one
// renamed aside and removed). Builds take the lock, so that concurrent
// ones (make -j) build an entry once and never replace one that is good.
// A cache that fails the first two rules is not used at all: the runtime
// is built into a new private directory under the temporary directory,
// for one use (Lib.Scratch).
const lockFile = ".lock"

// entryFiles are the files of a cache entry, as SHA256SUMS names them.
var entryFiles = []string{LibName, ModuleLibName, "include/" + Header, SharedLibName}

// Cached returns the runtime built for o in the cache, building it there
// on first use, or again when the entry there cannot be trusted; when the
// cache itself cannot be, it builds the runtime for this use alone into a
// private directory (Lib.Scratch, which the caller removes when done)
// and says so in o.Notes, as it says why it rebuilt an entry.
func Cached(ctx context.Context, o Options) (Lib, error) {
	o.defaults()
	base := o.Cache
	if base == "" {
		var err error
		if base, err = os.UserCacheDir(); err != nil {
			return Lib{}, fmt.Errorf("no cache directory: %w (set XDG_CACHE_HOME or HOME)", err)
		}
	}
	key, err := cacheKey(ctx, o)
	if err != nil {
		return Lib{}, err
	}
	dir, err := cacheDir(base, o.Notes)
	if errors.Is(err, outfile.ErrUntrusted) {
		return scratch(ctx, o, fmt.Sprintf("not using the runtime cache in %s (%v)", base, err))
	}
	if err != nil {
		return Lib{}, fmt.Errorf("the runtime cache in %s: %w", base, err)
	}
	if l, err := verify(filepath.Join(dir, key)); err == nil {
		return l, nil
	}
	return rebuild(ctx, o, dir, key)
}

// cacheKey names o's entry: the sources' version, the architecture, and
// a hash of the compiler command and the first line of its --version, so
// that a new ftpatch or a new compiler gets a fresh build.
func cacheKey(ctx context.Context, o Options) (string, error) {
	ver, err := exec.CommandContext(ctx, o.CC[0], append(o.CC[1:], "--version")...).Output()
	if err != nil {
		return "", fmt.Errorf("C compiler %q: %w", strings.Join(o.CC, " "), err)
	}
	first, _, _ := strings.Cut(string(ver), "\n")
	h := sha256.Sum256([]byte(strings.Join(o.CC, " ") + "\n" + first))
	return fmt.Sprintf("%s-%v-%s", Version(), o.Arch, hex.EncodeToString(h[:])[:12]), nil
}

// cacheDir returns base/ftpatch/runtime, its links followed, making what
// is missing (0700), when the cache can be trusted: base and the
// directories above it pass outfile.Trusted, ftpatch/ and runtime/ are
// the user's own. Those two, when the user's but writable by the group
// or others (an older ftpatch made them under the umask, 002 on many
// systems), are narrowed first, and notes says so: what they hold is
// checked as always. An error wrapping outfile.ErrUntrusted says what
// cannot be trusted.
func cacheDir(base string, notes io.Writer) (string, error) {
	dir, err := mkdirTrusted(base)
	if err != nil {
		return "", err
	}
	for _, name := range []string{"ftpatch", "runtime"} {
		dir = filepath.Join(dir, name)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", &outfile.TrustError{Path: dir, Why: "not a directory (" + infile.Kind(fi.Mode()) + ")"}
		}
		err = outfile.CheckOwned(dir, fi)
		if err != nil && owner(fi) == os.Geteuid() {
			mode := fi.Mode().Perm() &^ 0o022
			if err = os.Chmod(dir, mode); err == nil {
				note(notes, "%s was writable by others than you (%v): made it %v", dir, fi.Mode(), fs.ModeDir|mode)
				continue
			}
		}
		if err != nil {
			return "", err
		}
	}
	return dir, nil
}

// mkdirTrusted makes the directory path where it is missing (0700, each
// missing directory made only under one outfile.Trusted accepted) and
// returns it as outfile.Trusted does.
func mkdirTrusted(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var missing []string
	p := abs
	for {
		_, err := os.Lstat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || p == filepath.Dir(p) {
			return "", err
		}
		missing = append(missing, filepath.Base(p))
		p = filepath.Dir(p)
	}
	r, err := outfile.Trusted(p)
	if err != nil {
		return "", err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		r = filepath.Join(r, missing[i])
		if err := os.Mkdir(r, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return outfile.Trusted(r)
}

// owner is the uid that owns the file of status fi.
func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// verify returns the runtime of the cache entry when the entry passes the
// rules above.
func verify(entry string) (Lib, error) {
	for _, d := range []string{entry, IncludeDir(entry)} {
		fi, err := os.Lstat(d)
		if err != nil {
			return Lib{}, err
		}
		if err := outfile.CheckOwned(d, fi); err != nil {
			return Lib{}, err
		}
		if !fi.IsDir() {
			return Lib{}, fmt.Errorf("%s: not a directory (%s)", d, infile.Kind(fi.Mode()))
		}
	}
	if err := checkSums(entry, entryFiles, openOwned); err != nil {
		return Lib{}, err
	}
	if err := checkHeader(filepath.Join(entry, entryFiles[2]), openOwned); err != nil {
		return Lib{}, err
	}
	return Lib{Archive: filepath.Join(entry, LibName), Include: IncludeDir(entry), Shared: filepath.Join(entry, SharedLibName)}, nil
}

// openOwned opens the regular file path, not following a link, when it
// is the user's own and writable by no one else.
func openOwned(path string) (*os.File, fs.FileInfo, error) {
	f, fi, err := infile.OpenNoFollow(path)
	if err != nil {
		return nil, nil, err
	}
	if err := outfile.CheckOwned(path, fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// buildEntry builds the runtime of o into o.Dir, a new directory, as a
// cache entry: the archives, the header and SHA256SUMS, the digests of
// the three as written.
func buildEntry(ctx context.Context, o Options) error {
	sums, err := buildArchives(ctx, o)
	if err != nil {
		return err
	}
	if err := writeHeader(IncludeDir(o.Dir)); err != nil {
		return err
	}
	h, err := digest(filepath.Join(IncludeDir(o.Dir), Header), openOwned)
	if err != nil {
		return err
	}
	sums[entryFiles[2]] = h
	return writeSums(o.Dir, entryFiles, sums)
}

// rebuild builds the entry key in the cache directory dir, under the
// lock: unless another build made it good meanwhile, it is built whole
// into a new private directory beside it, then renamed into its place,
// what was there renamed aside first and removed.
func rebuild(ctx context.Context, o Options, dir, key string) (Lib, error) {
	unlock, err := lock(dir)
	if err != nil {
		return Lib{}, err
	}
	defer unlock()
	entry := filepath.Join(dir, key)
	l, err := verify(entry)
	if err == nil {
		return l, nil
	}
	if _, lerr := os.Lstat(entry); lerr == nil {
		note(o.Notes, "not using the cached runtime in %s (%v): building it again", entry, err)
	}
	sweep(dir)
	tmp, err := os.MkdirTemp(dir, key+".new-")
	if err != nil {
		return Lib{}, err
	}
	defer os.RemoveAll(tmp) // when not renamed into place
	o.Dir = tmp
	if err := buildEntry(ctx, o); err != nil {
		return Lib{}, err
	}
	if _, err := os.Lstat(entry); err == nil {
		aside := entry + ".old-" + strings.TrimPrefix(filepath.Base(tmp), key+".new-")
		if err := os.Rename(entry, aside); err != nil {
			return Lib{}, fmt.Errorf("moving the cached runtime aside: %w", err)
		}
		defer os.RemoveAll(aside)
	}
	if err := os.Rename(tmp, entry); err != nil {
		return Lib{}, fmt.Errorf("the runtime cache: %w", err)
	}
	outfile.SyncDir(dir)
	return verify(entry)
}

// lock takes the cache directory dir's lock, waiting for a build under
// way in another process, and returns what releases it. A lock file
// that is not the user's own (another user could hold it for ever) is
// replaced.
func lock(dir string) (func(), error) {
	p := filepath.Join(dir, lockFile)
	for try := 0; ; try++ {
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			var fi fs.FileInfo
			if fi, err = f.Stat(); err == nil {
				err = outfile.CheckOwned(p, fi)
			}
			if err == nil {
				for err = unix.Flock(int(f.Fd()), unix.LOCK_EX); errors.Is(err, unix.EINTR); {
					err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
				}
				if err == nil {
					return func() { f.Close() }, nil
				}
			}
			f.Close()
		}
		if try > 0 {
			return nil, fmt.Errorf("locking the runtime cache: %w", err)
		}
		os.Remove(p)
	}
}

// sweep removes from the cache directory dir what builds cut short left
// behind: new entries never renamed into place, old ones never removed.
// It runs under the lock, when no build is under way.
func sweep(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".new-") || strings.Contains(e.Name(), ".old-") {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// scratch builds the runtime of o for one use into a new private
// directory under the temporary directory, the cache being untrusted
// (why), and says so.
func scratch(ctx context.Context, o Options, why string) (Lib, error) {
	tmp, err := outfile.Trusted(os.TempDir())
	if err != nil {
		return Lib{}, fmt.Errorf("%s; nor can the temporary directory be: %w", why, err)
	}
	dir, err := os.MkdirTemp(tmp, "ftpatch-runtime-")
	if err != nil {
		return Lib{}, err
	}
	o.Dir = dir
	if err := buildEntry(ctx, o); err != nil {
		os.RemoveAll(dir)
		return Lib{}, err
	}
	note(o.Notes, "%s; built the runtime into %s for this command alone (point XDG_CACHE_HOME at a directory of yours that no one else can write, in directories they cannot change)", why, dir)
	return Lib{Archive: filepath.Join(dir, LibName), Include: IncludeDir(dir), Shared: filepath.Join(dir, SharedLibName), Scratch: dir}, nil
}

// note writes one line to w, when there is one.
func note(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "ftpatch: "+format+"\n", args...)
	}
}
