package patch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"ftpatch/elfx"
)

// Options say which file to patch, how, and where to write it.
type Options struct {
	Path    string  // the linked executable or shared object
	Out     string  // where to write; "" patches Path in place
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
// atomically (temporary file, fsync, rename) with the input's mode; just
// before the rename the input is checked to be as it was read, else
// ErrChanged and nothing is written. On any error no file is changed.
// The Result is returned with the error when there is one to show (the
// unmatched globs of ErrNoMatch).
func Run(o Options) (*Result, error) {
	path := o.Path
	if o.Out == "" {
		// In place through a symbolic link: replace the file it names,
		// not the link.
		p, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, err
		}
		path = p
	}
	before, err := stampOf(path)
	if err != nil {
		return nil, err
	}
	if !before.mode.IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", o.Path)
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
	if res.Plan.Unchanged && o.Out == "" {
		return res, nil
	}
	out := path
	if o.Out != "" {
		out = o.Out
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
		now, err := stampOf(path)
		if err != nil || now != before {
			return fmt.Errorf("%s: %w (modified, replaced or removed since it was read); nothing written: run again", o.Path, ErrChanged)
		}
		return nil
	}
	perm := before.mode & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
	if err := elfx.WriteFileChecked(out, elfx.NewAttrs(perm), check, fill); err != nil {
		switch {
		case applyErr != nil:
			return res, fmt.Errorf("%s: %w", o.Path, applyErr)
		case errors.Is(err, ErrChanged):
			return res, err
		}
		return res, fmt.Errorf("writing %s: %w", out, err)
	}
	res.Written = out
	return res, nil
}

// A stamp is what changes when anyone writes, replaces or chmods a file:
// its identity, size, and modification and change times (ctime cannot be
// set back by the writer).
type stamp struct {
	dev, ino     uint64
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
	return stamp{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim, mode: fi.Mode()}, nil
}
