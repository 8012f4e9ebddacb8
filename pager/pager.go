// Package pager shows a command's output through a pager when it goes to
// a terminal, as git and uftrace do: thousands of lines of a trace are
// read a screen at a time instead of scrolling past.
//
// The pager is $FTPATCH_PAGER when set, else $PAGER when set, else
// "less -FRX" (-F: quit at once when the output fits on one screen, -R:
// let colours through, -X: leave the output on the terminal when it
// quits), with LESS=FRX in its environment when LESS is unset, as git
// sets it. A pager of "" or "cat" is none. Nothing is paged when the
// output is not a terminal (a pipe, a file), so scripts read the output
// as it is.
//
// The pager starts at the output's first write, so a command that fails
// before writing anything never starts one. Its input is the rest of the
// output; its output and its standard error are the terminal's. When the
// user quits it before reading everything, the command's writes fail
// with ErrQuit, so it stops early; Close makes that no error. A pager
// that cannot be started is said once on stderr, and the output goes to
// the terminal as it would without one.
package pager

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"ftpatch/progress"
)

// Default is the pager run when neither FTPATCH_PAGER nor PAGER is set.
const Default = "less -FRX"

// The environment variables that choose the pager, in the order they are
// looked at: ftpatch's own, then the one every pager-using program reads.
const (
	EnvPager    = "FTPATCH_PAGER"
	EnvSysPager = "PAGER"
)

const (
	envLess     = "LESS"
	defaultLess = "FRX"     // LESS for a pager run without one
	shell       = "/bin/sh" // runs a pager command line with a shell's special characters
	// shellSpecial are the characters that make a pager command line
	// the shell's to read (git's list, less the blanks that separate
	// words).
	shellSpecial = "|&;<>()$`\\\"'*?[#~=%\n"
)

// ErrQuit: the pager ended before reading all the output (the user quit
// it). The command stops writing; Close makes it no error.
var ErrQuit = errors.New("the pager quit before reading all the output")

// Config says how a command's output is paged.
type Config struct {
	// Environ is the environment (os.Environ()): it chooses the pager,
	// and the pager runs with it (and LESS=FRX when it has no LESS).
	Environ []string
	// Stderr is where a pager that cannot be started is said, and the
	// pager's own standard error (the terminal's, as a rule); nil:
	// nowhere.
	Stderr io.Writer
	// Off turns paging off (--no-pager).
	Off bool
	// BeforeStart, when not nil, runs just before the pager starts: it
	// ends what the command draws on the terminal meanwhile (a progress
	// bar), which would garble the pager's screen.
	BeforeStart func()
}

// Command is the pager environ asks for: FTPATCH_PAGER when set, else
// PAGER when set, else Default; "" when that is "" or "cat" (no pager).
func Command(environ []string) string {
	cmd, ok := lookup(environ, EnvPager)
	if !ok {
		cmd, ok = lookup(environ, EnvSysPager)
	}
	if !ok {
		cmd = Default
	}
	if cmd = strings.TrimSpace(cmd); cmd == "cat" {
		return ""
	}
	return cmd
}

// lookup is the value of key in environ (the last one, as the C library's
// getenv finds it), and whether it is set.
func lookup(environ []string, key string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// A Writer is a command's standard output, paged when it is a terminal
// and the configuration asks for a pager: the pager starts at the first
// Write. Its zero value is not usable: New makes one.
type Writer struct {
	out     io.Writer // the command's standard output
	c       Config
	command string // the pager to start at the first write; "" for none

	started bool
	w       io.Writer // where writes go: the pager's input, or out
	pipe    *os.File  // the pager's input, written here
	proc    *exec.Cmd
	sigs    chan os.Signal // ^C, ignored while the pager runs
	quit    bool           // the pager ended before reading all the output
}

// New returns the Writer a command writes its output out through: to a
// pager (Command's) when out is a terminal and paging is not Off, else
// straight to out.
func New(out io.Writer, c Config) *Writer {
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	w := &Writer{out: out, c: c, w: out}
	if f, ok := out.(*os.File); ok && !c.Off && progress.IsTerminal(f) {
		w.command = Command(c.Environ)
	}
	return w
}

// Write writes p to the pager's input, starting the pager at the first
// write, or to the output itself when there is no pager. Once the pager
// has quit, it writes nothing and returns ErrQuit.
func (w *Writer) Write(p []byte) (int, error) {
	if !w.started {
		w.started = true
		if w.command != "" {
			if err := w.start(); err != nil {
				fmt.Fprintf(w.c.Stderr, "ftpatch: warning: the pager %q: %v: writing to the terminal without it\n", w.command, err)
			}
		}
	}
	if w.quit {
		return 0, ErrQuit
	}
	n, err := w.w.Write(p)
	if err != nil && w.proc != nil && errors.Is(err, syscall.EPIPE) {
		w.quit = true
		return n, ErrQuit
	}
	return n, err
}

// start starts the pager, its input a pipe written by Write.
func (w *Writer) start() error {
	if w.c.BeforeStart != nil {
		w.c.BeforeStart()
	}
	proc, err := pagerCmd(w.command, w.c.Environ)
	if err != nil {
		return err
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	proc.Stdin, proc.Stdout, proc.Stderr = r, w.out, w.c.Stderr
	if err := proc.Start(); err != nil {
		r.Close()
		pw.Close()
		return err
	}
	r.Close() // the pager's now
	w.proc, w.pipe, w.w = proc, pw, pw
	// ^C is the pager's to handle (less stops reading, and the user quits
	// it): this process ignores it meanwhile, so as not to leave the
	// pager running on the terminal without it.
	w.sigs = make(chan os.Signal, 1)
	signal.Notify(w.sigs, os.Interrupt)
	return nil
}

// pagerCmd is the command that runs the pager command line: its words,
// the first found on environ's PATH; a command line with a shell's
// special characters (quotes, pipes, variables) runs through /bin/sh, as
// git runs it.
func pagerCmd(command string, environ []string) (*exec.Cmd, error) {
	env := environ
	if _, ok := lookup(environ, envLess); !ok {
		env = append(env[:len(env):len(env)], envLess+"="+defaultLess)
	}
	if strings.ContainsAny(command, shellSpecial) {
		return &exec.Cmd{Path: shell, Args: []string{"sh", "-c", command}, Env: env}, nil
	}
	args := strings.Fields(command)
	path, err := lookPath(args[0], environ)
	if err != nil {
		return nil, err
	}
	return &exec.Cmd{Path: path, Args: args, Env: env}, nil
}

// lookPath finds the program name as a shell would, on environ's PATH
// (the pager runs with that environment, not necessarily this
// process's): a name with a slash is taken as it is.
func lookPath(name string, environ []string) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return "", err
		}
		return name, nil
	}
	path, _ := lookup(environ, "PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// executable is nil when path is a file this process may run.
func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s: %w", path, os.ErrPermission)
	}
	return nil
}

// Close ends the output: the pager's input closed, it waits for the
// pager to end (the user reads to the end and quits it). err is what
// writing the output returned, and what Close returns, except for
// ErrQuit: that the user quit the pager before reading all is no error.
func (w *Writer) Close(err error) error {
	if w.proc != nil {
		w.pipe.Close()
		w.proc.Wait() // its exit status is the user's business, as git leaves it
		signal.Stop(w.sigs)
		w.proc = nil
	}
	if errors.Is(err, ErrQuit) {
		return nil
	}
	return err
}
