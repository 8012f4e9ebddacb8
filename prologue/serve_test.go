package prologue_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/prologue"
	"ftpatch/runtime/abi"
)

// ask asks srv about the module at path as the runtime does, its
// trampolines placed at base, and returns the header's count and image
// size, and the answer's status, image and entries.
func ask(t *testing.T, srv *prologue.Server, id, path string, base uint64) (n, size uint32, status uint32, image, entries []byte) {
	t.Helper()
	c, err := net.Dial("unix", srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if id == "" {
		id = "-"
	}
	io.WriteString(c, id+" "+path+"\n")
	hdr := make([]byte, abi.PlanHeader)
	if _, err := io.ReadFull(c, hdr); err != nil || string(hdr[:8]) != abi.PlanMagic {
		t.Fatalf("header % x: %v", hdr, err)
	}
	n, size = binary.LittleEndian.Uint32(hdr[8:]), binary.LittleEndian.Uint32(hdr[12:])
	if base == 0 {
		base = binary.LittleEndian.Uint64(hdr[16:]) // where the server asks the trampolines be put
	}
	if n == 0 {
		return
	}
	binary.Write(c, binary.LittleEndian, base)
	st := make([]byte, 8)
	if _, err := io.ReadFull(c, st); err != nil {
		t.Fatal(err)
	}
	status = binary.LittleEndian.Uint32(st)
	if status != abi.PlanOK {
		return
	}
	image = make([]byte, size)
	entries = make([]byte, binary.LittleEndian.Uint32(st[4:]))
	if _, err := io.ReadFull(c, image); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, entries); err != nil {
		t.Fatal(err)
	}
	return
}

// TestServe: the server answers for the functions -P's globs choose,
// with each function's bytes as the file has them and the jump to its
// trampoline at the place the runtime named; a place out of reach is
// PLAN_FAR; a module whose build-id differs, or with no function
// chosen, gets nothing.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	p := build(t, dir, "p", "-O2", "-fcf-protection")
	f, err := elfx.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var notes bytes.Buffer
	list := &funclist.List{}
	list.Add("f", "test")
	list.Add("m*", "test")
	srv, err := prologue.ServePlans(list, &notes)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	const base = 0x40000000 // above the file's segments, in reach
	n, size, status, image, entries := ask(t, srv, f.BuildID(), p, base)
	if n != 2 || status != abi.PlanOK || uint32(len(image)) != size {
		t.Fatalf("%d functions, status %d, image %d of %d bytes", n, status, len(image), size)
	}
	for i, at := 0, 0; i < int(n); i++ {
		e := entries[at:]
		fn, patch := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
		off, l := binary.LittleEndian.Uint32(e[16:]), binary.LittleEndian.Uint32(e[20:])
		orig, jump := e[abi.PlanEntryHead:abi.PlanEntryHead+l], e[abi.PlanEntryHead+l:abi.PlanEntryHead+2*l]
		at += (abi.PlanEntryHead + 2*int(l) + 7) &^ 7
		if want, _ := f.ReadAt(elfx.Addr(patch), uint64(l)); !bytes.Equal(orig, want) || patch != fn+4 {
			t.Errorf("entry %d: patch 0x%x (function 0x%x) holds % x, answered % x", i, patch, fn, want, orig)
		}
		in, err := x86asm.Decode(jump, 64)
		if err != nil || in.Op != x86asm.JMP || patch+uint64(in.Len)+uint64(int64(in.Args[0].(x86asm.Rel))) != base+uint64(off) {
			t.Errorf("entry %d: jump % x does not reach 0x%x", i, jump, base+uint64(off))
		}
		if nop := image[off : off+5]; string(nop) != "\x0f\x1f\x44\x00\x00" {
			t.Errorf("entry %d: trampoline starts % x, want the site's NOP", i, nop)
		}
	}
	// The place the server proposes: below the file's first segment, its
	// answer made already.
	if n, _, status, _, _ := ask(t, srv, f.BuildID(), p, 0); n != 2 || status != abi.PlanOK {
		t.Errorf("at the place proposed: %d functions, status %d", n, status)
	}
	if _, _, status, _, _ := ask(t, srv, f.BuildID(), p, 1<<40); status != abi.PlanFar {
		t.Errorf("a place 1 TiB away: status %d, want PLAN_FAR", status)
	}
	if n, _, _, _, _ := ask(t, srv, "00ff", p, base); n != 0 || !strings.Contains(notes.String(), "build-id") {
		t.Errorf("another build: %d functions; notes %q", n, notes.String())
	}
	none := &funclist.List{}
	none.Add("nothing_named_so", "test")
	srv2, err := prologue.ServePlans(none, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if n, _, _, _, _ := ask(t, srv2, f.BuildID(), filepath.Clean(p), base); n != 0 {
		t.Errorf("no function chosen: %d", n)
	}
}
