package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrProtectedLink: a path names a symbolic link that the kernel's
// fs.protected_symlinks rule would not follow for this process. Returned
// as a *LinkError.
var ErrProtectedLink = errors.New("refusing to follow a symbolic link")

// A LinkError is a symbolic link Resolve refused to follow: one in a
// sticky, world-writable directory (/tmp) owned neither by the process's
// effective user nor by the directory's owner. Another user may have
// planted it there to make a privileged tool write through it; the kernel
// refuses such a link to open(2) (fs.protected_symlinks), and a tool that
// follows links itself (readlink, then rename to the target) must refuse
// it too.
type LinkError struct {
	Link    string      // the link, as far as the path was resolved
	Dir     string      // the directory holding it
	DirMode os.FileMode // the directory's mode: sticky and world-writable
	LinkUID int         // the link's owner
	DirUID  int         // the directory's owner
	EUID    int         // the process's effective user
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%v %s: it is owned by uid %d and lies in %s, a sticky world-writable directory (%v) owned by uid %d; "+
		"as the kernel's protected_symlinks rule does, a link there is followed only for its owner or the directory's owner, and this process runs as uid %d: "+
		"another user may have planted it; name the file it points to instead",
		ErrProtectedLink, e.Link, e.LinkUID, e.Dir, e.DirMode, e.DirUID, e.EUID)
}

// Is makes errors.Is(err, ErrProtectedLink) true.
func (e *LinkError) Is(target error) bool { return target == ErrProtectedLink }

// maxLinks bounds the links followed in one path, as the kernel's
// MAXSYMLINKS (40) bounds open(2)'s: past it, a loop.
const maxLinks = 40

// Resolve returns path with every symbolic link in it followed, as
// filepath.EvalSymlinks does, except that it follows a link only where
// the kernel would for this process with fs.protected_symlinks set
// (whatever the system's setting): a link in a sticky, world-writable
// directory is refused with a *LinkError unless its owner is the
// process's effective user or the directory's owner. The result is
// clean, and absolute when path is.
//
// When everything but the last component exists and that one does not
// (nor is it a link), Resolve returns the path it would have (the
// directory resolved, the last name appended) with an error wrapping
// fs.ErrNotExist: where a new file goes.
func Resolve(path string) (string, error) {
	dest, exists, err := resolve(path)
	if err != nil {
		return "", err
	}
	if !exists {
		return dest, &os.PathError{Op: "lstat", Path: dest, Err: syscall.ENOENT}
	}
	return dest, nil
}

// resolve is Resolve's walk (after filepath.EvalSymlinks's), which also
// says whether the last component exists.
func resolve(path string) (dest string, exists bool, err error) {
	if path == "" {
		return "", false, &os.PathError{Op: "lstat", Path: path, Err: syscall.ENOENT}
	}
	root := 0
	if path[0] == '/' {
		root = 1
	}
	dest = path[:root]
	links := 0
	for start, end := root, root; start < len(path); start = end {
		for start < len(path) && path[start] == '/' {
			start++
		}
		end = start
		for end < len(path) && path[end] != '/' {
			end++
		}
		last := end >= len(path) || onlySlashes(path[end:])
		switch name := path[start:end]; name {
		case "":
			continue
		case ".":
			continue
		case "..":
			// dest has no links left in it, so ".." is its parent.
			r := len(dest) - 1
			for r >= root && dest[r] != '/' {
				r--
			}
			if r < root || dest[r+1:] == ".." {
				if len(dest) > root {
					dest += "/"
				}
				dest += ".."
			} else {
				dest = dest[:r]
			}
			continue
		}
		parent := dest
		if len(dest) > root {
			dest += "/"
		}
		dest += path[start:end]
		fi, err := os.Lstat(dest)
		if errors.Is(err, fs.ErrNotExist) && last {
			return filepath.Clean(dest), false, nil
		}
		if err != nil {
			return "", false, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && !last {
				return "", false, &os.PathError{Op: "lstat", Path: dest, Err: syscall.ENOTDIR}
			}
			continue
		}
		if links++; links > maxLinks {
			return "", false, &os.PathError{Op: "readlink", Path: dest, Err: syscall.ELOOP}
		}
		if err := mayFollow(dest, fi, parent); err != nil {
			return "", false, err
		}
		link, err := os.Readlink(dest)
		if err != nil {
			return "", false, err
		}
		if link == "" {
			return "", false, &os.PathError{Op: "readlink", Path: dest, Err: syscall.ENOENT}
		}
		path = link + path[end:]
		if link[0] == '/' {
			dest, root, end = "/", 1, 1
		} else {
			dest, end = parent, 0
		}
	}
	if dest == "" {
		dest = "."
	}
	return filepath.Clean(dest), true, nil
}

func onlySlashes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '/' {
			return false
		}
	}
	return true
}

// mayFollow applies the kernel's may_follow_link (fs/namei.c) to the link
// at path, of status fi, in directory dir (resolved; "" or a relative
// one is the working directory's): a link is followed when its owner is
// the follower, when the directory is not both sticky and world-writable,
// or when the directory's owner owns the link too.
func mayFollow(path string, fi os.FileInfo, dir string) error {
	if dir == "" {
		dir = "."
	}
	euid := os.Geteuid()
	lst, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no file status on this system", path)
	}
	if int(lst.Uid) == euid {
		return nil
	}
	di, err := os.Stat(dir)
	if err != nil {
		return err
	}
	dst, ok := di.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no file status on this system", dir)
	}
	const shared = syscall.S_ISVTX | 0o002
	if dst.Mode&shared != shared || dst.Uid == lst.Uid {
		return nil
	}
	return &LinkError{Link: path, Dir: dir, DirMode: di.Mode(), LinkUID: int(lst.Uid), DirUID: int(dst.Uid), EUID: euid}
}
