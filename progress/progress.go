// Package progress draws a one-line progress bar for long steps of a
// command, on the terminal the user watches:
//
//	[=================>              ] 123456/200000
//
// redrawn in place with a carriage return, cleared when the step ends.
// Nothing is drawn when the output is not a terminal (a pipe, a file, a
// build log), so scripts and tests see only the command's own output.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// A Bar draws progress on w. Its methods do nothing on a nil *Bar, so a
// caller holds one whether or not it draws.
type Bar struct {
	w     io.Writer
	width int // cells between the brackets
	min   int // totals up to this draw nothing: the step is too short to watch
	total int
	cells int // filled cells last drawn; -1: nothing drawn for this total
	shown int // the count last drawn
	drawn bool
}

// New returns a bar of width cells drawing on w for steps of more than
// min items.
func New(w io.Writer, width, min int) *Bar {
	return &Bar{w: w, width: width, min: min, cells: -1}
}

// ForTerminal returns a bar drawing on f when f is a terminal, nil
// otherwise.
func ForTerminal(f *os.File, min int) *Bar {
	if !IsTerminal(f) {
		return nil
	}
	return New(f, 40, min)
}

// IsTerminal reports whether f is a terminal: whether the terminal
// attributes can be read from it (a character device such as /dev/null
// is not one).
func IsTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}

// Update shows done of total. It redraws only when the bar would look
// different by a cell or by a two-hundredth of the total, so calling it
// often costs little.
func (b *Bar) Update(done, total int) {
	if b == nil || total <= b.min {
		return
	}
	if total != b.total {
		b.total, b.cells, b.shown = total, -1, 0
	}
	done = max(0, min(done, total))
	cells := done * b.width / total
	if cells == b.cells && done != total && done-b.shown < total/200 {
		return
	}
	b.cells, b.shown = cells, done
	bar := strings.Repeat("=", cells)
	if cells < b.width {
		bar += ">" + strings.Repeat(" ", b.width-cells-1)
	}
	fmt.Fprintf(b.w, "\r[%s] %d/%d", bar, done, total)
	b.drawn = true
}

// Done clears the bar's line, if anything was drawn, so what the command
// prints next starts on a clean line.
func (b *Bar) Done() {
	if b == nil || !b.drawn {
		return
	}
	n := b.width + 3 + 2*len(fmt.Sprint(b.total)) + 1
	fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", n))
	b.drawn = false
}
