package prologue

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/isa"
	"ftpatch/nops"
	"ftpatch/runtime/abi"
)

// A Server answers the runtime on FTRACE_PROLOGUE_SOCKET (`ftpatch
// record -P`): for each module the runtime passes over (the program,
// its shared objects, each one dlopen loads), which of its functions get
// a prologue site, and their trampolines made for the place the runtime
// mapped them (the protocol is runtime/src/abi.h's, PLAN_*). The
// functions are those the globs choose among the module's (Find's), a
// function with a compiler site keeping it.
//
// The C runtime's own libraries (SystemLibrary) get none: their
// functions include code no prologue site may be put in (signal
// returns, the loader's resolvers, vfork, context switches), and
// library calls trace the program's calls into them.
//
// Each module's plans are made once and kept; the trampolines are made
// for each process at the place it names, one stride apart, so that the
// image's size is known before the place is.
type Server struct {
	list  *funclist.List
	notes io.Writer

	ln  net.Listener
	dir string
	wg  sync.WaitGroup

	mu    sync.Mutex
	plans map[string]*planned // by "build-id path"
}

// A planned module: its chosen functions' plans, and its ISA.
type planned struct {
	is    *isa.ISA
	funcs []*Func
}

// stride is the room each trampoline takes in an image.
func (p *planned) stride() uint64 { return uint64(p.is.TrampolineMax+15) &^ 15 }

// ServePlans starts a server of the functions list chooses, its notes
// (a module it cannot plan) written to notes.
func ServePlans(list *funclist.List, notes io.Writer) (*Server, error) {
	dir, err := os.MkdirTemp("", "ftpatch-prologue-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "plan.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("-P: %w", err)
	}
	s := &Server{list: list, notes: notes, ln: ln, dir: dir, plans: map[string]*planned{}}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

// Path is the socket's, for FTRACE_PROLOGUE_SOCKET.
func (s *Server) Path() string { return s.ln.Addr().String() }

// Close stops the server, waits for the answers under way and removes
// its directory.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.wg.Wait()
	os.RemoveAll(s.dir)
	return err
}

// ioTimeout bounds a connection: a peer that neither asks nor reads is
// dropped.
const ioTimeout = 30 * time.Second

func (s *Server) loop() {
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
			c.SetDeadline(time.Now().Add(ioTimeout))
			s.serve(c)
		}()
	}
}

// serve answers one module's question on c.
func (s *Server) serve(c io.ReadWriter) {
	r := bufio.NewReader(io.LimitReader(c, 8<<10))
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	id, path, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	if !ok {
		return
	}
	if id == "-" {
		id = ""
	}
	p := s.Plans(path, id)
	hdr := make([]byte, abi.PlanHeader)
	copy(hdr, abi.PlanMagic)
	if p == nil || len(p.funcs) == 0 {
		c.Write(hdr)
		return
	}
	binary.LittleEndian.PutUint32(hdr[8:], uint32(len(p.funcs)))
	binary.LittleEndian.PutUint32(hdr[12:], uint32(uint64(len(p.funcs))*p.stride()))
	if _, err := c.Write(hdr); err != nil {
		return
	}
	var at [8]byte
	if _, err := io.ReadFull(r, at[:]); err != nil {
		return
	}
	answer, err := p.answer(binary.LittleEndian.Uint64(at[:]))
	if err != nil {
		var far *nops.RangeError
		status := make([]byte, 8)
		if errors.As(err, &far) {
			binary.LittleEndian.PutUint32(status, abi.PlanFar)
		} else {
			fmt.Fprintf(s.notes, "ftpatch: note: -P: %s: %v: its functions get no prologue site\n", path, err)
			binary.LittleEndian.PutUint32(status, abi.PlanNone)
		}
		c.Write(status)
		return
	}
	c.Write(answer)
}

// answer is the status, image and entries of p's trampolines made at
// base (the module's file addresses: the place less the load bias).
func (p *planned) answer(base uint64) ([]byte, error) {
	stride := p.stride()
	out := make([]byte, 8, 8+uint64(len(p.funcs))*(stride+abi.PlanEntry))
	binary.LittleEndian.PutUint32(out, abi.PlanOK)
	image := make([]byte, uint64(len(p.funcs))*stride)
	entries := make([]byte, 0, len(p.funcs)*abi.PlanEntry)
	for i, fn := range p.funcs {
		off := uint64(i) * stride
		t := base + off
		b, err := p.is.Trampoline(&fn.Plan, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		if uint64(len(b)) > stride {
			return nil, fmt.Errorf("%s: a trampoline of %d bytes, over the %d its ISA bounds them to", fn.Name, len(b), stride)
		}
		copy(image[off:], b)
		jump, err := p.is.PrologueJump(&fn.Plan, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		e := make([]byte, abi.PlanEntry)
		binary.LittleEndian.PutUint64(e[0:], fn.Addr)
		binary.LittleEndian.PutUint64(e[8:], fn.Plan.Patch)
		binary.LittleEndian.PutUint32(e[16:], uint32(off))
		binary.LittleEndian.PutUint32(e[20:], uint32(fn.Plan.Len))
		copy(e[24:24+abi.PlanPatchMax], fn.Plan.Orig)
		copy(e[24+abi.PlanPatchMax:], jump)
		entries = append(entries, e...)
	}
	return append(append(out, image...), entries...), nil
}

// Plans returns the plans of the module at path, whose build-id the
// process saw as id ("" for none), made once; nil when it gets none (a
// note says why, once).
func (s *Server) Plans(path, id string) *planned {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := id + " " + path
	if p, ok := s.plans[key]; ok {
		return p
	}
	p, err := s.plan(path, id)
	if err != nil {
		fmt.Fprintf(s.notes, "ftpatch: note: -P: %v: its functions get no prologue site\n", err)
	}
	s.plans[key] = p
	return p
}

// Prepare plans the module at path now, so that its errors come before
// the program runs, and the runtime's question is answered at once.
func (s *Server) Prepare(path string) error {
	f, err := elfx.Open(path)
	if err != nil {
		return err
	}
	id := f.BuildID()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.planFile(f)
	if err != nil {
		return err
	}
	s.plans[id+" "+path] = p
	if abs, err := filepath.Abs(path); err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			s.plans[id+" "+real] = p // as /proc/self/exe names it
		}
	}
	return nil
}

// SystemLibrary reports whether path names one of the C runtime's own
// shared objects (the C library and its parts, the loader, libgcc_s,
// libstdc++, the sanitizers', ftpatch's runtime), which -P leaves alone.
func SystemLibrary(path string) bool {
	base := filepath.Base(path)
	for _, p := range []string{"libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so", "libutil.so", "libresolv.so",
		"libanl.so", "libnsl.so", "libmvec.so", "ld-linux", "ld64.so", "libgcc_s.so", "libstdc++.so", "libasan.so",
		"libubsan.so", "libtsan.so", "liblsan.so", "libftrt.so"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

func (s *Server) plan(path, id string) (*planned, error) {
	if SystemLibrary(path) {
		return &planned{}, nil
	}
	f, err := elfx.Open(path)
	if err != nil {
		return nil, err
	}
	if got := f.BuildID(); got != id {
		return nil, fmt.Errorf("%s: the file's build-id is %q, the loaded one's %q (replaced since?)", path, got, id)
	}
	return s.planFile(f)
}

// planFile chooses f's functions and plans them.
func (s *Server) planFile(f *elfx.File) (*planned, error) {
	t, err := Find(f)
	if err != nil {
		return nil, err
	}
	p := &planned{is: isa.For(f.Arch)}
	if p.is.Trampoline == nil {
		return nil, fmt.Errorf("%s: %w", f.Path, ErrNoISA)
	}
	names := make([]string, len(t.Funcs))
	for i := range t.Funcs {
		names[i] = t.Funcs[i].Name
	}
	sel := s.list.SelectAlso(names, funclist.Demangled(names))
	for i := range t.Funcs {
		if sel.Chosen[i] && t.Funcs[i].What == Made {
			p.funcs = append(p.funcs, &t.Funcs[i])
		}
	}
	return p, nil
}
