package outfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Attrs are what an Output's new file is given besides its contents. A
// tool that rewrites a file reads them from the old file (AttrsOf, as
// Plan does), so that the atomic replacement, a new inode, keeps
// everything the old one had: the rename itself keeps nothing.
type Attrs struct {
	Mode     os.FileMode // permission bits, with os.ModeSetuid, os.ModeSetgid and os.ModeSticky
	UID, GID int         // owner and group; -1: the writer's, as for any new file
	// Xattrs are the extended attributes, exactly: POSIX ACLs
	// (system.posix_acl_access), file capabilities (security.capability),
	// the SELinux label, user.*. Nil asks for none to be set or removed.
	Xattrs []Xattr
	// exact says Xattrs is the old file's whole list (AttrsOf), so any
	// other the new file was born with (a directory's default ACL) goes.
	exact bool
}

// An Xattr is one extended attribute.
type Xattr struct {
	Name  string
	Value []byte
}

// ErrAttrs: the new file could not be given the attributes asked for
// (its owner or group, needing privilege the writer lacks; a mode bit the
// kernel dropped; an extended attribute the file system or the security
// policy refused). The replacement is then not made.
var ErrAttrs = errors.New("cannot keep the file's owner, mode or attributes")

// modeBits are the bits of os.FileMode that Attrs.Mode carries.
const modeBits = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// NewAttrs are the attributes of a new file of mode perm, owned by its
// writer, with no extended attributes.
func NewAttrs(perm os.FileMode) Attrs { return Attrs{Mode: perm & modeBits, UID: -1, GID: -1} }

// AttrsOf reads the attributes of the file at path: a replacement
// written with them differs from it only in its contents and times. A
// symbolic link at path is not followed (Plan resolves links first, by
// its own rule), and a file system without extended attributes has none.
func AttrsOf(path string) (Attrs, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return Attrs{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	a := Attrs{Mode: fileMode(st.Mode), UID: int(st.Uid), GID: int(st.Gid), exact: true}
	names, err := listXattrs(func(b []byte) (int, error) { return unix.Llistxattr(path, b) })
	if err != nil {
		return Attrs{}, &os.PathError{Op: "listxattr", Path: path, Err: err}
	}
	for _, n := range names {
		v, err := getXattr(func(b []byte) (int, error) { return unix.Lgetxattr(path, n, b) })
		if errors.Is(err, unix.ENODATA) { // removed since it was listed
			continue
		}
		if err != nil {
			return Attrs{}, &os.PathError{Op: "getxattr " + n, Path: path, Err: err}
		}
		a.Xattrs = append(a.Xattrs, Xattr{n, v})
	}
	return a, nil
}

// apply gives the open file f the attributes a, in the one order that
// keeps them all: the owner and group first (the kernel clears setuid,
// setgid and file capabilities when they change, even for root), then the
// mode, then the extended attributes (writing contents clears file
// capabilities, so they come after every write; a POSIX ACL sets the
// group bits from its mask, as the old file's did). Last, the result is
// read back: chmod silently drops setgid for a group the writer is not
// in, and a copy that lost a bit must not replace the original.
func (a Attrs) apply(f *os.File) error {
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	uid, gid := -1, -1
	if a.UID >= 0 && uint32(a.UID) != st.Uid {
		uid = a.UID
	}
	if a.GID >= 0 && uint32(a.GID) != st.Gid {
		gid = a.GID
	}
	if uid >= 0 || gid >= 0 {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return fmt.Errorf("%w: owner %d, group %d: %w", ErrAttrs, a.UID, a.GID, err)
		}
	}
	if err := unix.Fchmod(fd, unixMode(a.Mode)); err != nil {
		return fmt.Errorf("%w: mode %v: %w", ErrAttrs, a.Mode, err)
	}
	if err := a.applyXattrs(fd); err != nil {
		return err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if got := fileMode(st.Mode); got != a.Mode&modeBits {
		return fmt.Errorf("%w: mode %v became %v (setgid needs membership of the group)", ErrAttrs, a.Mode&modeBits, got)
	}
	return nil
}

func (a Attrs) applyXattrs(fd int) error {
	if len(a.Xattrs) == 0 && !a.exact {
		return nil
	}
	have, err := listXattrs(func(b []byte) (int, error) { return unix.Flistxattr(fd, b) })
	if err != nil {
		return fmt.Errorf("%w: extended attributes: %w", ErrAttrs, err)
	}
	for _, n := range have {
		if !slices.ContainsFunc(a.Xattrs, func(x Xattr) bool { return x.Name == n }) {
			if err := unix.Fremovexattr(fd, n); err != nil && !errors.Is(err, unix.ENODATA) {
				return fmt.Errorf("%w: extended attribute %s the new file was given: %w", ErrAttrs, n, err)
			}
		}
	}
	for _, x := range a.Xattrs {
		// Setting a value the file already has (a SELinux label given
		// at creation) may need a permission that keeping it does not.
		cur, err := getXattr(func(b []byte) (int, error) { return unix.Fgetxattr(fd, x.Name, b) })
		if err == nil && bytes.Equal(cur, x.Value) {
			continue
		}
		if err := unix.Fsetxattr(fd, x.Name, x.Value, 0); err != nil {
			return fmt.Errorf("%w: extended attribute %s: %w", ErrAttrs, x.Name, err)
		}
	}
	return nil
}

// listXattrs reads a list of extended attribute names with list, sized
// by a first call; a file system without them has none.
func listXattrs(list func([]byte) (int, error)) ([]string, error) {
	b, err := getXattr(list)
	if errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range strings.Split(string(b), "\x00") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

// getXattr reads a value of unknown size with get: a first call sizes
// it, and a value that grew between the calls (ERANGE) is read again.
func getXattr(get func([]byte) (int, error)) ([]byte, error) {
	for {
		n, err := get(nil)
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		n, err = get(b)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return b[:n], nil
	}
}

// specialBits pairs each st_mode bit above the permission bits with the
// os.FileMode bit that stands for it.
var specialBits = [...]struct {
	unix uint32
	os   os.FileMode
}{
	{unix.S_ISUID, os.ModeSetuid},
	{unix.S_ISGID, os.ModeSetgid},
	{unix.S_ISVTX, os.ModeSticky},
}

// fileMode converts the st_mode of a regular file to Attrs.Mode.
func fileMode(m uint32) os.FileMode {
	fm := os.FileMode(m & 0o777)
	for _, b := range specialBits {
		if m&b.unix != 0 {
			fm |= b.os
		}
	}
	return fm
}

// unixMode is fileMode backwards.
func unixMode(fm os.FileMode) uint32 {
	m := uint32(fm.Perm())
	for _, b := range specialBits {
		if fm&b.os != 0 {
			m |= b.unix
		}
	}
	return m
}
