package outfile_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ftpatch/outfile"
)

// POSIX ACLs as the kernel stores them in system.posix_acl_*: a version
// word, then {tag, perm, id} entries sorted by tag.
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xffffffff
)

func acl(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// setxattr sets an extended attribute, failing the test if it cannot.
func setxattr(t *testing.T, path, name string, value []byte) {
	t.Helper()
	if err := unix.Setxattr(path, name, value, 0); err != nil {
		t.Fatalf("setxattr %s %s: %v (the test needs a file system with extended attributes and ACLs)", path, name, err)
	}
}

// replaceKeeping replaces the file at p in place, keeping the
// attributes it has, and fails the test if that fails.
func replaceKeeping(t *testing.T, p, contents string) {
	t.Helper()
	o, err := outfile.Plan(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.WriteChunks([]byte(contents)); err != nil {
		t.Fatal(err)
	}
}

// statOf is the mode, owner and group of p, read with stat(2).
func statOf(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestKeepAttrs: a file replaced with the attributes AttrsOf read keeps
// its mode, owner and group, ACL, user attributes and (as root) setuid,
// setgid and file capabilities, though a change of owner and a write
// each clear the last; and the new file does not keep what the directory
// gave it at birth (a default ACL) that the old one did not have.
func TestKeepAttrs(t *testing.T) {
	for _, withACL := range []bool{true, false} {
		name := "user"
		if withACL {
			name = "user-acl"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeFile(t, dir, "prog", "old")
			if err := os.Chmod(p, 0o750); err != nil {
				t.Fatal(err)
			}
			setxattr(t, p, "user.origin", []byte("built by CI"))
			if withACL {
				setxattr(t, p, "system.posix_acl_access", acl([3]uint32{aclUserObj, 7, aclNoID}, [3]uint32{aclUser, 4, 4242},
					[3]uint32{aclGroupObj, 5, aclNoID}, [3]uint32{aclMask, 5, aclNoID}, [3]uint32{aclOther, 0, aclNoID}))
			}
			// New files in dir now get an ACL from this default, which
			// the old file did not get.
			setxattr(t, dir, "system.posix_acl_default", acl([3]uint32{aclUserObj, 7, aclNoID},
				[3]uint32{aclUser, 7, 4343}, [3]uint32{aclGroupObj, 7, aclNoID}, [3]uint32{aclMask, 7, aclNoID}, [3]uint32{aclOther, 7, aclNoID}))
			want, err := outfile.AttrsOf(p)
			if err != nil {
				t.Fatal(err)
			}
			if n := 1 + btoi(withACL); len(want.Xattrs) != n {
				t.Fatalf("AttrsOf read %v, want %d extended attributes", want.Xattrs, n)
			}
			st := statOf(t, p)
			replaceKeeping(t, p, "new")
			checkOnly(t, dir, "prog", "new", 0o750)
			got, err := outfile.AttrsOf(p)
			if err != nil {
				t.Fatal(err)
			}
			if now := statOf(t, p); now.Ino == st.Ino || now.Mode != st.Mode || now.Uid != st.Uid || now.Gid != st.Gid {
				t.Errorf("replaced: inode %d mode %o %d:%d, was inode %d mode %o %d:%d", now.Ino, now.Mode, now.Uid, now.Gid, st.Ino, st.Mode, st.Uid, st.Gid)
			}
			if xattrMap(got) != xattrMap(want) {
				t.Errorf("replaced: extended attributes %v, want %v", xattrMap(got), xattrMap(want))
			}
		})
	}
	t.Run("root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("giving a file another owner, and file capabilities, need root")
		}
		dir := t.TempDir()
		p := writeFile(t, dir, "prog", "old")
		if err := os.Chown(p, 1234, 5678); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
			t.Fatal(err)
		}
		// cap_net_raw+ep, as setcap writes it (VFS_CAP_REVISION_2).
		capData := make([]byte, 20)
		binary.LittleEndian.PutUint32(capData[0:], 0x02000001)
		binary.LittleEndian.PutUint32(capData[4:], 1<<13)
		setxattr(t, p, "security.capability", capData)
		st := statOf(t, p)
		want := make([]byte, 64)
		n, err := unix.Getxattr(p, "security.capability", want)
		if err != nil {
			t.Fatal(err)
		}
		want = want[:n]
		replaceKeeping(t, p, "new")
		now := statOf(t, p)
		if now.Mode != st.Mode || now.Uid != 1234 || now.Gid != 5678 {
			t.Errorf("replaced: mode %o %d:%d, want mode %o 1234:5678", now.Mode, now.Uid, now.Gid, st.Mode)
		}
		got := make([]byte, 64)
		n, err = unix.Getxattr(p, "security.capability", got)
		if err != nil || string(got[:max(n, 0)]) != string(want) {
			t.Errorf("replaced: file capabilities %x, %v; want %x", got[:max(n, 0)], err, want)
		}
	})
}

// TestAttrsRefused: attributes the new file cannot be given fail the
// replacement with ErrAttrs, leaving the old file as it was and no
// temporary.
func TestAttrsRefused(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "prog", "old")
	o, err := outfile.Plan(p, "")
	if err != nil {
		t.Fatal(err)
	}
	o.Attrs.Xattrs = append(o.Attrs.Xattrs, outfile.Xattr{Name: "nosuchnamespace.x", Value: []byte("y")})
	err = o.WriteChunks([]byte("new"))
	if !errors.Is(err, outfile.ErrAttrs) || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), "nothing written") {
		t.Errorf("an attribute no file system has: %v, want ErrAttrs naming %s", err, p)
	}
	checkOnly(t, dir, "prog", "old", 0o644)
}

// xattrMap prints a's extended attributes in name order, for comparing:
// the file system lists them in any order.
func xattrMap(a outfile.Attrs) string {
	m := map[string]string{}
	for _, x := range a.Xattrs {
		m[x.Name] = fmt.Sprintf("%x", x.Value)
	}
	return fmt.Sprint(m)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
