// Package outfile writes the files the tools produce (ftpatch enable and
// disable, recordmcount) atomically and without losing anything a user
// had: the new contents go to a temporary file beside the one they
// replace, which is given the old file's mode, owner, group and extended
// attributes, synced, checked, and renamed over it. A reader sees the old
// file or the new one, never a part.
//
// Plan decides, before any work, where the output goes and whether it
// can be written without loss: a symbolic link is followed only where the
// kernel would follow it (Resolve), a file with other hard links or a
// write-protected one is refused rather than split or overwritten, and
// something other than a regular file is refused. Just before the rename
// the input, and an existing output, are checked to be as they were when
// planned: nothing is written over another writer's work.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"ftpatch/infile"
)

// Errors callers branch on; each is wrapped with the file's name and
// what to do.
var (
	// ErrChanged: the input, or an existing output, changed after Plan
	// looked at it (written, replaced, removed, or an output created by
	// someone else); nothing was written.
	ErrChanged = errors.New("file changed while being rewritten")
	// ErrLinks: the file to be replaced has other names (hard links),
	// which the atomic replacement, a new file, would leave naming the
	// old contents. Refused, never split silently.
	ErrLinks = errors.New("the file has other hard links")
	// ErrReadOnly: the file to be replaced is write-protected, or its
	// directory is not writable (the new file is made beside it). A
	// rename could replace a write-protected file; the tools do not.
	ErrReadOnly = errors.New("not writable")
)

// An Output is the planned result of a tool that reads one file and
// writes one: where the new file goes and what it keeps. Plan makes it;
// Write, WriteChunks or Start then write it, once.
type Output struct {
	In      string // the input, symbolic links followed (Resolve)
	InName  string // the input as the user named it, for messages
	Path    string // where the new file goes, symbolic links followed
	Name    string // the output as the user named it, for messages
	InPlace bool   // Path is the input itself (no output named, or one naming the input)
	Existed bool   // Path exists and is replaced, keeping Attrs
	Attrs   Attrs  // what the new file is given: the replaced file's, or a new file's
	// DeferDirSync leaves the directory sync after the rename to the
	// caller, who replaces many files in one directory and syncs it once
	// (SyncDir) after the last: the rename is atomic either way, and the
	// sync only makes it durable.
	DeferDirSync bool
	// BeforeCheck, if not nil, runs after the new contents are synced and
	// just before the last check and the rename (tests: another writer
	// racing the tool).
	BeforeCheck func()

	in, out Stamp  // In's and (when it existed) Path's, as planned
	instead string // what to do when Path cannot be written
}

// Plan plans the output of a tool that reads the file named in and
// writes its result to out, or in place when out is "" or names the
// input itself (by any name), and refuses before any work what could not
// be written whole and without loss:
//
//   - a symbolic link is followed, so the file it names is replaced and
//     the link stays a link; but not one the kernel's protected_symlinks
//     rule would refuse (a *LinkError: another user's link in a sticky
//     world-writable directory such as /tmp), and not a dangling out,
//     which would create a file where the link points;
//   - a file replaced keeps its mode (setuid and setgid included), owner,
//     group and extended attributes (ACLs, file capabilities, SELinux
//     label): Attrs, read now; when the writer cannot give them, the
//     write fails with ErrAttrs and nothing is written;
//   - a file with other hard links (ErrLinks), a write-protected file or
//     one in a directory the writer cannot write (ErrReadOnly), and
//     anything other than a regular file (infile.ErrNotRegular) are
//     refused;
//   - a new out gets the input's permission bits without setuid or
//     setgid, and belongs to the writer, as a copy made by cp would.
//
// Errors start with the name the user gave; a missing or unreadable input
// is an *os.PathError.
func Plan(in, out string) (*Output, error) {
	inPath, err := Resolve(in)
	if err != nil {
		return nil, named(in, err)
	}
	inSt, err := StampOf(inPath)
	if err != nil {
		return nil, err
	}
	if !inSt.Mode.IsRegular() {
		return nil, &infile.NotRegularError{Path: in, Mode: inSt.Mode}
	}
	o := &Output{In: inPath, InName: in, Path: inPath, Name: in, InPlace: true, Existed: true,
		in: inSt, out: inSt, instead: "write a new file with -o OUT"}
	if out != "" {
		p, err := Resolve(out)
		if errors.Is(err, fs.ErrNotExist) {
			if fi, lerr := os.Lstat(out); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
				to, _ := os.Readlink(out)
				return nil, fmt.Errorf("%s: a symbolic link to %s, which does not exist: the file a link names is replaced, never the link itself; remove the link or choose another OUT", out, to)
			}
		}
		switch {
		case errors.Is(err, fs.ErrNotExist) && p != "":
			o = &Output{In: inPath, InName: in, Path: p, Name: out, Attrs: NewAttrs(inSt.Mode.Perm()),
				in: inSt, instead: "choose another OUT"}
			return o, o.writableDir()
		case err != nil:
			var pe *os.PathError
			if errors.As(err, &pe) && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
				return nil, fmt.Errorf("%s: directory %s: %w", out, pe.Path, pe.Err)
			}
			return nil, named(out, err)
		}
		ost, err := StampOf(p)
		if err != nil {
			return nil, err
		}
		if ost.Dev != inSt.Dev || ost.Ino != inSt.Ino {
			o = &Output{In: inPath, InName: in, Path: p, Name: out, Existed: true,
				in: inSt, out: ost, instead: "choose another OUT"}
		}
	}
	if !o.out.Mode.IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s): only a regular file is replaced", o.Name, infile.ErrNotRegular, infile.Kind(o.out.Mode))
	}
	if o.out.Nlink > 1 {
		hint := "remove " + o.Path + " first or choose another OUT"
		if o.InPlace {
			hint = fmt.Sprintf("write a new file with -o OUT, or first give the file a copy of its own: cp %[1]s %[1]s.new && mv %[1]s.new %[1]s", o.Path)
		}
		return nil, fmt.Errorf("%s: %w (%d names for one file): replacing it would leave the others naming the old contents; %s", o.Name, ErrLinks, o.out.Nlink, hint)
	}
	if err := unix.Faccessat(unix.AT_FDCWD, o.Path, unix.W_OK, unix.AT_EACCESS); err != nil {
		return nil, fmt.Errorf("%s: %w (mode %v: %v): a write-protected file is not replaced; make it writable (chmod u+w), or %s", o.Name, ErrReadOnly, o.out.Mode, err, o.instead)
	}
	if err := o.writableDir(); err != nil {
		return nil, err
	}
	a, err := AttrsOf(o.Path)
	if err != nil {
		return nil, err
	}
	o.Attrs = a
	return o, nil
}

// named prefixes err with the name the user gave, unless it is a
// *os.PathError, which names its path already.
func named(name string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// writableDir checks that the new file can be made beside o.Path and
// renamed over it.
func (o *Output) writableDir() error {
	dir := filepath.Dir(o.Path)
	err := unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%s: directory %s: %w", o.Name, dir, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: directory %s: %v: the new file is written beside it, then renamed over it; %s", o.Name, ErrReadOnly, dir, err, o.instead)
	}
	return nil
}

// Write writes the output with the contents fill writes, through a
// buffer (so fill may write a large file as many small pieces without
// holding it whole): a temporary file beside Path, given Attrs, synced,
// checked (the input and an existing output as planned, else ErrChanged),
// renamed over Path, and the directory synced. On any error nothing is
// written: the temporary is removed and Path left as it was. fill's own
// error is returned as it is.
func (o *Output) Write(fill func(w io.Writer) error) error {
	t, err := newTemp(o.Path)
	if err != nil {
		return o.writeErr(err)
	}
	if err := t.fillBuffered(fill); err != nil {
		t.abort()
		return err
	}
	return o.commit(t)
}

// WriteChunks is Write for contents given as chunks, written one after
// another.
func (o *Output) WriteChunks(chunks ...[]byte) error {
	return o.Write(func(w io.Writer) error {
		for _, c := range chunks {
			if _, err := w.Write(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// commit gives the temporary its attributes, syncs and checks it, and
// renames it into place.
func (o *Output) commit(t *temp) error {
	if err := t.commit(o.Attrs, o.check); err != nil {
		return o.writeErr(err)
	}
	if o.DeferDirSync {
		return nil
	}
	if err := SyncDir(filepath.Dir(o.Path)); err != nil {
		return o.writeErr(err)
	}
	return nil
}

// writeErr says what failed in writing o, and what to do about it.
func (o *Output) writeErr(err error) error {
	switch {
	case errors.Is(err, ErrChanged):
		return err
	case errors.Is(err, ErrAttrs):
		return fmt.Errorf("%s: %w; nothing written: run as the file's owner or as root, or %s", o.Name, err, o.instead)
	}
	return fmt.Errorf("%s: writing %s: %w", o.Name, o.Path, err)
}

// check is the last look before the rename: the input, and the output
// unless it is the input, are as Plan found them (and an output that did
// not exist still does not). POSIX has no compare-and-rename, so a writer
// in the short window between this check and the rename goes unseen.
func (o *Output) check() error {
	if o.BeforeCheck != nil {
		o.BeforeCheck()
	}
	if now, err := StampOf(o.In); err != nil || now != o.in {
		return fmt.Errorf("%s: %w (modified, replaced or removed since it was read); nothing written: run again", o.InName, ErrChanged)
	}
	if o.InPlace {
		return nil
	}
	now, err := StampOf(o.Path)
	switch {
	case o.Existed && (err != nil || now != o.out):
		return fmt.Errorf("%s: %w (modified, replaced or removed since it was looked at); nothing written: run again", o.Name, ErrChanged)
	case !o.Existed && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w (created by someone else meanwhile); nothing written: run again", o.Name, ErrChanged)
	}
	return nil
}

// A Pending is an output whose writing started before its contents are
// known: the bulk of an edited object is the input itself, so it can be
// written to the temporary file while the edit is still being computed.
// Finish completes it; Abort removes the temporary. Exactly one of them
// must be called.
type Pending struct {
	o    *Output
	t    *temp
	base []byte     // what the background write is writing at offset 0
	done chan error // the background write's result
}

// Start creates the temporary file beside Path and starts writing base
// (the input's bytes) into it in the background.
func (o *Output) Start(base []byte) (*Pending, error) {
	t, err := newTemp(o.Path)
	if err != nil {
		return nil, o.writeErr(err)
	}
	p := &Pending{o: o, t: t, base: base, done: make(chan error, 1)}
	go func() {
		_, err := t.f.Write(base)
		if err == nil {
			startWriteback(t.f, int64(len(base)))
		}
		p.done <- err
	}()
	return p, nil
}

// Finish writes the final contents, given as chunks laid out as
// elfx.Editor.Chunks lays them (header, then the rest of the input, then
// the appended tail), and commits the output as Write does. Chunks that
// are the base already written at their offset are not written again.
func (p *Pending) Finish(chunks ...[]byte) error {
	if err := <-p.done; err != nil {
		p.t.abort()
		return p.o.writeErr(err)
	}
	var off int64
	for _, c := range chunks {
		// The input's bytes, already written at this offset: skip them.
		if len(c) > 0 && off < int64(len(p.base)) && int64(len(c)) <= int64(len(p.base))-off && &c[0] == &p.base[off] {
			off += int64(len(c))
			continue
		}
		if _, err := p.t.f.WriteAt(c, off); err != nil {
			p.t.abort()
			return p.o.writeErr(err)
		}
		off += int64(len(c))
	}
	if err := p.t.f.Truncate(off); err != nil {
		p.t.abort()
		return p.o.writeErr(err)
	}
	return p.o.commit(p.t)
}

// Abort removes the temporary file.
func (p *Pending) Abort() {
	<-p.done
	p.t.abort()
}

// A Stamp is what changes when anyone writes, replaces, links or chmods a
// file: its identity, link count, size, mode, and modification and change
// times (ctime cannot be set back by the writer).
type Stamp struct {
	Dev, Ino     uint64
	Nlink        uint64
	Size         int64
	Mtime, Ctime syscall.Timespec
	Mode         os.FileMode
}

// StampOf is the Stamp of the file at path, not following a symbolic
// link there: Plan's paths are resolved, and a link that appears at one
// later is a change.
func StampOf(path string) (Stamp, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Stamp{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{}, fmt.Errorf("%s: no file status on this system", path)
	}
	return Stamp{Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink), Size: st.Size, Mtime: st.Mtim, Ctime: st.Ctim, Mode: fi.Mode()}, nil
}
