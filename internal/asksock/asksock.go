// Package asksock serves the runtime's questions on a unix socket in a
// directory only its user can enter: what ftpatch record's servers
// (--auto-args's arguments, -P's prologue plans) share. Each connection
// is handled on its own goroutine, within a deadline: a peer that
// neither asks nor reads is dropped.
package asksock

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// IOTimeout bounds a connection.
const IOTimeout = 30 * time.Second

// A Server accepts connections on its socket until closed.
type Server struct {
	ln  net.Listener
	dir string
	wg  sync.WaitGroup
}

// Listen makes a private directory named for pattern (os.MkdirTemp's)
// with a socket name in it, and serves each connection with serve.
func Listen(pattern, name string, serve func(net.Conn)) (*Server, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", filepath.Join(dir, name))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{ln: ln, dir: dir}
	s.wg.Add(1)
	go s.loop(serve)
	return s, nil
}

// Path is the socket's.
func (s *Server) Path() string { return s.ln.Addr().String() }

// Close stops accepting, waits for the connections under way and
// removes the directory.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.wg.Wait()
	os.RemoveAll(s.dir)
	return err
}

func (s *Server) loop(serve func(net.Conn)) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(IOTimeout))
			serve(c)
		}()
	}
}

// Reader is what a connection c is read through: buffered, 8 KiB at
// most in all (the question, and what a protocol reads after it).
func Reader(c io.Reader) *bufio.Reader { return bufio.NewReader(io.LimitReader(c, 8<<10)) }

// Question reads the question a runtime asks first on r (Reader's):
// "BUILD-ID PATH" and a newline, BUILD-ID "-" for a module with none
// (returned as ""). ok is false for anything else, which is not
// answered.
func Question(r *bufio.Reader) (id, path string, ok bool) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", "", false
	}
	id, path, ok = strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	if !ok {
		return "", "", false
	}
	if id == "-" {
		id = ""
	}
	return id, path, ok
}
