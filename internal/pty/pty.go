// Package pty opens pseudo-terminals, for tests of what a program does
// under a terminal: a terminal's signals (^C), its foreground process
// group.
package pty

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Open opens a new pseudo-terminal and returns its master, which a test
// writes keys to and reads the output from, and its slave, which the
// program under test gets as its terminal (a child started with
// SysProcAttr{Setsid: true, Setctty: true} and the slave as its standard
// input takes it as its controlling terminal, its process group the
// terminal's foreground group).
func Open() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)
	}
	if err == nil {
		slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	}
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
	}
	return master, slave, nil
}
