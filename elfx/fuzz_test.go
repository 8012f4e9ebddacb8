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

	"ftpatch/elfx"
	"ftpatch/internal/fixture"
	"ftpatch/internal/fuzzing"
)

// FuzzParse parses arbitrary bytes, then walks every accessor of what
// parsed and, for a relocatable object, edits it (section symbols for
// its code sections, a new section) and parses the result again. Nothing
// may panic or hang; a parse error must be one of the documented kinds;
// an edit of a file that parsed must parse.
//
// Seeded from every object in this repository's testdata (this
// package's, sites', recordmcount's good and bad corpus) and from linked
// files built now. Crashers found are kept under testdata/fuzz/FuzzParse.
//
//	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 3m -fuzzminimizetime 5s ./elfx
//
// (The engine minimizes each new interesting input for up to
// -fuzzminimizetime, 60s by default, without running new inputs: on
// these kilobyte-sized objects that took most of a short run.)
func FuzzParse(f *testing.F) {
	for _, b := range fixture.Read(f, fuzzSeeds(f)...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzing.FailOnPanic(t)
		ef, err := elfx.Parse("fuzz.o", data)
		if err != nil {
			checkParseError(t, err)
			return
		}
		walk(t, ef)
		if ef.Type == elf.ET_REL {
			edit(t, ef)
		}
	})
}

// fuzzSeeds lists the seed files: every object under the testdata of this
// package, sites and recordmcount (including its bad corpus), and a PIE
// and a RELR PIE built now when gcc is there.
func fuzzSeeds(f *testing.F) []string {
	paths := fixture.Seeds(f, "..")
	if _, err := exec.LookPath("gcc"); err == nil {
		dir := f.TempDir()
		src := filepath.Join(dir, "pie.c")
		if err := os.WriteFile(src, []byte(pieSource), 0o644); err == nil {
			for _, out := range []struct {
				name  string
				flags []string
			}{
				{"pie", []string{"-O2", "-fpie", "-pie", "-s"}},
				{"pie-relr", []string{"-O2", "-fpie", "-pie", "-s", "-Wl,-z,pack-relative-relocs"}},
			} {
				p := filepath.Join(dir, out.name)
				if err := exec.Command("gcc", append(out.flags, src, "-o", p)...).Run(); err == nil {
					paths = append(paths, p)
				}
			}
		}
	}
	return paths
}

// checkParseError checks err is what Parse documents: ErrNotELF,
// ErrUnsupported or a *FormatError, and not a recovered panic.
func checkParseError(t *testing.T, err error) {
	t.Helper()
	var fe *elfx.FormatError
	if !errors.Is(err, elfx.ErrNotELF) && !errors.Is(err, elfx.ErrUnsupported) && !errors.As(err, &fe) {
		t.Fatalf("Parse error %q (%T) is none of ErrNotELF, ErrUnsupported, *FormatError", err, err)
	}
	if strings.Contains(err.Error(), "internal error") {
		t.Fatalf("Parse recovered from a panic: %v", err)
	}
}

// walk calls every reading accessor of f and checks what each promises.
func walk(t *testing.T, f *elfx.File) {
	t.Helper()
	for i, s := range f.Sections {
		if s.Index != i {
			t.Fatalf("section %d has Index %d", i, s.Index)
		}
		d := f.SectionData(s)
		if s.Type != elf.SHT_NOBITS && s.Type != elf.SHT_NULL && uint64(len(d)) != s.Size {
			t.Fatalf("%s: SectionData gives %d bytes, size is %d", s, len(d), s.Size)
		}
		_ = s.String()
		if i > 0 && len(f.Sections) < 1000 && f.Section(s.Name) == nil {
			t.Fatalf("Section(%q) = nil", s.Name)
		}
	}
	if _, syms, err := f.Symtab(); err == nil {
		for i, s := range syms {
			if s.Index != i || (s.Defined() && int(s.Shndx) >= len(f.Sections)) {
				t.Fatalf("symbol %d: %+v: bad index or section (%d sections)", i, s, len(f.Sections))
			}
			_, _ = s.Bind(), s.Type()
		}
	}
	for _, s := range f.Sections {
		switch s.Type {
		case elf.SHT_SYMTAB, elf.SHT_DYNSYM:
			f.Symbols(s)
		case elf.SHT_RELA:
			rs, err := f.Relas(s)
			if err != nil || s.Link == 0 {
				continue
			}
			n := f.Sections[s.Link].Size / 24
			for i, r := range rs {
				if uint64(r.Sym) >= n {
					t.Fatalf("%s: relocation %d: symbol %d of %d returned without error", s, i, r.Sym, n)
				}
				_ = f.RelocTypeString(r.Type)
			}
		}
	}
	rel, err := f.Relatives()
	if err == nil {
		_ = rel.Len()
		for _, s := range f.Sections {
			if s.Size > 1<<20 {
				continue
			}
			w, err := f.Words(s, rel)
			if err == nil && s.Type != elf.SHT_NOBITS && s.Type != elf.SHT_NULL && uint64(len(w)) != s.Size/8 {
				t.Fatalf("%s: Words gives %d words for %d bytes", s, len(w), s.Size)
			}
		}
	}
	for _, p := range f.Progs {
		for _, a := range []elfx.Addr{p.Vaddr, p.Vaddr + elfx.Addr(p.Filesz) - 1, f.Entry} {
			b, err := f.ReadAt(a, 8)
			if err == nil && len(b) != 8 {
				t.Fatalf("ReadAt(%#x, 8) gave %d bytes", a, len(b))
			}
		}
	}
}

// edit checks, on a relocatable object that parsed: an unchanged edit
// parses to the same sections; adding section symbols for the code
// sections keeps every symbol reference naming the same symbol; adding a
// section gives a file that parses with it; Chunks joined is Bytes.
func edit(t *testing.T, f *elfx.File) {
	t.Helper()
	ed, err := f.Edit()
	if err != nil {
		t.Fatalf("Edit of an ET_REL: %v", err)
	}
	img := ed.Bytes()
	g, err := elfx.Parse("fuzz.o", img)
	if err != nil {
		t.Fatalf("unchanged edit does not parse: %v", err)
	}
	if len(g.Sections) != len(f.Sections) {
		t.Fatalf("unchanged edit: %d sections, want %d", len(g.Sections), len(f.Sections))
	}
	for i, s := range g.Sections[1:] { // section 0 is rewritten: it only carries counts
		o := f.Sections[i+1]
		if s.Name != o.Name || s.Type != o.Type || s.Size != o.Size || !bytes.Equal(g.SectionData(s), f.SectionData(o)) {
			t.Fatalf("unchanged edit: %s reads as %+v, was %+v", o, *s, *o)
		}
	}

	var secs []int
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && len(secs) < 8 {
			secs = append(secs, s.Index)
		}
	}
	wantRefs, refErr := symbolRefs(f)
	ed, _ = f.Edit()
	added, err := ed.AddSectionSymbols(secs)
	if err == nil {
		img := ed.Bytes()
		if !bytes.Equal(bytes.Join(ed.Chunks(), nil), img) {
			t.Fatal("Chunks joined differ from Bytes")
		}
		g, err := elfx.Parse("fuzz.o", img)
		if err != nil {
			t.Fatalf("object with %d section symbols added does not parse: %v", len(secs), err)
		}
		if refErr == nil {
			gotRefs, err := symbolRefs(g)
			if err != nil {
				t.Fatalf("symbol references no longer read after adding section symbols: %v", err)
			}
			for sec, want := range wantRefs {
				if got := gotRefs[sec]; !slices.Equal(got, want) {
					t.Fatalf("%s: references after adding section symbols:\n%s\nwant:\n%s", g.Sections[sec], strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
			_, before, _ := f.Symtab()
			_, syms, _ := g.Symtab()
			if len(before) > 0 && before[0] == (elfx.Symbol{}) && (len(syms) == 0 || syms[0] != (elfx.Symbol{})) {
				t.Fatalf("after adding section symbols, symbol 0 is no longer the null symbol: %+v", syms[0])
			}
			for j, idx := range added {
				if int(idx) >= len(syms) || syms[idx].Type() != elf.STT_SECTION || syms[idx].Shndx != uint32(secs[j]) {
					t.Fatalf("added symbol %d is not the section symbol of section %d", idx, secs[j])
				}
			}
		}
	}

	ed, _ = f.Edit()
	n := ed.AddSection(elfx.Section{Name: ".fuzz", Type: elf.SHT_PROGBITS, Align: 8}, []byte("added"))
	g, err = elfx.Parse("fuzz.o", ed.Bytes())
	if err != nil {
		t.Fatalf("object with a section added does not parse: %v", err)
	}
	if n >= len(g.Sections) || g.Sections[n].Name != ".fuzz" || string(g.SectionData(g.Sections[n])) != "added" {
		t.Fatalf("added section %d does not read back", n)
	}
}

// symbolRefs is, per section, what each symbol reference names:
// relocations, group signatures, address-significance entries of the
// sections tied to .symtab. Symbols are named by what they are (see
// symID), so renumbering does not change the result.
func symbolRefs(f *elfx.File) (map[int][]string, error) {
	symSec, syms, err := f.Symtab()
	if err != nil {
		return nil, err
	}
	refs := map[int][]string{}
	for _, s := range f.Sections {
		if int(s.Link) != symSec.Index || s.Index == symSec.Index {
			continue
		}
		switch s.Type {
		case elf.SHT_RELA:
			rs, err := f.Relas(s)
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				refs[s.Index] = append(refs[s.Index], symID(f, syms, r.Sym))
			}
		case elf.SHT_GROUP:
			refs[s.Index] = []string{symID(f, syms, s.Info)}
		case 0x6fff4c03: // SHT_LLVM_ADDRSIG: ULEB128 symbol indices
			d := f.SectionData(s)
			for len(d) > 0 {
				v, n := binary.Uvarint(d)
				if n <= 0 {
					return nil, fmt.Errorf("%s: bad ULEB128", s)
				}
				refs[s.Index] = append(refs[s.Index], symID(f, syms, uint32(v)))
				d = d[n:]
			}
		}
	}
	return refs, nil
}
