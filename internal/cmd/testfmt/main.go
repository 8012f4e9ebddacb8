// Command testfmt runs `go test -json` (the command given as its
// arguments) and reports it as it goes (package testfmt): each package as
// it starts and ends with its time, what failed in full, and every minute
// what is still running. With no arguments it reads the stream from
// stdin. It exits 0 only when every package passed and the command
// exited 0.
//
//	go run ./internal/cmd/testfmt go test -json ./...
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"ftpatch/internal/testfmt"
)

// tick is how often the report names what is still running.
const tick = time.Minute

func main() {
	ok, err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testfmt:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// run runs argv (or, if empty, reads stdin) and reports its stream to
// stdout; the command's stderr goes to stderr as it comes.
func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) (bool, error) {
	in := stdin
	var cmd *exec.Cmd
	if len(argv) > 0 {
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stderr = stdin, stderr
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			return false, err
		}
		if err := cmd.Start(); err != nil {
			return false, err
		}
		in = pipe
	}
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				lines <- line
			}
			if err != nil {
				close(lines)
				if errors.Is(err, io.EOF) {
					err = nil
				}
				readErr <- err
				return
			}
		}
	}()
	r := testfmt.New(stdout, time.Now)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for done := false; !done; {
		select {
		case line, more := <-lines:
			if !more {
				done = true
				break
			}
			r.Line(line)
		case <-ticker.C:
			r.Tick()
		}
	}
	err := <-readErr
	var exitErr error
	if cmd != nil {
		exitErr = cmd.Wait()
		var ee *exec.ExitError
		if exitErr != nil && !errors.As(exitErr, &ee) {
			return false, exitErr
		}
	}
	if err != nil {
		return false, fmt.Errorf("reading the stream: %w", err)
	}
	return r.End(exitErr), nil
}
