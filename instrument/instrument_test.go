package instrument_test

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/elfx"
	"ftpatch/funcs"
	"ftpatch/instrument"
	"ftpatch/prologue"
	"ftpatch/runtime/abi"
)

const src = `#include <stdio.h>
__attribute__((noinline)) int twice(int x) { return x * 2 + printf("%d\n", x); }
int main(int c, char **v) { return twice(c) - 3; }
`

// TestRewrite: each entry of the copy's table names a trampoline that
// starts with the disabled site at a local symbol of its function's
// name, and the function's first bytes jump there; a copy is not
// instrumented twice, and choosing no function is an error.
func TestRewrite(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join(dir, "p.c")
	p := filepath.Join(dir, "p")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O2", "-fcf-protection", c, "-o", p).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := elfx.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := prologue.Find(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := instrument.Rewrite(f, tab, func(*prologue.Func) bool { return false }); !errors.Is(err, instrument.ErrNothing) {
		t.Errorf("nothing chosen: %v", err)
	}
	b, st, err := instrument.Rewrite(f, tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := elfx.Parse("p.i", b)
	if err != nil {
		t.Fatal(err)
	}
	_, syms, err := g.Symtab()
	if err != nil {
		t.Fatal(err)
	}
	names := map[uint64][]string{}
	for _, s := range syms {
		if funcs.IsFunc(&s) {
			names[uint64(s.Value)] = append(names[uint64(s.Value)], s.Name)
		}
	}
	d := g.SectionData(g.Section(abi.PrologueSection))
	if len(d) != st.Made*abi.PrologueEntry || st.Made < 2 {
		t.Fatalf("table of %d bytes for %d functions", len(d), st.Made)
	}
	for i := 0; i < len(d); i += abi.PrologueEntry {
		site, fn := binary.LittleEndian.Uint64(d[i:]), binary.LittleEndian.Uint64(d[i+8:])
		if len(names[fn]) == 0 || len(names[site]) != 1 || names[site][0] != names[fn][0] {
			t.Errorf("entry %d: site 0x%x named %q, function 0x%x named %q", i/abi.PrologueEntry, site, names[site], fn, names[fn])
		}
		nop, _ := g.ReadAt(elfx.Addr(site), 5)
		if string(nop) != "\x0f\x1f\x44\x00\x00" {
			t.Errorf("site 0x%x holds % x, want the 5-byte NOP", site, nop)
		}
		// After endbr64, the jump to the trampoline.
		code, _ := g.ReadAt(elfx.Addr(fn), 9)
		in, err := x86asm.Decode(code[4:], 64)
		if err != nil || in.Op != x86asm.JMP || fn+4+uint64(in.Len)+uint64(int64(in.Args[0].(x86asm.Rel))) != site {
			t.Errorf("function 0x%x: % x does not jump to 0x%x (%v %v)", fn, code, site, in, err)
		}
	}
	if _, _, err := instrument.Rewrite(g, tab, nil); !errors.Is(err, instrument.ErrInstrumented) {
		t.Errorf("instrumented twice: %v", err)
	}
}

// TestCheck: a packed file (no section headers: UPX's) and a signed one
// (a kernel module's signature appended) are refused, each with its
// reason.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join(dir, "p.c")
	p := filepath.Join(dir, "p")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O2", c, "-o", p).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	packed := append([]byte(nil), data...)
	copy(packed[0x3c:], []byte{0, 0, 0, 0}) // e_shnum, e_shstrndx: no section headers
	copy(packed[0x100:], "UPX!")
	signed := append(append([]byte(nil), data...), "~Module signature appended~\n"...)
	for _, k := range []struct {
		name string
		data []byte
		want error
	}{{"packed", packed, instrument.ErrPacked}, {"signed", signed, instrument.ErrSigned}, {"plain", data, nil}} {
		f, err := elfx.Parse(k.name, k.data)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if err := instrument.Check(f); !errors.Is(err, k.want) || (k.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", k.name, err, k.want)
		}
	}
}
