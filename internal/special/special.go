// Package special makes the files that are not regular files, which the
// tools must refuse as input or output with one line saying what the file
// is: a character device, a symbolic link to one, a FIFO and a directory.
// The tests of recordmcount and the end-to-end tests of both tools run
// over the same list, with the words the errors use.
package special

import (
	"os"
	"syscall"
	"testing"
)

// A File is one kind of special file.
type File struct {
	Name string // the subtest name
	// Make creates the file at path and returns the path to pass to the
	// tool (a device is used where it is, ignoring path). An error fails t.
	Make func(t testing.TB, path string) string
	Want string // what the tool's error says the file is
	// Hazard: without the tools' check, reading it would not end (a
	// device that reads without end, a FIFO that blocks), so a test
	// should run the tool as a process under limits, not in the test
	// binary itself.
	Hazard bool
}

// Files are the special files, in the order the tests run them.
var Files = []File{
	{"directory", func(t testing.TB, path string) string {
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}, "not a regular file (a directory)", false},
	{"dev-zero", func(t testing.TB, path string) string { return "/dev/zero" }, "not a regular file (a character device)", true},
	{"link-to-dev-zero", func(t testing.TB, path string) string {
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Fatal(err)
		}
		return path
	}, "not a regular file (a character device)", true},
	{"fifo", func(t testing.TB, path string) string {
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}, "not a regular file (a FIFO)", true},
}
