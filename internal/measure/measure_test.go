package measure

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want time.Duration
	}{
		{"one", []time.Duration{5}, 5},
		{"odd-unsorted", []time.Duration{3, 1, 2}, 2},
		{"even-takes-upper", []time.Duration{4, 1, 3, 2}, 3},
		{"repeated", []time.Duration{7, 7, 1}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.in...)
			if got := Median(in); got != tc.want {
				t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("Median reordered its argument: %v, was %v", in, tc.in)
				}
			}
		})
	}
}

// TestDirSize counts regular files at any depth, and neither
// directories nor what a symbolic link points to.
func TestDirSize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]int // path -> size
		links []string       // links to the first file named "a"
		want  int64
	}{
		{"missing", nil, nil, 0},
		{"empty", map[string]int{}, nil, 0},
		{"flat", map[string]int{"a": 10, "b": 32}, nil, 42},
		{"nested", map[string]int{"a": 1, "d/b": 100, "d/e/c": 1000}, nil, 1101},
		{"link-not-followed", map[string]int{"a": 4096}, []string{"l"}, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "trace")
			if tc.files != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for p, n := range tc.files {
				p = filepath.Join(dir, p)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range tc.links {
				if err := os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, l)); err != nil {
					t.Fatal(err)
				}
			}
			if got := DirSize(dir); got != tc.want {
				t.Errorf("DirSize = %d, want %d", got, tc.want)
			}
		})
	}
}

// allocEnv makes the test binary, run as a child, touch allocMB of
// memory and exit: a child whose peak RSS is known.
const (
	allocEnv = "MEASURE_TEST_ALLOC"
	allocMB  = 64
)

func init() {
	if os.Getenv(allocEnv) != "" {
		b := make([]byte, allocMB<<20)
		for i := range b {
			b[i] = 1
		}
		os.Exit(int(b[len(b)-1]) - 1)
	}
}

// TestMaxRSS runs a child that touches 64 MB: its MaxRSS is at least
// that, and SelfHWM, this process's floor under it, is not 0.
func TestMaxRSS(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), allocEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := MaxRSS(cmd.ProcessState); got < allocMB<<10 {
		t.Errorf("MaxRSS = %d KB, want at least %d KB", got, allocMB<<10)
	}
	if CPU(cmd.ProcessState) <= 0 {
		t.Errorf("CPU = %v for a child that touched %d MB", CPU(cmd.ProcessState), allocMB)
	}
	if SelfHWM() <= 0 {
		t.Errorf("SelfHWM = %d", SelfHWM())
	}
}

// TestRun: a command that fails gives an error wrapping its exit status
// and holding what it wrote to stderr; one that succeeds, its wall time
// and no error.
func TestRun(t *testing.T) {
	wall, err := Run(exec.Command("sh", "-c", "sleep 0.01"))
	if err != nil || wall <= 0 {
		t.Errorf("a succeeding command: %v, %v", wall, err)
	}
	_, err = Run(exec.Command("sh", "-c", "echo broken >&2; exit 3"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(err.Error(), "broken") {
		t.Errorf("a failing command: %v, want exit status 3 and its stderr", err)
	}
}

// TestSteps: the steps run in order in dir, and the first that fails
// ends the build with its command line in the error.
func TestSteps(t *testing.T) {
	dir := t.TempDir()
	err := Steps(dir, []string{"touch", "first"}, []string{"false"}, []string{"touch", "third"})
	if err == nil || !strings.Contains(err.Error(), "false") {
		t.Errorf("a failing step: %v, want its command line", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "first")); err != nil {
		t.Errorf("the first step did not run in dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "third")); err == nil {
		t.Error("a step after the failing one ran")
	}
}
