package trace

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"ftpatch/runtime/abi"
)

// ErrSession: a directory opened as one process's trace is a session
// of several.
var ErrSession = errors.New("a session")

// ErrNoProcess: a choice of processes (--pid, --comm) chose none of
// the session's.
var ErrNoProcess = errors.New("no process of the trace is chosen")

// A Session is what one recording traced: every process image it holds
// (a process, and each program a process exec'd), each a Trace of its
// own. The runtime writes a session's directory as abi.SessionFile and
// a trace directory per image; a trace directory of one process (an
// older runtime's, a flight recorder's snapshot) reads as a session of
// that one, and several directories given together read as one session.
type Session struct {
	// Dirs are the directories given, in order.
	Dirs []string
	// Procs are the process images: each directory's in turn, a
	// session's in the order they started (their clocks' start; then
	// pid and image), so the first is the process its recording started.
	Procs []*Trace
	// Skipped are image directories without metadata yet (a process
	// that was starting when the session was read): left out.
	Skipped []string
}

// IsSession reports whether dir is a session's directory: one that
// holds abi.SessionFile.
func IsSession(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, abi.SessionFile))
	return err == nil && fi.Mode().IsRegular()
}

// OpenSession opens the process images of dirs (Open each): a
// session's directory's every image, or a trace directory as the one
// process it traced. A session file that is not the runtime's, or an
// entry of a session's directory that is neither a regular file nor a
// directory, is an error naming it.
func OpenSession(dirs ...string) (*Session, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no trace directory given")
	}
	s := &Session{Dirs: dirs}
	for _, dir := range dirs {
		if !IsSession(dir) {
			t, err := Open(dir)
			if err != nil {
				return nil, err
			}
			s.Procs = append(s.Procs, t)
			continue
		}
		images, err := sessionImages(dir)
		if err != nil {
			return nil, err
		}
		var procs []*Trace
		for _, im := range images {
			if _, err := os.Lstat(filepath.Join(im, abi.MetaFile)); errors.Is(err, fs.ErrNotExist) {
				s.Skipped = append(s.Skipped, im)
				continue
			}
			t, err := Open(im)
			if err != nil {
				return nil, err
			}
			procs = append(procs, t)
		}
		slices.SortStableFunc(procs, func(a, b *Trace) int {
			return cmp.Or(cmp.Compare(a.Meta.MonoStart, b.Meta.MonoStart), cmp.Compare(a.Meta.Pid, b.Meta.Pid),
				cmp.Compare(a.Meta.Image, b.Meta.Image))
		})
		s.Procs = append(s.Procs, procs...)
	}
	if len(s.Procs) == 0 {
		return nil, fmt.Errorf("%s: %w: a session with no process's trace in it", dirs[0], ErrFormat)
	}
	return s, nil
}

// sessionImages checks dir's session file and lists its image
// directories, by name.
func sessionImages(dir string) ([]string, error) {
	name := filepath.Join(dir, abi.SessionFile)
	f, size, err := openFile(name)
	if err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(io.LimitReader(f, min(size, 4096))).ReadString('\n')
	f.Close()
	if strings.TrimSuffix(line, "\n") != abi.SessionMagic {
		return nil, fmt.Errorf("%s: %w: its first line is not %q (err %v)", name, ErrFormat, abi.SessionMagic, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		switch {
		case e.Type().IsRegular():
			// the session file, ftpatch record's exit file, the runtime's temporary files
		case e.IsDir():
			if !strings.Contains(e.Name(), ".tmp-") { // an image being made
				out = append(out, filepath.Join(dir, e.Name()))
			}
		default:
			return nil, fmt.Errorf("%s: %w: %s, neither a process's trace directory nor a file the runtime writes",
				path.Join(dir, e.Name()), ErrFormat, e.Type())
		}
	}
	return out, nil
}

// Select keeps the images whose process's pid is one of pids (none
// given: any) and whose name (Meta.Comm, else the executable's base
// name) matches the glob comm ("": any); ErrNoProcess when none is
// kept. A child forked without an exec records its streams in its
// parent's image: a pid of such a child keeps that image with its
// streams alone (the image's Streams narrowed in place).
func (s *Session) Select(pids []int, comm string) (*Session, error) {
	if len(pids) == 0 && comm == "" {
		return s, nil
	}
	if comm != "" {
		if _, err := filepath.Match(comm, ""); err != nil {
			return nil, fmt.Errorf("--comm %q: %w", comm, err)
		}
	}
	out := &Session{Dirs: s.Dirs, Skipped: s.Skipped}
	for _, t := range s.Procs {
		if len(pids) > 0 && !slices.Contains(pids, t.Meta.Pid) {
			forked := slices.DeleteFunc(slices.Clone(t.Streams), func(st Stream) bool { return !slices.Contains(pids, st.Pid) })
			if len(forked) == 0 {
				continue
			}
			t.Streams = forked
		}
		if ok, _ := filepath.Match(comm, t.Meta.Name()); comm != "" && !ok {
			continue
		}
		out.Procs = append(out.Procs, t)
	}
	if len(out.Procs) == 0 {
		return nil, ErrNoProcess
	}
	return out, nil
}

// Name is the process's name: its comm, else its executable's base
// name.
func (m *Meta) Name() string {
	if m.Comm != "" {
		return m.Comm
	}
	return filepath.Base(m.Exe)
}

// Size is the bytes of every image's streams: what reading them all
// reads.
func (s *Session) Size() int64 {
	var n int64
	for _, t := range s.Procs {
		n += t.Size()
	}
	return n
}
