package patch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"ftpatch/elfx"
)

// Options say which file to patch, how, and where to write it.
type Options struct {
	Path    string  // the linked executable or shared object
	Out     string  // where to write; "" patches Path in place (Run says what each keeps)
	Request Request // what to do
	// Progress, if not nil, is told how far reading the sites and
	// writing them have got (done of total, per stage).
	Progress func(done, total int)

	beforeCommit func() // tests: runs after the output is written, before the input is checked and the output renamed
}

// A Result says what Run did.
type Result struct {
	Binary *Binary
	Plan   *Plan
	// Written is the file written, or "" when none was: in place with
	// nothing to change, the file is left alone, mtime included.
	Written string
}

// Run patches one file: read, plan, apply, commit. The output is written
// atomically (temporary file beside it, fsync, rename); just before the
// rename the input, and an output being replaced, are checked to be as
// they were read, else ErrChanged and nothing is written. On any error
// no file is changed. The Result is returned with the error when there
// is one to show (the unmatched globs of ErrNoMatch).
//
// A file replaced (the input in place, or an existing Out) keeps all it
// had but its contents: mode with setuid and setgid, owner and group,
// extended attributes (ACLs, file capabilities), every symbolic link to it
// and its place behind them. What the rename could not keep is refused
// before any work: a file with other hard links (ErrLinks), a
// write-protected file or directory (ErrReadOnly), a file whose owner or
// attributes the writer cannot give a new file (elfx.ErrAttrs). A new Out
// gets the input's permission bits, without setuid or setgid, and belongs
// to whoever runs Run, as a copy would.
func Run(o Options) (*Result, error) {
	// Through a symbolic link, the file it names is patched; the link
	// stays a link.
	path, err := filepath.EvalSymlinks(o.Path)
	if err != nil {
		return nil, err
	}
	before, err := stampOf(path)
	if err != nil {
		return nil, err
	}
	if !before.mode.IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", o.Path)
	}
	dst, err := destinationOf(o, path, before)
	if err != nil {
		return nil, err
	}
	f, err := elfx.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := Load(f, o.Progress)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Path, err)
	}
	res := &Result{Binary: b}
	res.Plan, err = b.Plan(o.Request)
	if err != nil {
		return res, fmt.Errorf("%s: %w", o.Path, err)
	}
	if res.Plan.Unchanged && dst.inPlace {
		return res, nil
	}
	var applyErr error
	fill := func(w io.Writer) error {
		applyErr = b.Apply(res.Plan, w, o.Progress)
		return applyErr
	}
	check := func() error {
		if o.beforeCommit != nil {
			o.beforeCommit()
		}
		if now, err := stampOf(path); err != nil || now != before {
			return fmt.Errorf("%s: %w (modified, replaced or removed since it was read); nothing written: run again", o.Path, ErrChanged)
		}
		if dst.inPlace {
			return nil
		}
		now, err := stampOf(dst.path)
		switch {
		case dst.existed && (err != nil || now != dst.stamp):
			return fmt.Errorf("%s: %w (modified, replaced or removed since ftpatch looked at it); nothing written: run again", o.Out, ErrChanged)
		case !dst.existed && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s: %w (created by someone else meanwhile); nothing written: run again", o.Out, ErrChanged)
		}
		return nil
	}
	if err := elfx.WriteFileChecked(dst.path, dst.attrs, check, fill); err != nil {
		switch {
		case applyErr != nil:
			return res, fmt.Errorf("%s: %w", o.Path, applyErr)
		case errors.Is(err, ErrChanged):
			return res, err
		case errors.Is(err, elfx.ErrAttrs):
			return res, fmt.Errorf("%s: %w; nothing written: run as the file's owner or as root, or %s", dst.name, err, dst.instead)
		}
		return res, fmt.Errorf("writing %s: %w", dst.path, err)
	}
	res.Written = dst.path
	return res, nil
}

// A destination is the file Run writes and what it must keep.
type destination struct {
	name    string // as the user gave it, for messages
	path    string // symbolic links followed
	inPlace bool   // path is the input itself (no Out, or Out names the input)
	existed bool   // path exists: it is replaced, keeping its attributes
	stamp   stamp  // path's, when it existed
	attrs   elfx.Attrs
	instead string // what to do when path cannot be written
}

// destinationOf finds where o writes (in is the input's path, links
// followed, and st its status) and refuses, before any work is done, what
// an atomic replacement would lose.
func destinationOf(o Options, in string, st stamp) (*destination, error) {
	d := &destination{name: o.Path, path: in, inPlace: true, existed: true, stamp: st,
		instead: "write a new file with -o OUT"}
	if o.Out != "" {
		p, err := filepath.EvalSymlinks(o.Out)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if fi, lerr := os.Lstat(o.Out); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
				to, _ := os.Readlink(o.Out)
				return nil, fmt.Errorf("%s: a symbolic link to %s, which does not exist: ftpatch writes through a link, not over it; remove the link or choose another OUT", o.Out, to)
			}
			d = &destination{name: o.Out, path: o.Out, attrs: elfx.NewAttrs(st.mode.Perm()),
				instead: "choose another OUT"}
			return d, writableDir(d)
		case err != nil:
			return nil, err
		}
		ost, err := stampOf(p)
		if err != nil {
			return nil, err
		}
		if ost.dev != st.dev || ost.ino != st.ino {
			d = &destination{name: o.Out, path: p, existed: true, stamp: ost,
				instead: "choose another OUT"}
		}
	}
	if !d.stamp.mode.IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file: ftpatch only replaces regular files", d.name)
	}
	if d.stamp.nlink > 1 {
		hint := "remove " + d.path + " first or choose another OUT"
		if d.inPlace {
			hint = fmt.Sprintf("write a new file with -o OUT, or first give the file a copy of its own: cp %[1]s %[1]s.new && mv %[1]s.new %[1]s", d.path)
		}
		return nil, fmt.Errorf("%s: %w (%d names for one file): replacing it would leave the others naming the old contents; %s", d.name, ErrLinks, d.stamp.nlink, hint)
	}
	if err := unix.Faccessat(unix.AT_FDCWD, d.path, unix.W_OK, unix.AT_EACCESS); err != nil {
		return nil, fmt.Errorf("%s: %w (mode %v: %v): ftpatch does not replace a write-protected file; make it writable (chmod u+w), or %s", d.name, ErrReadOnly, d.stamp.mode, err, d.instead)
	}
	if err := writableDir(d); err != nil {
		return nil, err
	}
	a, err := elfx.AttrsOf(d.path)
	if err != nil {
		return nil, err
	}
	d.attrs = a
	return d, nil
}

// writableDir checks that the new file can be made beside d's path and
// renamed over it.
func writableDir(d *destination) error {
	dir := filepath.Dir(d.path)
	err := unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%s: directory %s: %v", d.name, dir, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: directory %s: %v: the new file is written beside it, then renamed over it; %s", d.name, ErrReadOnly, dir, err, d.instead)
	}
	return nil
}

// A stamp is what changes when anyone writes, replaces, links or chmods a
// file: its identity, link count, size, and modification and change times
// (ctime cannot be set back by the writer).
type stamp struct {
	dev, ino     uint64
	nlink        uint64
	size         int64
	mtime, ctime syscall.Timespec
	mode         os.FileMode
}

func stampOf(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}, fmt.Errorf("%s: no file status on this system", path)
	}
	return stamp{dev: st.Dev, ino: st.Ino, nlink: uint64(st.Nlink), size: st.Size, mtime: st.Mtim, ctime: st.Ctim, mode: fi.Mode()}, nil
}
