package argspec

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"

	"ftpatch/internal/asksock"
)

// A Server answers the runtime on FTRACE_ARGS_SOCKET (`ftpatch record
// --auto-args`): a process asks, for each module with sites it loads
// (the program at start, the shared objects loaded with it, and each
// one dlopen loads later, when it registers), "BUILD-ID PATH\n" (BUILD-ID
// "-" for none), and reads back that module's own FTRACE_ARGS and
// FTRACE_RETVAL, a line each, until the server closes. The runtime
// names the file the loader really loaded, so no search for shared
// objects is repeated here. A module with no DWARF, or whose file no
// longer has the build-id the process saw, gets two empty lines, and
// its name once on Notes.
//
// The socket lives in a directory only its user can enter. Each answer
// is made once per file and kept; the runtime waits for it at most 10 s
// (runtime/src/tracers/capture.c), so a module's DWARF is read while it waits.
type Server struct {
	globs []string
	enums *Enums
	notes io.Writer

	sock *asksock.Server

	mu      sync.Mutex // guards what follows, and enums
	answers map[string]string
}

// Serve starts a server of the functions globs choose (as Read's),
// their enums kept in enums, its notes written to notes.
func Serve(globs []string, enums *Enums, notes io.Writer) (*Server, error) {
	s := &Server{globs: globs, enums: enums, notes: notes, answers: map[string]string{}}
	sock, err := asksock.Listen("ftpatch-args-", "args.sock", s.serve)
	if err != nil {
		return nil, fmt.Errorf("--auto-args: %w", err)
	}
	s.sock = sock
	return s, nil
}

// Path is the socket's, for FTRACE_ARGS_SOCKET.
func (s *Server) Path() string { return s.sock.Path() }

// Close stops the server, waits for the answers under way and removes
// its directory.
func (s *Server) Close() error { return s.sock.Close() }

// serve answers one question on c.
func (s *Server) serve(c net.Conn) {
	id, path, ok := asksock.Question(asksock.Reader(c))
	if !ok {
		return
	}
	io.WriteString(c, s.Answer(path, id))
}

// Answer is the answer about the module at path, whose build-id the
// process saw as id ("" for none): its FTRACE_ARGS and FTRACE_RETVAL
// lines.
func (s *Server) Answer(path, id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := id + " " + path
	if a, ok := s.answers[key]; ok {
		return a
	}
	a := "\n\n"
	m, err := s.read(path, id)
	if err != nil {
		fmt.Fprintf(s.notes, "ftpatch: note: --auto-args: %v: its functions' arguments are not recorded\n", err)
	} else {
		args, ret := Settings(m.Funcs)
		a = args + "\n" + ret + "\n"
		if len(m.Ambiguous) > 0 {
			fmt.Fprintf(s.notes, "ftpatch: note: --auto-args: %s: %s: functions of one name with different parameters (static ones of different sources), whose arguments are not recorded\n", path, strings.Join(m.Ambiguous, " "))
		}
	}
	s.answers[key] = a
	return a
}

// Prepare reads the module at path now, so that its errors come before
// the program runs; the runtime's question about it is then answered at
// once.
func (s *Server) Prepare(path string) error {
	id, err := BuildID(path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read(path, id)
	if err != nil {
		return err
	}
	args, ret := Settings(m.Funcs)
	s.answers[id+" "+path] = args + "\n" + ret + "\n"
	if abs, err := filepath.Abs(path); err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			s.answers[id+" "+real] = s.answers[id+" "+path] // as /proc/self/exe names it
		}
	}
	return nil
}

func (s *Server) read(path, id string) (*Module, error) {
	if got, err := BuildID(path); err != nil || got != id {
		if err == nil {
			err = fmt.Errorf("%s: the file's build-id is %q, the loaded one's %q (replaced since?)", path, got, id)
		}
		return nil, err
	}
	return Read(path, s.globs, s.enums)
}

// BuildID is the hex GNU build-id of the ELF file at path, "" when it
// has none.
func BuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p.Open(), 1<<20))
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		for len(b) >= 12 {
			namesz, descsz, typ := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
			name := 12 + (int(namesz)+3)&^3
			end := name + (int(descsz)+3)&^3
			if int(namesz) > len(b) || int(descsz) > len(b) || end > len(b) {
				break
			}
			if typ == 3 && namesz == 4 && string(b[12:15]) == "GNU" && descsz <= 64 { // NT_GNU_BUILD_ID
				return hex.EncodeToString(b[name : name+int(descsz)]), nil
			}
			b = b[end:]
		}
	}
	return "", nil
}
