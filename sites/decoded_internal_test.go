package sites

import (
	"debug/elf"
	"path/filepath"
	"testing"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/isa/x86"
)

// TestX86FastAgrees decodes the first instructions of every function in
// the x86-64 fixture objects (gcc and clang, -O0 to -O3) and checks that
// wherever x86Fast recognises an instruction, x/arch decodes the same
// length and a prologue's instruction.
func TestX86FastAgrees(t *testing.T) {
	objs, err := filepath.Glob("testdata/*x86_64*.o")
	if err != nil || len(objs) == 0 {
		t.Fatalf("no x86-64 fixtures: %v", err)
	}
	seen := 0
	for _, path := range objs {
		f, err := elfx.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Arch != arch.X86_64 {
			t.Fatalf("%s: not x86-64", path)
		}
		_, syms, err := f.Symtab()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range syms {
			if s.Type() != elf.STT_FUNC || !s.Defined() || s.Size == 0 {
				continue
			}
			text := f.SectionData(f.Sections[s.Shndx])
			code := text[s.Value : uint64(s.Value)+s.Size]
			for pos, i := 0, 0; pos < len(code) && i < 64; i++ {
				in, err := x86.Decode(code[pos:])
				if err != nil {
					break
				}
				if n, ok := x86.Fast(code[pos:]); ok {
					seen++
					if n != in.Len || (in.Op != 0 && x86.Class(in) != x86.ClassPrologue) {
						t.Errorf("%s: %s+%d: x86Fast says %d bytes; x/arch %q, %d bytes, class %d", filepath.Base(path), s.Name, pos, n, in, in.Len, x86.Class(in))
					}
				}
				pos += in.Len
			}
		}
	}
	if seen < 100 {
		t.Errorf("only %d instructions took the fast path: the fixtures no longer exercise it", seen)
	}
}
