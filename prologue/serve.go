package prologue

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"

	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/internal/asksock"
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
// The shared objects of the system's library directories get none
// (SystemLibrary); the program itself does, wherever it lies.
//
// Each module's plans are made once and kept; the trampolines are made
// for each process at the place it names, one stride apart, so that the
// image's size is known before the place is.
type Server struct {
	list  *funclist.List
	notes io.Writer
	sock  *asksock.Server

	mu    sync.Mutex
	plans map[string]*planned // by "build-id path"
}

// A planned module: its chosen functions' plans, its ISA, the place its
// trampolines are made for first (canon: just below the module, which
// the runtime asks for first) and the answers made, by place.
type planned struct {
	is    *isa.ISA
	funcs []*Func
	offs  []uint64 // each trampoline's offset in the image
	size  uint64   // the image's
	canon uint64

	mu      sync.Mutex
	answers map[uint64][]byte
}

// answersKept bounds the answers a module keeps: the canonical place's,
// and a few others (the runtime's fallbacks when it is taken).
const answersKept = 8

// canonical is where a module's trampolines, size bytes, are made for
// first: just below its lowest segment, 64 KiB apart (for a PIE the
// space below is free; a fixed-address program at 0x400000 has room
// below it), or above its highest when below would leave the first
// 64 KiB the kernel keeps unmapped.
func canonical(f *elfx.File, size uint64) uint64 {
	const gap = 64 << 10
	lo, hi := ^uint64(0), uint64(0)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			lo = min(lo, uint64(p.Vaddr))
			hi = max(hi, uint64(p.Vaddr)+p.Memsz)
		}
	}
	size = (size + gap - 1) &^ (gap - 1)
	lo &^= gap - 1
	if f.Type == elf.ET_DYN || lo >= size+2*gap {
		return lo - size - gap // modulo 2^64 for a PIE: below its load address
	}
	return (hi+gap-1)&^(gap-1) + gap
}

// layout places the trampolines in the image, 16-byte aligned: packed,
// each as long as it is, where their length does not depend on their
// place (isa.ISA.TrampolineFixed); else each in the room the longest
// takes.
func (p *planned) layout() error {
	stride := uint64(p.is.TrampolineMax+15) &^ 15
	p.offs = make([]uint64, len(p.funcs))
	for i, fn := range p.funcs {
		p.offs[i] = p.size
		if !p.is.TrampolineFixed {
			p.size += stride
			continue
		}
		b, err := p.is.Trampoline(&fn.Plan, fn.Addr) // any place in reach: the length is the same
		if err != nil {
			return fmt.Errorf("%s: %w", fn.Name, err)
		}
		p.size += (uint64(len(b)) + 15) &^ 15
	}
	return nil
}

// ServePlans starts a server of the functions list chooses, its notes
// (a module it cannot plan) written to notes.
func ServePlans(list *funclist.List, notes io.Writer) (*Server, error) {
	s := &Server{list: list, notes: notes, plans: map[string]*planned{}}
	sock, err := asksock.Listen("ftpatch-prologue-", "plan.sock", func(c net.Conn) { s.serve(c) })
	if err != nil {
		return nil, fmt.Errorf("-P: %w", err)
	}
	s.sock = sock
	return s, nil
}

// Path is the socket's, for FTRACE_PROLOGUE_SOCKET.
func (s *Server) Path() string { return s.sock.Path() }

// Close stops the server, waits for the answers under way and removes
// its directory.
func (s *Server) Close() error { return s.sock.Close() }

// serve answers one module's question on c.
func (s *Server) serve(c io.ReadWriter) {
	r := asksock.Reader(c)
	id, path, ok := asksock.Question(r)
	if !ok {
		return
	}
	p := s.Plans(path, id)
	hdr := make([]byte, abi.PlanHeader)
	copy(hdr, abi.PlanMagic)
	if p == nil || len(p.funcs) == 0 {
		c.Write(hdr)
		return
	}
	binary.LittleEndian.PutUint32(hdr[8:], uint32(len(p.funcs)))
	binary.LittleEndian.PutUint32(hdr[12:], uint32(p.size))
	binary.LittleEndian.PutUint64(hdr[16:], p.canon)
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
// base (the module's file addresses: the place less the load bias),
// made once for each place.
func (p *planned) answer(base uint64) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.answers[base]; ok {
		return a, nil
	}
	a, err := p.make(base)
	if err != nil {
		return nil, err
	}
	if len(p.answers) >= answersKept {
		for k := range p.answers {
			if k != p.canon {
				delete(p.answers, k)
				break
			}
		}
	}
	p.answers[base] = a
	return a, nil
}

// make is answer, made.
func (p *planned) make(base uint64) ([]byte, error) {
	out := make([]byte, 8, 8+p.size+uint64(len(p.funcs))*(abi.PlanEntryHead+16))
	binary.LittleEndian.PutUint32(out, abi.PlanOK)
	image := make([]byte, p.size)
	entries := make([]byte, 0, len(p.funcs)*(abi.PlanEntryHead+16))
	for i, fn := range p.funcs {
		off := p.offs[i]
		room := p.size - off
		if i+1 < len(p.funcs) {
			room = p.offs[i+1] - off
		}
		t := base + off
		b, err := p.is.Trampoline(&fn.Plan, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		if uint64(len(b)) > room {
			return nil, fmt.Errorf("%s: a trampoline of %d bytes at 0x%x, in room for %d", fn.Name, len(b), t, room)
		}
		copy(image[off:], b)
		jump, err := p.is.PrologueJump(&fn.Plan, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		n := fn.Plan.Len
		if n > abi.PlanPatchMax || len(jump) != n || len(fn.Plan.Orig) != n {
			return nil, fmt.Errorf("%s: a patch of %d bytes (jump %d, original %d), over the %d the protocol carries", fn.Name, n, len(jump), len(fn.Plan.Orig), abi.PlanPatchMax)
		}
		e := make([]byte, (abi.PlanEntryHead+2*n+7)&^7)
		binary.LittleEndian.PutUint64(e[0:], fn.Addr)
		binary.LittleEndian.PutUint64(e[8:], fn.Plan.Patch)
		binary.LittleEndian.PutUint32(e[16:], uint32(off))
		binary.LittleEndian.PutUint32(e[20:], uint32(n))
		copy(e[abi.PlanEntryHead:], fn.Plan.Orig)
		copy(e[abi.PlanEntryHead+n:], jump)
		entries = append(entries, e...)
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(entries)))
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

// SystemLibrary reports whether path names a shared object installed
// in the system's library directories (/lib, /usr/lib, /lib64,
// /usr/lib64 and what is under them: the C library and the loader,
// libstdc++, libcrypto...), or ftpatch's runtime: -P leaves their
// functions alone (their calls from the program are traced as library
// calls), but for the program itself wherever it lies. Their code holds
// what no prologue site may be put in (signal returns, the loader's
// resolvers, vfork, context switches), and a system library's thousands
// of functions would be patched in every program that loads it.
func SystemLibrary(path string) bool {
	if strings.HasPrefix(filepath.Base(path), "libftrt.so") {
		return true
	}
	clean := filepath.Clean(path)
	for _, dir := range []string{"/lib/", "/usr/lib/", "/lib64/", "/usr/lib64/", "/lib32/", "/usr/lib32/"} {
		if strings.HasPrefix(clean, dir) {
			return true
		}
	}
	return false
}

func (s *Server) plan(path, id string) (*planned, error) {
	if SystemLibrary(path) {
		return &planned{}, nil // the program itself was prepared, under its names
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
	p := &planned{is: isa.For(f.Arch), answers: map[uint64][]byte{}}
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
	if err := p.layout(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	// The answer for the place the runtime asks for first, made now:
	// the program waits for none of it.
	p.canon = canonical(f, p.size)
	if len(p.funcs) > 0 {
		if _, err := p.answer(p.canon); err != nil {
			var far *nops.RangeError
			if !errors.As(err, &far) {
				return nil, err
			}
		}
	}
	return p, nil
}
