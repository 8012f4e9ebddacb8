package patch

import (
	"fmt"
	"io"

	"ftpatch/elfx"
	"ftpatch/outfile"
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
// by package outfile, whose Plan says what each file keeps and what is
// refused: atomically (temporary file beside it, fsync, rename), and just
// before the rename the input, and an output being replaced, are checked
// to be as they were read, else outfile.ErrChanged and nothing is
// written. On any error no file is changed. The Result is returned with
// the error when there is one to show (the unmatched globs of
// ErrNoMatch).
//
// A file replaced (the input in place, or an existing Out) keeps all it
// had but its contents: mode with setuid and setgid, owner and group,
// extended attributes (ACLs, file capabilities), every symbolic link to it
// and its place behind them. What the rename could not keep is refused
// before any work: a file with other hard links (outfile.ErrLinks), a
// write-protected file or directory (outfile.ErrReadOnly), a file whose
// owner or attributes the writer cannot give a new file
// (outfile.ErrAttrs), a symbolic link another user planted in a sticky
// directory (outfile.ErrProtectedLink). A new Out gets the input's
// permission bits, without setuid or setgid, and belongs to whoever runs
// Run, as a copy would.
func Run(o Options) (*Result, error) {
	out, err := outfile.Plan(o.Path, o.Out)
	if err != nil {
		return nil, err
	}
	out.BeforeCheck = o.beforeCommit
	f, err := elfx.Open(out.In)
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
	if res.Plan.Unchanged && out.InPlace {
		return res, nil
	}
	var applyErr error
	err = out.Write(func(w io.Writer) error {
		applyErr = b.Apply(res.Plan, w, o.Progress)
		return applyErr
	})
	switch {
	case applyErr != nil:
		return res, fmt.Errorf("%s: %w", o.Path, applyErr)
	case err != nil:
		return res, err
	}
	res.Written = out.Path
	return res, nil
}
