package trace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"ftpatch/runtime/abi"
)

// image copies the fixture trace src into dir/name with its metadata's
// pid, ppid, comm and clock start set, as the runtime writes a session's
// process image.
func image(t *testing.T, dir, name, src string, pid, ppid int, comm string, start int) {
	t.Helper()
	to := filepath.Join(dir, name)
	if err := os.CopyFS(to, os.DirFS(filepath.Join("testdata", "traces", src))); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(to, abi.MetaFile)
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	b = regexp.MustCompile(`(?m)^pid \d+$`).ReplaceAll(b, fmt.Appendf(nil, "pid %d\nppid %d\nimage 1", pid, ppid))
	b = regexp.MustCompile(`(?m)^comm .*$`).ReplaceAll(b, fmt.Appendf(nil, "comm %s", comm))
	b = regexp.MustCompile(`(?m)^mono_start_ns \d+$`).ReplaceAll(b, fmt.Appendf(nil, "mono_start_ns %d", 2020950900618+start))
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// session makes a session's directory of three images: a parent (pid
// 10, started first), and its two children, 12 started before 11.
func session(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, abi.SessionFile), []byte(abi.SessionMagic+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	image(t, dir, "10@5", "function_graph", 10, 1, "make", 0)
	image(t, dir, "11@9", "function_graph", 11, 10, "cc", 20)
	image(t, dir, "12@7", "function_graph", 12, 10, "sh", 10)
	return dir
}

func pids(s *Session) []int {
	if s == nil {
		return nil
	}
	var out []int
	for _, t := range s.Procs {
		out = append(out, t.Meta.Pid)
	}
	return out
}

// TestOpenSession: a session's directory reads as its images in the
// order they started, with their parents; a trace directory as its one
// process; several directories as one session, in the order given.
func TestOpenSession(t *testing.T) {
	dir := session(t)
	s, err := OpenSession(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(pids(s)); got != "[10 12 11]" {
		t.Errorf("session's processes %s, want [10 12 11] (by start)", got)
	}
	if m := s.Procs[1].Meta; m.Ppid != 10 || m.Image != 1 || m.Name() != "sh" {
		t.Errorf("pid 12: ppid %d, image %d, name %q; want 10, 1, sh", m.Ppid, m.Image, m.Name())
	}
	one := filepath.Join("testdata", "traces", "function")
	s, err = OpenSession(one)
	if err != nil || len(s.Procs) != 1 || s.Procs[0].Dir != one {
		t.Fatalf("a trace directory: %v, %v", s, err)
	}
	s, err = OpenSession(one, dir)
	if err != nil || fmt.Sprint(pids(s)) != "[12333 10 12 11]" {
		t.Errorf("two directories: %v, %v; want the trace's process, then the session's", pids(s), err)
	}
	if !IsSession(dir) || IsSession(one) {
		t.Error("IsSession")
	}
}

// TestSessionMalformed: a session file that is not the runtime's, or an
// entry that is neither a file nor a directory, is an error naming it;
// an image without metadata yet (a process starting) is left out and
// named; a session with no image is an error.
func TestSessionMalformed(t *testing.T) {
	dir := session(t)
	if err := os.Mkdir(filepath.Join(dir, "13@11"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSession(dir)
	if err != nil || len(s.Procs) != 3 || len(s.Skipped) != 1 || filepath.Base(s.Skipped[0]) != "13@11" {
		t.Errorf("an image without metadata: %v, %v", s, err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "14@12")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSession(dir); !errors.Is(err, ErrFormat) || !regexp.MustCompile(`14@12`).MatchString(err.Error()) {
		t.Errorf("a symbolic link in a session: %v, want ErrFormat naming it", err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, abi.SessionFile), []byte("ftrt-session 99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSession(bad); !errors.Is(err, ErrFormat) || !regexp.MustCompile(abi.SessionFile).MatchString(err.Error()) {
		t.Errorf("another session format: %v, want ErrFormat naming the file", err)
	}
	if err := os.WriteFile(filepath.Join(bad, abi.SessionFile), []byte(abi.SessionMagic+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSession(bad); !errors.Is(err, ErrFormat) {
		t.Errorf("an empty session: %v, want ErrFormat", err)
	}
}

// TestSessionSelect: --pid and --comm keep exactly the processes they
// name; none chosen is ErrNoProcess; a bad glob an error.
func TestSessionSelect(t *testing.T) {
	s, err := OpenSession(session(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pids []int
		comm string
		want string
	}{
		{nil, "", "[10 12 11]"},
		{[]int{11}, "", "[11]"},
		{[]int{11, 10}, "", "[10 11]"},
		{nil, "s?", "[12]"},
		{[]int{10, 12}, "m*", "[10]"},
	} {
		got, err := s.Select(c.pids, c.comm)
		if err != nil || fmt.Sprint(pids(got)) != c.want {
			t.Errorf("Select(%v, %q) = %v, %v; want %s", c.pids, c.comm, pids(got), err, c.want)
		}
	}
	if _, err := s.Select([]int{99}, ""); !errors.Is(err, ErrNoProcess) {
		t.Errorf("no such pid: %v, want ErrNoProcess", err)
	}
	if _, err := s.Select(nil, "["); err == nil || errors.Is(err, ErrNoProcess) {
		t.Errorf("a bad glob: %v", err)
	}
}
