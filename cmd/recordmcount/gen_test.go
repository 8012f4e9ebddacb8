package main

// The bad-input corpus under testdata/bad: one file per way an input can be
// wrong, each made from the good object by breaking one thing, so the
// corpus is reproducible. The table below is the only description of it:
// how each file is made and what recordmcount must say about it.
//
//	go test ./cmd/recordmcount -run '^TestCorpusUpToDate$' -regen
//
// rewrites testdata/good-x86_64-pg-mfentry-recorded.o (recordmcount's
// output for the good object) and every derived file under testdata/bad
// from the checked-in good object; `make -C testdata` first recompiles the
// good object and the linked files, then runs the same command. Without
// -regen, TestCorpusUpToDate checks that the checked-in corpus is what the
// table makes, so a changed table cannot go unnoticed.

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"ftpatch/record"
)

var regen = flag.Bool("regen", false, "rewrite testdata/bad and the recorded object from testdata/good-x86_64-pg-mfentry.o")

const (
	goodObj     = "testdata/good-x86_64-pg-mfentry.o"
	recordedObj = "testdata/good-x86_64-pg-mfentry-recorded.o"
	badDir      = "testdata/bad"
)

// A badCase is one file of the corpus.
type badCase struct {
	name string // file name under testdata/bad
	// make builds the file from the good object and from recordmcount's
	// output for it (both parsed by debug/elf, which locates what to
	// break). nil: the file is compiled by testdata/Makefile.
	make func(good, recorded *obj) []byte
	want string // what the one error line must contain, besides the path
}

// corpus is every file under testdata/bad. The cases the file system makes
// (a directory, a missing file, an unreadable file) are in main_test.go.
var corpus = []badCase{
	// Not ELF at all.
	{"not-elf.txt", func(_, _ *obj) []byte { return []byte("int main(void) { return 0; }\n") }, "not an ELF file"},
	{"empty.o", func(_, _ *obj) []byte { return []byte{} }, "not an ELF file"},
	{"magic-only.o", func(g, _ *obj) []byte { return g.head(4) }, "shorter than the 64-byte ELF header"},
	{"short-header.o", func(g, _ *obj) []byte { return g.head(40) }, "shorter than the 64-byte ELF header"},

	// ELF, but not a kind ftpatch reads.
	{"elf32.o", func(g, _ *obj) []byte { return g.with(elf.EI_CLASS, 1, uint64(elf.ELFCLASS32)) }, "32-bit"},
	{"bad-class.o", func(g, _ *obj) []byte { return g.with(elf.EI_CLASS, 1, 7) }, "bad ELF class 7"},
	{"big-endian.o", func(g, _ *obj) []byte { return g.with(elf.EI_DATA, 1, uint64(elf.ELFDATA2MSB)) }, "big-endian"},
	{"bad-data-encoding.o", func(g, _ *obj) []byte { return g.with(elf.EI_DATA, 1, 9) }, "bad ELF data encoding 9"},
	{"bad-version.o", func(g, _ *obj) []byte { return g.with(elf.EI_VERSION, 1, 0) }, "bad ELF version 0"},
	{"machine-i386.o", func(g, _ *obj) []byte { return g.with(18, 2, uint64(elf.EM_386)) }, "EM_386"},
	{"machine-riscv.o", func(g, _ *obj) []byte { return g.with(18, 2, uint64(elf.EM_RISCV)) }, "EM_RISCV"},
	{"core-file.o", func(g, _ *obj) []byte { return g.with(16, 2, uint64(elf.ET_CORE)) }, "ET_CORE"},
	{"shared-object.so", nil, "ET_DYN: recordmcount reads relocatable objects"},
	{"executable", nil, "ET_EXEC: recordmcount reads relocatable objects"},
	{"elf-header-size.o", func(g, _ *obj) []byte { return g.with(52, 2, 52) }, "ELF header size 52"},

	// Truncated.
	{"header-only.o", func(g, _ *obj) []byte { return g.head(64) }, "section header table at 0x338 is past the end of the 64-byte file"},
	{"half.o", func(g, _ *obj) []byte { return g.head(len(g.b) / 2) }, "is past the end of the 796-byte file"},
	{"last-header-cut.o", func(g, _ *obj) []byte { return g.head(len(g.b) - 1) }, "runs past the end"},

	// The section header table.
	{"shoff-past-end.o", func(g, _ *obj) []byte { return g.with(40, 8, 0x100000) }, "section header table at 0x100000 is past the end"},
	{"shnum-past-end.o", func(g, _ *obj) []byte { return g.with(60, 2, 200) }, "section header table (200 headers at 0x338) runs past the end"},
	{"shentsize.o", func(g, _ *obj) []byte { return g.with(58, 2, 40) }, "section header size 40, want 64"},
	{"no-section-headers.o", func(g, _ *obj) []byte { return g.with(40, 8, 0) }, "relocatable object without section headers"},
	{"shstrndx-out-of-range.o", func(g, _ *obj) []byte { return g.with(62, 2, 99) }, "section name table index 99 out of range (12 sections)"},
	{"shstrndx-not-strtab.o", func(g, _ *obj) []byte { return g.with(62, 2, uint64(g.index(".text"))) }, "has type SHT_PROGBITS, want SHT_STRTAB"},

	// One section header.
	{"section-offset-past-end.o", func(g, _ *obj) []byte { return g.shdr(".text", shOffset, 0x100000) }, `section 1: contents (0x5f bytes at 0x100000) run past the end`},
	{"section-size-wraps.o", func(g, _ *obj) []byte {
		// 0x40 + (2^64 - 0x20) wraps to 0x20: inside the file if added
		// without care.
		return g.shdr(".text", shSize, 1<<64-0x20)
	}, "section 1: contents (0xffffffffffffffe0 bytes at 0x40) run past the end"},
	{"section-name-offset.o", func(g, _ *obj) []byte { return g.shdr(".text", shName, 0xffff) }, "section 1: name offset 65535 is outside the 89-byte section name table"},
	{"section-align.o", func(g, _ *obj) []byte { return g.shdr(".text", shAddralign, 24) }, "section 1: alignment 24 is not a power of two"},
	{"overlapping-sections.o", func(g, _ *obj) []byte {
		// .comment moved onto the middle of .text.
		return g.shdr(".comment", shOffset, g.sec(".text").Offset+8)
	}, `section 5 ".comment" overlaps section 1 ".text"`},
	{"section-over-header.o", func(g, _ *obj) []byte { return g.shdr(".comment", shOffset, 0x10) }, `overlaps the ELF header`},
	{"section-over-shdrs.o", func(g, _ *obj) []byte {
		return g.shdr(".comment", shOffset, g.u64(40)+0x10)
	}, `overlaps the section header table`},

	// The symbol table.
	{"symtab-entsize.o", func(g, _ *obj) []byte { return g.shdr(".symtab", shEntsize, 16) }, "symbol table entry size 16"},
	{"symtab-size.o", func(g, _ *obj) []byte { return g.shdr(".symtab", shSize, g.sec(".symtab").Size-8) }, "symbol table entry size 24 and size 184"},
	{"symtab-link.o", func(g, _ *obj) []byte { return g.shdr(".symtab", shLink, uint64(g.index(".text"))) }, "string table link 1 is not a string table"},
	{"symtab-info.o", func(g, _ *obj) []byte { return g.shdr(".symtab", shInfo, 1000) }, "first global symbol index 1000 is past the 8 symbols"},
	{"symbol-name-offset.o", func(g, _ *obj) []byte { return g.sym("work", stName, 0xffff) }, `symbol 6: name offset 65535 is outside the 59-byte string table`},
	{"symbol-section-index.o", func(g, _ *obj) []byte { return g.sym("work", stShndx, 500) }, `symbol 6 "work": section index 500 out of range (12 sections)`},
	{"symbol-xindex-without-table.o", func(g, _ *obj) []byte { return g.sym("work", stShndx, 0xffff) }, `symbol 6: SHN_XINDEX without an extended index entry`},

	// Relocations.
	{"rela-symbol-index.o", func(g, _ *obj) []byte { return g.rela(".rela.text", 0, 999) }, `section 2 ".rela.text": relocation 0: symbol index 999 out of range (8 symbols)`},
	{"rela-link-out-of-range.o", func(g, _ *obj) []byte { return g.shdr(".rela.text", shLink, 99) }, `section 2 ".rela.text": symbol table link 99 is not a symbol table`},
	{"rela-link-not-symtab.o", func(g, _ *obj) []byte { return g.shdr(".rela.text", shLink, uint64(g.index(".strtab"))) }, `symbol table link 10 is not a symbol table`},
	{"rela-entsize.o", func(g, _ *obj) []byte { return g.shdr(".rela.text", shEntsize, 16) }, "relocation entry size 16"},
	{"rela-target.o", func(g, _ *obj) []byte { return g.shdr(".rela.text", shInfo, 99) }, "target section index 99 out of range (12 sections)"},
	{"rel-section.o", func(g, _ *obj) []byte { return g.shdr(".rela.eh_frame", shType, uint64(elf.SHT_REL)) }, "SHT_REL relocations"},

	// The patch sites themselves.
	{"hook-reloc-not-call.o", func(g, _ *obj) []byte {
		// The call to __fentry__ in hook() relocated as data.
		return g.relaType(".rela.text", 0, uint32(elf.R_X86_64_64))
	}, "relocation R_X86_64_64 against __fentry__ is not a call"},
	{"hook-call-clobbered.o", func(g, _ *obj) []byte {
		// The 6-byte `call *__fentry__@GOTPCREL(%rip)` at the start of
		// hook() overwritten by `ret; nop*5`.
		return g.bytesAt(g.sec(".text").Offset, []byte{0xc3, 0x90, 0x90, 0x90, 0x90, 0x90})
	}, `section ".text"+0x0 (in hook): call to __fentry__: found "RET"`},
	{"hook-addend.o", func(g, _ *obj) []byte { return g.relaAddend(".rela.text", 0, 0) }, "call to __fentry__ with addend 0, want -4"},

	// Section 0 is all zeros but for the counts of extended numbering;
	// the parser checks neither its type nor its contents' bounds, so
	// with a type that readers look for and an offset past the end, its
	// contents are sliced out of the file: recordmcount panics. Found by
	// FuzzParse (elfx/testdata/fuzz/FuzzParse/section0-type).
	{"section0-symtab-shndx.o", func(g, _ *obj) []byte {
		b := g.shdrIn(slices.Clone(g.b), "", shType, uint64(elf.SHT_SYMTAB_SHNDX))
		b = g.shdrIn(b, "", shOffset, 0x100000)
		return g.shdrIn(b, "", shLink, uint64(g.index(".symtab")))
	}, "section 0"},
	{"section0-group.o", func(g, _ *obj) []byte {
		b := g.shdrIn(slices.Clone(g.b), "", shType, uint64(elf.SHT_GROUP))
		b = g.shdrIn(b, "", shOffset, 0x100000)
		return g.shdrIn(b, "", shLink, uint64(g.index(".symtab")))
	}, "section 0"},

	// Found while writing these tests, and fixed: each made recordmcount
	// panic instead of reporting an error.
	{"code-nobits-table.o", func(_, r *obj) []byte {
		// .text turned into SHT_NOBITS (still SHF_EXECINSTR), its
		// relocations retargeted to .data so that no hook call is
		// looked at, and both __mcount_loc entries pointed at work()
		// (.text+0x10): classifying the entry sliced .text's (absent)
		// contents at 0x10.
		b := r.shdrIn(slices.Clone(r.b), ".text", shType, uint64(elf.SHT_NOBITS))
		b = r.shdrIn(b, ".rela.text", shInfo, uint64(r.index(".data")))
		b = r.relaAddendIn(b, ".rela__mcount_loc", 0, 0x10)
		return b
	}, `section 1 ".text"+0x10 is not code`},
	{"rela-link-zero.o", func(_, r *obj) []byte {
		// .rela__mcount_loc with sh_link 0, so no symbol index was
		// checked, and a relocation against symbol 999, which was
		// then looked up in .symtab.
		b := r.shdrIn(slices.Clone(r.b), ".rela__mcount_loc", shLink, 0)
		return r.relaIn(b, ".rela__mcount_loc", 0, 999)
	}, `".rela__mcount_loc": links to section 0 for its symbols, not the symbol table`},
}

// Section header and symbol fields: offset in the entry, size in bytes.
type field struct{ off, size int }

var (
	shName      = field{0, 4}
	shType      = field{4, 4}
	shOffset    = field{24, 8}
	shSize      = field{32, 8}
	shLink      = field{40, 4}
	shInfo      = field{44, 4}
	shAddralign = field{48, 8}
	shEntsize   = field{56, 8}

	stName  = field{0, 4}
	stShndx = field{6, 2}
)

// An obj is an object to break, with debug/elf's reading of it. Every
// method returns a changed copy and leaves b alone.
type obj struct {
	b []byte
	f *elf.File
}

func loadObj(t testing.TB, path string) *obj {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &obj{b, f}
}

func (o *obj) head(n int) []byte { return slices.Clone(o.b[:n]) }

func (o *obj) u64(off int) uint64 { return binary.LittleEndian.Uint64(o.b[off:]) }

// with sets the size-byte little-endian field at off to v.
func (o *obj) with(off, size int, v uint64) []byte { return put(slices.Clone(o.b), off, size, v) }

func put(b []byte, off, size int, v uint64) []byte {
	switch size {
	case 1:
		b[off] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b[off:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b[off:], uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(b[off:], v)
	default:
		panic(fmt.Sprintf("field size %d", size))
	}
	return b
}

func (o *obj) bytesAt(off uint64, p []byte) []byte {
	b := slices.Clone(o.b)
	copy(b[off:], p)
	return b
}

func (o *obj) index(name string) int {
	for i, s := range o.f.Sections {
		if s.Name == name {
			return i
		}
	}
	panic("no section " + name)
}

func (o *obj) sec(name string) *elf.Section { return o.f.Sections[o.index(name)] }

func (o *obj) shdr(name string, fl field, v uint64) []byte {
	return o.shdrIn(slices.Clone(o.b), name, fl, v)
}

func (o *obj) shdrIn(b []byte, name string, fl field, v uint64) []byte {
	at := int(o.u64(40)) + o.index(name)*64 + fl.off
	return put(b, at, fl.size, v)
}

// sym sets a field of the symbol named name in .symtab.
func (o *obj) sym(name string, fl field, v uint64) []byte {
	syms, err := o.f.Symbols()
	if err != nil {
		panic(err)
	}
	for i, s := range syms {
		if s.Name == name {
			// Symbols() leaves out the null symbol: entry i+1.
			at := int(o.sec(".symtab").Offset) + (i+1)*24 + fl.off
			return put(slices.Clone(o.b), at, fl.size, v)
		}
	}
	panic("no symbol " + name)
}

func (o *obj) relaAt(sec string, i int) int { return int(o.sec(sec).Offset) + i*24 }

// rela sets the symbol index of relocation i of sec.
func (o *obj) rela(sec string, i int, sym uint32) []byte {
	return o.relaIn(slices.Clone(o.b), sec, i, sym)
}

func (o *obj) relaIn(b []byte, sec string, i int, sym uint32) []byte {
	at := o.relaAt(sec, i) + 8
	info := binary.LittleEndian.Uint64(b[at:])
	return put(b, at, 8, uint64(sym)<<32|info&0xffffffff)
}

func (o *obj) relaType(sec string, i int, typ uint32) []byte {
	b := slices.Clone(o.b)
	at := o.relaAt(sec, i) + 8
	info := binary.LittleEndian.Uint64(b[at:])
	return put(b, at, 8, info&^0xffffffff|uint64(typ))
}

func (o *obj) relaAddend(sec string, i int, addend int64) []byte {
	return o.relaAddendIn(slices.Clone(o.b), sec, i, addend)
}

func (o *obj) relaAddendIn(b []byte, sec string, i int, addend int64) []byte {
	return put(b, o.relaAt(sec, i)+16, 8, uint64(addend))
}

// buildCorpus makes every derived file of the corpus from the checked-in
// good and recorded objects: file name -> contents.
func buildCorpus(t testing.TB) map[string][]byte {
	good, rec := loadObj(t, goodObj), loadObj(t, recordedObj)
	out := map[string][]byte{}
	for _, c := range corpus {
		if c.make != nil {
			out[c.name] = c.make(good, rec)
		}
	}
	return out
}

// TestCorpusUpToDate checks (or with -regen, makes) testdata/bad: every
// derived file is what the table makes of the checked-in good object, every
// compiled one exists, and nothing else is there.
func TestCorpusUpToDate(t *testing.T) {
	if *regen {
		regenerate(t)
	}
	want := buildCorpus(t)
	names := map[string]bool{}
	for _, c := range corpus {
		if names[c.name] {
			t.Errorf("case %s listed twice", c.name)
		}
		names[c.name] = true
		got, err := os.ReadFile(filepath.Join(badDir, c.name))
		if err != nil {
			t.Errorf("%v (run with -regen, or make -C testdata)", err)
			continue
		}
		if w, ok := want[c.name]; ok && !bytes.Equal(got, w) {
			t.Errorf("%s differs from what its generator makes: run go test -run '^TestCorpusUpToDate$' -regen", c.name)
		}
	}
	ents, err := os.ReadDir(badDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !names[e.Name()] {
			t.Errorf("%s/%s is in no case of the corpus table", badDir, e.Name())
		}
	}
}

// regenerate rewrites the recorded object from the good one, then every
// derived file of the corpus.
func regenerate(t *testing.T) {
	data, err := os.ReadFile(goodObj)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := record.Rewrite(goodObj, data, record.Options{})
	if err != nil || img == nil {
		t.Fatalf("recording %s: image %d bytes, %v", goodObj, len(img), err)
	}
	if err := os.WriteFile(recordedObj, img, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, b := range buildCorpus(t) {
		if err := os.WriteFile(filepath.Join(badDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
