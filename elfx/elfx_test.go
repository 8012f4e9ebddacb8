package elfx_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/elfx"
)

// objects returns the objects under testdata (built by testdata/Makefile),
// failing if there are none.
func objects(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.o")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no objects under testdata (%v): run make -C elfx/testdata", err)
	}
	return paths
}

// open reads path with both elfx and debug/elf.
func open(t *testing.T, path string) (*elfx.File, *elf.File) {
	t.Helper()
	f, err := elfx.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return f, d
}

// forEachFile runs fn on every testdata object and on a linked PIE and
// shared object built now, so linked files' .dynsym and .rela.dyn are
// compared too.
func forEachFile(t *testing.T, fn func(t *testing.T, f *elfx.File, d *elf.File)) {
	paths := objects(t)
	if _, err := exec.LookPath("gcc"); err == nil {
		dir := t.TempDir()
		src := writeFile(t, dir, "pie.c", pieSource)
		paths = append(paths, build(t, dir, "gcc", "pie", "-O2", "-fpie", "-pie", src))
		paths = append(paths, build(t, dir, "gcc", "lib.so", "-O2", "-fpic", "-shared", src))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			f, d := open(t, p)
			fn(t, f, d)
		})
	}
}

// TestHeaderAndSections: the file header and every section header read
// as debug/elf reads them.
func TestHeaderAndSections(t *testing.T) {
	forEachFile(t, func(t *testing.T, f *elfx.File, d *elf.File) {
		checkSections(t, f, d)
		if f.Type != d.Type || uint64(f.Entry) != d.Entry {
			t.Errorf("type %v entry %#x, debug/elf says %v %#x", f.Type, f.Entry, d.Type, d.Entry)
		}
		want := map[elf.Machine]arch.Arch{elf.EM_X86_64: arch.X86_64, elf.EM_AARCH64: arch.ARM64}[d.Machine]
		if f.Arch != want {
			t.Errorf("arch %v, want %v (machine %v)", f.Arch, want, d.Machine)
		}
		if len(f.Progs) != len(d.Progs) {
			t.Fatalf("%d program headers, debug/elf reads %d", len(f.Progs), len(d.Progs))
		}
		for i, p := range d.Progs {
			got := f.Progs[i]
			if got.Type != p.Type || got.Flags != p.Flags || uint64(got.Off) != p.Off || uint64(got.Vaddr) != p.Vaddr ||
				got.Filesz != p.Filesz || got.Memsz != p.Memsz || got.Align != p.Align {
				t.Errorf("program header %d: %+v, debug/elf reads %+v", i, got, p.ProgHeader)
			}
		}
	})
}

// checkSections compares every section header of f with d's.
func checkSections(t *testing.T, f *elfx.File, d *elf.File) {
	t.Helper()
	if len(f.Sections) != len(d.Sections) {
		t.Fatalf("%d sections, debug/elf reads %d", len(f.Sections), len(d.Sections))
	}
	for i, ds := range d.Sections {
		s := f.Sections[i]
		if s.Index != i || s.Name != ds.Name || s.Type != ds.Type || s.Flags != ds.Flags || uint64(s.Addr) != ds.Addr ||
			uint64(s.Off) != ds.Offset || s.Size != ds.Size || s.Link != ds.Link || s.Info != ds.Info ||
			s.Align != ds.Addralign || s.Entsize != ds.Entsize {
			t.Errorf("section %d: %+v\ndebug/elf reads %+v", i, *s, ds.SectionHeader)
		}
		if s.Type == elf.SHT_NOBITS || i == 0 {
			continue
		}
		want, err := ds.Data()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.SectionData(s), want) {
			t.Errorf("%s: contents differ from debug/elf's", s)
		}
		if len(f.Sections) < 1000 && f.Section(s.Name) == nil { // linear: only for small files
			t.Errorf("Section(%q) = nil", s.Name)
		}
	}
}

// symKey is a symbol as debug/elf reads it, for comparing.
func symKey(name string, info, other byte, shndx uint32, value, size uint64) string {
	return fmt.Sprintf("%q info=%#x other=%#x shndx=%d value=%#x size=%d", name, info, other, shndx, value, size)
}

func elfxKey(s elfx.Symbol) string {
	return symKey(s.Name, s.Info, s.Other, s.Shndx, uint64(s.Value), s.Size)
}

// TestSymbols: Symtab and Symbols read what debug/elf's Symbols and
// DynamicSymbols read, with the null symbol at index 0.
func TestSymbols(t *testing.T) {
	forEachFile(t, func(t *testing.T, f *elfx.File, d *elf.File) {
		for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
			var want []elf.Symbol
			var err error
			if typ == elf.SHT_SYMTAB {
				want, err = d.Symbols()
			} else {
				want, err = d.DynamicSymbols()
			}
			i := slices.IndexFunc(f.Sections, func(s *elfx.Section) bool { return s.Type == typ })
			if i < 0 {
				if err == nil && len(want) > 0 {
					t.Errorf("no %v section, debug/elf reads %d symbols", typ, len(want))
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Symbols(f.Sections[i])
			if err != nil {
				t.Fatal(err)
			}
			if typ == elf.SHT_SYMTAB {
				sec, cached, err := f.Symtab()
				if err != nil || sec != f.Sections[i] || !slices.Equal(cached, got) {
					t.Errorf("Symtab() = %v, %d symbols, %v; want %v and the same symbols as Symbols", sec, len(cached), err, f.Sections[i])
				}
			}
			if len(got) != len(want)+1 || got[0] != (elfx.Symbol{}) {
				t.Fatalf("%v: %d symbols (first %+v), want the null symbol and debug/elf's %d", typ, len(got), got[0], len(want))
			}
			for j, w := range want {
				g := got[j+1]
				if g.Index != j+1 {
					t.Errorf("symbol %d has Index %d", j+1, g.Index)
				}
				if gk, wk := elfxKey(g), symKey(w.Name, w.Info, w.Other, uint32(w.Section), w.Value, w.Size); gk != wk {
					t.Errorf("%v symbol %d: %s\ndebug/elf reads %s", typ, j+1, gk, wk)
				}
			}
		}
		if i := slices.IndexFunc(f.Sections, func(s *elfx.Section) bool { return s.Type == elf.SHT_SYMTAB }); i < 0 {
			if _, _, err := f.Symtab(); !errors.Is(err, elfx.ErrNoSection) {
				t.Errorf("Symtab() of a file without .symtab: %v, want ErrNoSection", err)
			}
		}
	})
}

// TestRelas: Relas reads each SHT_RELA section as debug/elf's Rela64
// entries and R_SYM64 / R_TYPE64 read it.
func TestRelas(t *testing.T) {
	forEachFile(t, func(t *testing.T, f *elfx.File, d *elf.File) {
		n := 0
		for i, ds := range d.Sections {
			if ds.Type != elf.SHT_RELA {
				continue
			}
			n++
			want := make([]elf.Rela64, ds.Size/24)
			if err := binary.Read(ds.Open(), binary.LittleEndian, want); err != nil {
				t.Fatal(err)
			}
			got, err := f.Relas(f.Sections[i])
			if err != nil {
				t.Fatalf("%s: %v", f.Sections[i], err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d relocations, debug/elf reads %d", f.Sections[i], len(got), len(want))
			}
			for j, w := range want {
				g := got[j]
				if g.Off != w.Off || g.Sym != elf.R_SYM64(w.Info) || g.Type != elf.R_TYPE64(w.Info) || g.Addend != w.Addend {
					t.Errorf("%s: relocation %d: %+v, debug/elf reads %+v", f.Sections[i], j, g, w)
				}
			}
		}
		if n == 0 {
			t.Error("no SHT_RELA section to compare")
		}
	})
}

// TestAppendRela: entries AppendRela encodes read back through debug/elf
// (Elf64_Rela, R_SYM64, R_TYPE64) as they were given, for both machines'
// 64-bit absolute type, R_*_NONE, a symbol index using all 32 bits and a
// negative addend; appending to a slice of existing data rewrites that
// entry in place and leaves its neighbours as they were.
func TestAppendRela(t *testing.T) {
	in := []elfx.Rela{
		{Off: 0x10, Sym: 3, Type: uint32(elf.R_X86_64_64), Addend: 0x1234},
		{Off: 0xfffffffffffffff8, Sym: 0xffffffff, Type: uint32(elf.R_AARCH64_ABS64), Addend: -8},
		{Off: 0x20, Sym: 0, Type: elfx.RelocNone, Addend: 0},
	}
	var b []byte
	for _, r := range in {
		b = elfx.AppendRela(b, r)
	}
	if len(b) != len(in)*elfx.RelaSize {
		t.Fatalf("%d entries take %d bytes, want %d", len(in), len(b), len(in)*elfx.RelaSize)
	}
	decode := func(b []byte) []elfx.Rela {
		d := make([]elf.Rela64, len(b)/elfx.RelaSize)
		if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, d); err != nil {
			t.Fatal(err)
		}
		out := make([]elfx.Rela, len(d))
		for i, r := range d {
			out[i] = elfx.Rela{Off: r.Off, Sym: elf.R_SYM64(r.Info), Type: elf.R_TYPE64(r.Info), Addend: r.Addend}
		}
		return out
	}
	if got := decode(b); !slices.Equal(got, in) {
		t.Errorf("debug/elf reads %+v, want %+v", got, in)
	}

	in[1] = elfx.Rela{Off: 0x18, Sym: 7, Type: uint32(elf.R_X86_64_PC32), Addend: -4}
	elfx.AppendRela(b[elfx.RelaSize:][:0], in[1])
	if len(b) != len(in)*elfx.RelaSize {
		t.Fatalf("rewriting in place changed the length to %d", len(b))
	}
	if got := decode(b); !slices.Equal(got, in) {
		t.Errorf("after rewriting entry 1 in place, debug/elf reads %+v, want %+v", got, in)
	}
}

// TestTypedAccessorErrors: asking for the wrong kind of section is an
// error, not garbage.
func TestTypedAccessorErrors(t *testing.T) {
	f, _ := open(t, "testdata/funcs-x86_64-pg-mfentry.o")
	text := f.Section(".text")
	if _, err := f.Relas(text); err == nil {
		t.Error("Relas(.text) succeeded")
	}
	if _, err := f.Symbols(text); err == nil {
		t.Error("Symbols(.text) succeeded")
	}
	if f.Section(".no-such-section") != nil || f.Section("") != nil {
		t.Error("Section found a section that is not there (or the null section)")
	}
	if _, err := f.Words(text, nil); err == nil && text.Size%8 != 0 {
		t.Errorf("Words of a %d-byte section succeeded", text.Size)
	}
	for _, typ := range []elf.Type{elf.ET_DYN, elf.ET_EXEC} {
		g := *f
		g.Type = typ
		if _, err := g.Edit(); !errors.Is(err, elfx.ErrNotRelocatable) {
			t.Errorf("Edit of an %v: %v, want ErrNotRelocatable", typ, err)
		}
	}
}

// TestParseErrors: malformed headers give the sentinel or *FormatError the
// package documents, placed at the offending field.
func TestParseErrors(t *testing.T) {
	good, err := os.ReadFile("testdata/funcs-x86_64-pg-mfentry.o")
	if err != nil {
		t.Fatal(err)
	}
	d, err := elf.NewFile(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	shoff := binary.LittleEndian.Uint64(good[40:])
	textHdr := shoff + 64*uint64(slices.IndexFunc(d.Sections, func(s *elf.Section) bool { return s.Name == ".text" }))
	set := func(off, size int, v uint64) []byte {
		b := slices.Clone(good)
		switch size {
		case 1:
			b[off] = byte(v)
		case 2:
			binary.LittleEndian.PutUint16(b[off:], uint16(v))
		case 8:
			binary.LittleEndian.PutUint64(b[off:], v)
		}
		return b
	}
	for _, c := range []struct {
		name    string
		data    []byte
		is      error  // a sentinel, or nil for a *FormatError
		off     uint64 // the *FormatError's Off
		message string
	}{
		{"empty", nil, elfx.ErrNotELF, 0, "not an ELF file"},
		{"text", []byte("\x7fELG not really"), elfx.ErrNotELF, 0, "not an ELF file"},
		{"short", good[:63], nil, 0, "shorter than the 64-byte ELF header"},
		{"elf32", set(4, 1, 1), elfx.ErrUnsupported, 0, "32-bit"},
		{"big-endian", set(5, 1, 2), elfx.ErrUnsupported, 0, "big-endian"},
		{"riscv", set(18, 2, uint64(elf.EM_RISCV)), elfx.ErrUnsupported, 0, "EM_RISCV"},
		{"class", set(4, 1, 0), nil, 4, "bad ELF class 0"},
		{"shoff", set(40, 8, 1<<40), nil, 40, "past the end"},
		{"shoff-wraps", set(40, 8, 1<<64-32), nil, 40, "past the end"},
		{"shstrndx", set(62, 2, 500), nil, 62, "section name table index 500"},
		{"section-offset", set(int(textHdr)+24, 8, 1<<63), nil, textHdr, "run past the end"},
		{"section-size-wraps", set(int(textHdr)+32, 8, 1<<64-0x10), nil, textHdr, "run past the end"},
		{"section-align", set(int(textHdr)+48, 8, 12), nil, textHdr + 48, "not a power of two"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := elfx.Parse("x.o", c.data)
			if err == nil {
				t.Fatal("parsed")
			}
			if !strings.Contains(err.Error(), c.message) {
				t.Errorf("error %q does not say %q", err, c.message)
			}
			if strings.Contains(err.Error(), "x.o") {
				t.Errorf("Parse error %q repeats the path", err)
			}
			var fe *elfx.FormatError
			if c.is != nil {
				if !errors.Is(err, c.is) {
					t.Errorf("error %q is not %v", err, c.is)
				}
			} else if !errors.As(err, &fe) || uint64(fe.Off) != c.off {
				t.Errorf("error %q (%T), want a *FormatError at offset %#x", err, err, c.off)
			}
		})
	}
	// Open names the path.
	p := filepath.Join(t.TempDir(), "elf32.o")
	if err := os.WriteFile(p, set(4, 1, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := elfx.Open(p); err == nil || !strings.HasPrefix(err.Error(), p+": ") || !errors.Is(err, elfx.ErrUnsupported) {
		t.Errorf("Open: %v, want an ErrUnsupported naming %s", err, p)
	}
}

// symID names a symbol by what it is rather than where it is in its
// table: a section symbol by its section, anything else by name, kind
// and place.
func symID(f *elfx.File, syms []elfx.Symbol, i uint32) string {
	if int(i) >= len(syms) {
		return "an index past the symbol table" // stays one when renumbered
	}
	s := syms[i]
	if s.Type() == elf.STT_SECTION && s.Defined() {
		return fmt.Sprintf("section symbol of section %d %q", s.Shndx, f.Sections[s.Shndx].Name)
	}
	return fmt.Sprintf("%q %v %v shndx=%d value=%#x", s.Name, s.Type(), s.Bind(), s.Shndx, s.Value)
}

// references is symbolRefs, failing t on an error.
func references(t *testing.T, f *elfx.File) map[int][]string {
	t.Helper()
	refs, err := symbolRefs(f)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// addSectionSymbols adds section symbols for secs to a copy of f (read
// from path) and returns their indices, the edited object's bytes and
// the object parsed again; any error fails t.
func addSectionSymbols(t *testing.T, f *elfx.File, path string, secs []int) ([]uint32, []byte, *elfx.File) {
	t.Helper()
	ed, err := f.Edit()
	if err != nil {
		t.Fatal(err)
	}
	added, err := ed.AddSectionSymbols(secs)
	if err != nil {
		t.Fatal(err)
	}
	img := ed.Bytes()
	g, err := elfx.Parse(path, img)
	if err != nil {
		t.Fatalf("re-parsing the edited object: %v", err)
	}
	return added, img, g
}

// TestAddSectionSymbols: after section symbols are added for every code
// section, every relocation, group signature and address-significance
// entry still names the same symbol; the new symbols are local section
// symbols of the sections asked for, placed before the first global; and
// debug/elf reads the result.
func TestAddSectionSymbols(t *testing.T) {
	for _, p := range objects(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			f, _ := open(t, p)
			var secs []int
			for _, s := range f.Sections {
				if s.Flags&elf.SHF_EXECINSTR != 0 || s.Type == elf.SHT_NOBITS {
					secs = append(secs, s.Index)
				}
			}
			symSec, before, err := f.Symtab()
			if err != nil {
				t.Fatal(err)
			}
			wantRefs := references(t, f)
			if len(wantRefs) == 0 {
				t.Fatal("no symbol references to check")
			}
			added, img, g := addSectionSymbols(t, f, p, secs)
			if _, err := elf.NewFile(bytes.NewReader(img)); err != nil {
				t.Errorf("debug/elf cannot read the edited object: %v", err)
			}
			if len(g.Sections) != len(f.Sections) {
				t.Errorf("%d sections after the edit, want %d", len(g.Sections), len(f.Sections))
			}
			gSym, after, err := g.Symtab()
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before)+len(secs) || gSym.Info != symSec.Info+uint32(len(secs)) {
				t.Errorf("%d symbols, first global %d; want %d and %d", len(after), gSym.Info, len(before)+len(secs), symSec.Info+uint32(len(secs)))
			}
			for j, idx := range added {
				s := after[idx]
				if s.Type() != elf.STT_SECTION || s.Bind() != elf.STB_LOCAL || s.Shndx != uint32(secs[j]) || s.Value != 0 {
					t.Errorf("added symbol %d: %+v, want a local section symbol of section %d", idx, s, secs[j])
				}
			}
			for i, s := range after {
				if local := s.Bind() == elf.STB_LOCAL; local != (i < int(gSym.Info)) {
					t.Errorf("symbol %d %q (%v) is on the wrong side of the first global, %d", i, s.Name, s.Bind(), gSym.Info)
				}
			}
			gotRefs := references(t, g)
			for sec, want := range wantRefs {
				if got := gotRefs[sec]; !slices.Equal(got, want) {
					t.Errorf("%s: references after the edit:\n%s\nwant:\n%s", g.Sections[sec], strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
			checkReadelf(t, img)
		})
	}
}

// checkReadelf runs readelf, when installed, on img and fails on any
// warning or error it prints: an independent reader of the output.
func checkReadelf(t *testing.T, img []byte) {
	t.Helper()
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		return
	}
	p := filepath.Join(t.TempDir(), "edited.o")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(readelf, "-W", "-h", "-S", "-s", "-r", "-g", p)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("readelf on the edited object: %v\n%s", err, stderr.String())
	}
}

// TestEditorLayout: the output keeps every input byte at its offset except
// the section header fields of the ELF header and sections rewritten in
// place; a grown section moves to the end; an unchanged edit re-parses to
// the same sections.
func TestEditorLayout(t *testing.T) {
	p := "testdata/funcs-x86_64-pg-mfentry.o"
	f, d := open(t, p)

	ed, err := f.Edit()
	if err != nil {
		t.Fatal(err)
	}
	g, err := elfx.Parse(p, ed.Bytes())
	if err != nil {
		t.Fatalf("unchanged edit: %v", err)
	}
	checkSections(t, g, d)

	text, comment := f.Section(".text"), f.Section(".comment")
	ed, _ = f.Edit()
	small := bytes.Repeat([]byte{0xcc}, int(text.Size)-3) // int3
	ed.SetData(text.Index, small)
	big := append(slices.Clone(f.SectionData(comment)), "and more"...)
	ed.SetData(comment.Index, big)
	added := ed.AddSection(elfx.Section{Name: ".note.added", Type: elf.SHT_NOTE, Align: 4}, []byte("note"))
	if added != len(f.Sections) || ed.NumSections() != len(f.Sections)+1 {
		t.Errorf("AddSection = %d, NumSections %d; want %d, %d", added, ed.NumSections(), len(f.Sections), len(f.Sections)+1)
	}
	if h := ed.Header(added); h.Name != ".note.added" || h.Size != 4 {
		t.Errorf("Header of the added section: %+v", h)
	}
	img := ed.Bytes()
	g, err = elfx.Parse(p, img)
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Sections[text.Index]; s.Off != text.Off || !bytes.Equal(g.SectionData(s), small) {
		t.Errorf(".text shrunk: at %#x with %d bytes, want in place at %#x with %d", s.Off, s.Size, text.Off, len(small))
	}
	if s := g.Sections[comment.Index]; uint64(s.Off) < uint64(len(f.Data)) || !bytes.Equal(g.SectionData(s), big) {
		t.Errorf(".comment grown: at %#x, want past the input's end %#x, with the new contents", s.Off, len(f.Data))
	}
	if s := g.Section(".note.added"); s == nil || s.Index != added || string(g.SectionData(s)) != "note" || s.Off%4 != 0 {
		t.Errorf("added section: %+v", s)
	}
	for off := range f.Data {
		inText := uint64(off) >= uint64(text.Off) && uint64(off) < uint64(text.Off)+uint64(len(small))
		inHeader := (off >= 40 && off < 48) || (off >= 60 && off < 64) // e_shoff, e_shnum, e_shstrndx
		if img[off] != f.Data[off] && !inText && !inHeader {
			t.Fatalf("byte %#x changed from %#x to %#x outside every rewritten place", off, f.Data[off], img[off])
		}
	}
	checkReadelf(t, img)

	// Chunks is Bytes in pieces; when nothing is rewritten in place the
	// input's bytes after the ELF header are not copied.
	ed, _ = f.Edit()
	ed.SetData(comment.Index, big)
	chunks := ed.Chunks()
	if joined := bytes.Join(chunks, nil); !bytes.Equal(joined, ed.Bytes()) {
		t.Error("Chunks joined differ from Bytes")
	}
	if len(chunks) < 2 || len(chunks[0]) != 64 || len(chunks[1]) == 0 || &chunks[1][0] != &f.Data[64] {
		t.Error("with nothing rewritten in place, the second chunk does not alias the input after its ELF header")
	}
}

// TestAddToGroup: sections added to a COMDAT group are listed in it after
// the edit; a section that is not a group is refused.
func TestAddToGroup(t *testing.T) {
	f, _ := open(t, "testdata/comdat-x86_64-pg-mfentry.o")
	ed, err := f.Edit()
	if err != nil {
		t.Fatal(err)
	}
	grp := slices.IndexFunc(f.Sections, func(s *elfx.Section) bool { return s.Type == elf.SHT_GROUP })
	if grp < 0 {
		t.Fatal("no group")
	}
	if err := ed.AddToGroup(f.Section(".text").Index, 1); err == nil {
		t.Error("AddToGroup on .text succeeded")
	}
	n := ed.AddSection(elfx.Section{Name: ".data.member", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_GROUP, Align: 1}, []byte{1})
	if err := ed.AddToGroup(grp, n); err != nil {
		t.Fatal(err)
	}
	g, err := elfx.Parse("x.o", ed.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(f.SectionData(f.Sections[grp])), byte(n), byte(n>>8), 0, 0)
	if got := g.SectionData(g.Sections[grp]); !bytes.Equal(got, want) {
		t.Errorf("group contents % x, want % x", got, want)
	}
	checkReadelf(t, ed.Bytes())
}

// bigObject assembles an object with nsec sections of one byte each
// (.s0, .s1, ...) besides those the assembler adds, and a global symbol
// "first" in .s0; with high, also a global "last" in the last one, so
// the object needs .symtab_shndx.
func bigObject(t *testing.T, nsec int, high bool) string {
	t.Helper()
	as, err := exec.LookPath("as")
	if err != nil {
		t.Fatal("as is not installed: run `make deps` or apt-get install binutils")
	}
	dir := t.TempDir()
	var src bytes.Buffer
	for i := range nsec {
		fmt.Fprintf(&src, ".section .s%d,\"a\"\n.byte %d\n", i, i&0xff)
		if i == 0 {
			src.WriteString(".globl first\nfirst: .byte 0\n")
		}
	}
	if high {
		src.WriteString(".globl last\nlast: .byte 0\n")
	}
	s := writeFile(t, dir, "big.s", src.String())
	o := filepath.Join(dir, "big.o")
	if out, err := exec.Command(as, s, "-o", o).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	return o
}

// TestExtendedNumbering: an object with more than 0xff00 sections, whose
// count and name table index live in section 0, reads as debug/elf reads
// it; symbols in high sections resolve through .symtab_shndx; and adding
// section symbols for high sections keeps all of it right, creating
// .symtab_shndx when there is none.
func TestExtendedNumbering(t *testing.T) {
	for _, global := range []bool{true, false} {
		t.Run(fmt.Sprintf("symbol-in-high-section=%v", global), func(t *testing.T) {
			p := bigObject(t, 70000, global)
			f, d := open(t, p)
			if n := binary.LittleEndian.Uint16(f.Data[60:]); n != 0 {
				t.Fatalf("e_shnum = %d, want 0 (extended numbering)", n)
			}
			if x := binary.LittleEndian.Uint16(f.Data[62:]); x != 0xffff || f.Shstrndx < 0xff00 {
				t.Fatalf("e_shstrndx = %#x, Shstrndx = %d; want SHN_XINDEX and an index past 0xff00", x, f.Shstrndx)
			}
			checkSections(t, f, d)
			high := f.Section(".s69999")
			if high == nil || high.Index < 0xff00 {
				t.Fatalf(".s69999 = %v, want a section past 0xff00", high)
			}
			_, syms, err := f.Symtab()
			if err != nil {
				t.Fatal(err)
			}
			hasShndx := slices.ContainsFunc(f.Sections, func(s *elfx.Section) bool { return s.Type == elf.SHT_SYMTAB_SHNDX })
			if global {
				i := slices.IndexFunc(syms, func(s elfx.Symbol) bool { return s.Name == "last" })
				if i < 0 || syms[i].Shndx != uint32(high.Index) || !hasShndx {
					t.Fatalf("symbol last: %+v, .symtab_shndx present %v; want it in section %d", syms[i], hasShndx, high.Index)
				}
			}

			low := f.Section(".s5").Index
			secs := []int{high.Index, low, f.Shstrndx}
			added, img, g := addSectionSymbols(t, f, p, secs)
			dg, err := elf.NewFile(bytes.NewReader(img))
			if err != nil {
				t.Fatalf("debug/elf: %v", err)
			}
			checkSections(t, g, dg)
			wantN := len(f.Sections)
			if !hasShndx {
				wantN++ // .symtab_shndx added
			}
			if len(g.Sections) != wantN {
				t.Errorf("%d sections after the edit, want %d", len(g.Sections), wantN)
			}
			_, gsyms, err := g.Symtab()
			if err != nil {
				t.Fatal(err)
			}
			for j, idx := range added {
				if s := gsyms[idx]; s.Type() != elf.STT_SECTION || s.Shndx != uint32(secs[j]) {
					t.Errorf("added symbol %d: %+v, want a section symbol of %d", idx, s, secs[j])
				}
			}
			if global {
				i := slices.IndexFunc(gsyms, func(s elfx.Symbol) bool { return s.Name == "last" })
				if i < 0 || gsyms[i].Shndx != uint32(high.Index) {
					t.Errorf("symbol last after the edit: %v", gsyms[i])
				}
			}
			checkReadelf(t, img)
		})
	}
}

// TestCrossingExtendedNumbering: adding sections to an object just under
// 0xff00 sections makes the output switch to extended numbering.
func TestCrossingExtendedNumbering(t *testing.T) {
	// The assembler adds its own sections (null, .text, .data, .bss,
	// .symtab, .strtab, .shstrtab): count them on a small object, then
	// ask for as many more as make 0xfeff in all.
	probe, _ := open(t, bigObject(t, 1, false))
	p := bigObject(t, 0xff00-1-(len(probe.Sections)-1), false)
	f, _ := open(t, p)
	if len(f.Sections) != 0xff00-1 || binary.LittleEndian.Uint16(f.Data[60:]) == 0 {
		t.Fatalf("%d sections, e_shnum %d: want 0xfeff sections in e_shnum", len(f.Sections), binary.LittleEndian.Uint16(f.Data[60:]))
	}
	ed, err := f.Edit()
	if err != nil {
		t.Fatal(err)
	}
	a := ed.AddSection(elfx.Section{Name: ".added.a", Type: elf.SHT_PROGBITS, Align: 1}, []byte("a"))
	b := ed.AddSection(elfx.Section{Name: ".added.b", Type: elf.SHT_PROGBITS, Align: 1}, []byte("b"))
	img := ed.Bytes()
	g, err := elfx.Parse(p, img)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Sections) != 0xff00+1 || binary.LittleEndian.Uint16(img[60:]) != 0 {
		t.Fatalf("%d sections, e_shnum %d; want 0xff01 sections and e_shnum 0", len(g.Sections), binary.LittleEndian.Uint16(img[60:]))
	}
	if g.Sections[a].Name != ".added.a" || g.Sections[b].Name != ".added.b" || string(g.SectionData(g.Sections[b])) != "b" {
		t.Errorf("added sections read as %v, %v", g.Sections[a], g.Sections[b])
	}
	dg, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	checkSections(t, g, dg)
}

// pieSource has a writable table of function pointers in its own section:
// in a PIE each entry is a RELATIVE relocation.
const pieSource = `
__attribute__((noinline)) int f1(int x) { return x + 1; }
__attribute__((noinline)) int f2(int x) { return x * 2; }
__attribute__((noinline)) int f3(int x) { return x - 3; }
int (*fp_table[])(int) __attribute__((section("fptab"), used)) = { f1, f2, f3, 0, f2 };
int main(int argc, char **argv) { (void)argv; return fp_table[argc % 3](argc); }
`

// TestRelativesPIE: Words of the table in a linked PIE resolves each entry
// to its function's address, whether the linker wrote RELA RELATIVE
// relocations or packed them as RELR (the two builds must agree).
func TestRelativesPIE(t *testing.T) {
	type pieBuild struct {
		name   string
		cc     string
		flags  []string
		packed bool
	}
	builds := []pieBuild{
		{"x86_64", "gcc", []string{"-O2", "-fpie", "-pie"}, false},
		{"x86_64-relr", "gcc", []string{"-O2", "-fpie", "-pie", "-Wl,-z,pack-relative-relocs"}, true},
		{"arm64", "aarch64-linux-gnu-gcc", []string{"-O2", "-fpie", "-pie"}, false},
	}
	results := map[string][]uint64{}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			if _, err := exec.LookPath(b.cc); err != nil {
				t.Fatalf("%s is not installed: run `make deps`", b.cc)
			}
			dir := t.TempDir()
			src := writeFile(t, dir, "pie.c", pieSource)
			p := build(t, dir, b.cc, "pie", append(b.flags, src)...)
			f, d := open(t, p)
			if f.Type != elf.ET_DYN {
				t.Fatalf("type %v, want ET_DYN", f.Type)
			}
			hasRELR := slices.ContainsFunc(f.Sections, func(s *elfx.Section) bool { return s.Type == 19 })
			if hasRELR != b.packed {
				t.Fatalf("SHT_RELR section present: %v, want %v", hasRELR, b.packed)
			}
			syms, err := d.Symbols()
			if err != nil {
				t.Fatal(err)
			}
			addr := map[string]uint64{}
			for _, s := range syms {
				addr[s.Name] = s.Value
			}
			want := []uint64{addr["f1"], addr["f2"], addr["f3"], 0, addr["f2"]}
			for _, v := range want[:3] {
				if v == 0 {
					t.Fatalf("functions not found in the symbol table: %v", want)
				}
			}
			rel, err := f.Relatives()
			if err != nil {
				t.Fatal(err)
			}
			if rel.Len() < 4 {
				t.Errorf("%d RELATIVE relocations, want at least the table's 4", rel.Len())
			}
			tab := f.Section("fptab")
			if tab == nil || tab.Flags&elf.SHF_WRITE == 0 {
				t.Fatalf("table section: %v, want a writable fptab", tab)
			}
			got, err := f.Words(tab, rel)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("Words(fptab) = %#x, want %#x", got, want)
			}
			for i, w := range want {
				v, ok := rel.Lookup(tab.Addr + elfx.Addr(i*8))
				if (w != 0) != ok || v != w {
					t.Errorf("Lookup(table entry %d) = %#x, %v; want %#x", i, v, ok, w)
				}
			}
			if b.packed {
				// RELR keeps the value in the file: the raw words
				// already hold it.
				if raw, err := f.Words(tab, nil); err != nil || !slices.Equal(raw, want) {
					t.Errorf("raw words of a RELR table: %#x, %v; want %#x", raw, err, want)
				}
			}
			bs, err := f.ReadAt(tab.Addr, tab.Size)
			if err != nil || !bytes.Equal(bs, f.SectionData(tab)) {
				t.Errorf("ReadAt(table address) = %v; want the section's contents", err)
			}
			if _, err := f.ReadAt(tab.Addr+elfx.Addr(tab.Size)+1<<40, 8); err == nil {
				t.Error("ReadAt past every segment succeeded")
			}
			if strings.HasPrefix(b.name, "x86_64") {
				// Relative to the functions: the builds may differ in
				// layout, not in what the table says.
				rebased := make([]uint64, len(got))
				for i, v := range got {
					if v != 0 {
						rebased[i] = v - addr["f1"]
					}
				}
				results[b.name] = rebased
			}
		})
	}
	if a, b := results["x86_64"], results["x86_64-relr"]; a != nil && b != nil && !slices.Equal(a, b) {
		t.Errorf("RELA build's table %#x and RELR build's %#x differ", a, b)
	}
}

func writeFile(t *testing.T, dir, name, contents string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(contents), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// build runs cc (a cross toolchain included, which make deps installs
// with its C library) to make dir/out and fails the test if it cannot.
func build(t *testing.T, dir, cc, out string, args ...string) string {
	t.Helper()
	p := filepath.Join(dir, out)
	if b, err := exec.Command(cc, append(args, "-o", p)...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, b)
	}
	return p
}
