// Package measure holds what the benchmarks share to build their inputs
// and to measure the commands they time: running a build step, a child's
// peak memory and CPU time from its rusage, the size of the files it
// wrote, and the median of several runs.
package measure

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Sh runs argv in dir, as a build step: its output is shown only when it
// fails, in the error, with the command line.
func Sh(dir string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
	}
	return nil
}

// Steps runs each of steps in dir with Sh, in order, and stops at the
// first that fails: a benchmark's build of its inputs.
func Steps(dir string, steps ...[]string) error {
	for _, s := range steps {
		if err := Sh(dir, s...); err != nil {
			return err
		}
	}
	return nil
}

// Run runs cmd and returns its wall time, from the start to the exit. If
// cmd has no Stderr, what the command writes there is kept and put in
// the error when it fails; a caller that sets Stderr reports it itself.
func Run(cmd *exec.Cmd) (time.Duration, error) {
	var stderr strings.Builder
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, stderr.String())
	}
	return wall, err
}

// MaxRSS is the peak resident memory in KB of the process ps describes,
// from the rusage wait4 returned (0 if there is none). A child started
// by this process (Go starts children by vfork) reports at least this
// process's own peak (SelfHWM): the kernel takes the larger of the two at
// exec.
func MaxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// CPU is the user and system time the process ps describes used.
func CPU(ps *os.ProcessState) time.Duration {
	return ps.UserTime() + ps.SystemTime()
}

// SelfHWM is this process's own peak RSS in KB (VmHWM in
// /proc/self/status; 0 if unknown): the floor under every child's
// MaxRSS, so a benchmark that reports its children's memory keeps its
// own small and says what it is.
func SelfHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), "kB"), &kb)
			return kb
		}
	}
	return 0
}

// DirSize is the total size in bytes of the regular files under dir (0
// if it does not exist): what a traced run wrote.
func DirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Median is the middle of d (the upper one of an even count); d is left
// as it was. It panics on an empty d.
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
