package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUntrusted: another user than the process's effective user and root
// could change a file, or replace it or a directory on the way to it, so
// what it holds cannot be trusted: not as code to link (a cached or
// installed runtime), not as a place to build it. Returned as a
// *TrustError.
var ErrUntrusted = errors.New("another user could change or replace it")

// A TrustError is the file or directory that makes a path untrusted, and
// why.
type TrustError struct {
	Path string // the file or directory
	Why  string // what makes it so: "owned by uid 1000", "writable by its group (drwxrwxr-x)"
}

func (e *TrustError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Path, e.Why, ErrUntrusted) }

// Is makes errors.Is(err, ErrUntrusted) true.
func (e *TrustError) Is(target error) bool { return target == ErrUntrusted }

// sticky is S_ISVTX, a directory's sticky bit.
const sticky = syscall.S_ISVTX

// Trusted returns path, absolute and with every symbolic link followed as
// Resolve follows them (a link only where the kernel's protected_symlinks
// rule would follow it), when no user other than the process's effective
// user and root can change what it names, or replace it or a directory on
// the way to it:
//
//   - every directory from / down, and the file itself, is owned by root
//     or the effective user;
//   - none is writable by its group or others, except a sticky directory
//     (/tmp): there others may add names, but only a name's owner, the
//     directory's owner or root may rename or remove one, and the name
//     below it is root's or the effective user's by the first rule, so it
//     stays what it is. The file itself, unless it is a directory, is
//     writable by no one else, sticky or not.
//
// This is the kernel's reasoning for protected_symlinks carried along the
// whole path, as the runtime applies it to a setuid program's trace
// directory: a directory another user can write is one whose entries
// they can swap for their own. A path ending in a sticky directory is
// accepted: a name made in it must be checked in turn (CheckOwned).
//
// Otherwise the error is a *TrustError naming the first file or
// directory that fails (or the link Resolve refused), or Resolve's
// error (a missing file, a loop).
func Trusted(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	r, err := Resolve(abs)
	var le *LinkError
	if errors.As(err, &le) {
		return "", &TrustError{Path: le.Link, Why: fmt.Sprintf("a symbolic link of uid %d in %s, a sticky directory others can write, which protected_symlinks would not follow", le.LinkUID, le.Dir)}
	}
	if err != nil {
		return "", err
	}
	euid := uint32(os.Geteuid())
	p := "/"
	rest := strings.TrimPrefix(r, "/")
	for {
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return "", fmt.Errorf("%s: no file status on this system", p)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			// Resolve left none: one made since is another writer's.
			return "", &TrustError{Path: p, Why: "a symbolic link made while the path was checked"}
		case st.Uid != 0 && st.Uid != euid:
			return "", &TrustError{Path: p, Why: fmt.Sprintf("owned by uid %d, neither root nor this process's user (uid %d)", st.Uid, euid)}
		case st.Mode&0o022 != 0 && !(fi.IsDir() && st.Mode&sticky != 0):
			return "", &TrustError{Path: p, Why: writable(fi.Mode(), st.Mode)}
		}
		if rest == "" {
			return r, nil
		}
		name, after, _ := strings.Cut(rest, "/")
		p, rest = filepath.Join(p, name), after
	}
}

// CheckOwned checks that the file or directory path, of status fi (from
// Lstat, or Stat of the file opened with O_NOFOLLOW), is the process's
// effective user's own and writable by no one else: not a symbolic link,
// owned by the effective user (not root, unless the process is root's),
// with no write permission for its group or others. It is the rule for
// what a user's private store holds (the runtime cache's directories and
// files) below a directory Trusted accepts. The error is a *TrustError.
func CheckOwned(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no file status on this system", path)
	}
	euid := uint32(os.Geteuid())
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &TrustError{Path: path, Why: "a symbolic link"}
	case st.Uid != euid:
		return &TrustError{Path: path, Why: fmt.Sprintf("owned by uid %d, not by this process's user (uid %d)", st.Uid, euid)}
	case st.Mode&0o022 != 0:
		return &TrustError{Path: path, Why: writable(fi.Mode(), st.Mode)}
	}
	return nil
}

// writable says who besides the owner may write a file of mode m (raw,
// the st_mode bits).
func writable(fm fs.FileMode, m uint32) string {
	who := "others"
	switch {
	case m&0o022 == 0o022:
		who = "its group and others"
	case m&0o020 != 0:
		who = "its group"
	}
	return fmt.Sprintf("writable by %s (%v)", who, fm)
}
