package record_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"ftpatch/internal/fixture"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/internal/golden"
	"ftpatch/internal/sitetest"
	"ftpatch/isa/arm64"
	"ftpatch/record"
	"ftpatch/sites"
)

// modes are the two ways the pass is run on every fixture.
var modes = []struct {
	name string
	opts record.Options
}{
	{"record", record.Options{}},
	{"record --nop", record.Options{Nop: true}},
}

// TestRewrite runs the pass on every fixture, in both modes, and compares
// a readelf-like dump of what it wrote with
// testdata/<fixture>.table.golden; then checks the output's properties
// independently of the golden.
func TestRewrite(t *testing.T) {
	for _, fx := range fixture.Corpus(t, "..", "*.o") {
		t.Run(fx.Base, func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(fx.Path)
			if err != nil {
				t.Fatal(err)
			}
			before := sitetest.Find(t, sitetest.Parse(t, fx.Path, in), sites.FindObject)
			var d bytes.Buffer
			imgs := map[bool][]byte{} // by Options.Nop
			for _, m := range modes {
				fmt.Fprintf(&d, "== %s\n", m.name)
				img, res, err := record.Rewrite(fx.Path, in, m.opts)
				if err != nil {
					t.Fatalf("%s: %v", m.name, err)
				}
				if img == nil {
					d.WriteString("unchanged\n")
					// Only an object whose compiler wrote the table, run
					// without --nop, has nothing to change.
					if before.Table != sites.TableCompiler || m.opts.Nop {
						t.Errorf("%s: Rewrite changed nothing (%s)", m.name, res.Summary())
					}
					continue
				}
				imgs[m.opts.Nop] = img
				if res.Err != nil || !res.Changed {
					t.Errorf("%s: image returned with Changed %v, Err %v", m.name, res.Changed, res.Err)
				}
				ref, out := openBoth(t, m.name, fx.Path, in), openBoth(t, m.name, "output", img)
				dumpChanges(t, &d, before, ref, out)
				t.Run(m.name, func(t *testing.T) {
					checkRoundTrip(t, before, img, m.opts)
					checkIdempotent(t, img, m.opts)
					checkPreserved(t, before, in, img, m.opts)
					checkSymbols(t, ref, out, before, m.opts)
					if before.Table == sites.TableNone {
						checkTable(t, out, len(ref.ef.Sections), before)
					}
					if m.opts.Nop {
						checkNops(t, before, ref, out)
					}
					checkTools(t, fx, img)
				})
			}
			golden.Check(t, filepath.Join("testdata", fx.Base+".table.golden"), d.Bytes())
			if imgs[false] != nil && imgs[true] != nil {
				checkCompose(t, imgs[false], imgs[true])
			}
		})
	}
}

// checkCompose: recording and then running --nop on the result gives the
// sites one --nop run gives; and recording after --nop changes nothing.
func checkCompose(t *testing.T, plain, nopped []byte) {
	t.Helper()
	find := func(what string, img []byte) *sites.Object {
		t.Helper()
		f, err := elfx.Parse(what, img)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := sites.FindObject(f)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return obj
	}
	twice, _, err := record.Rewrite("recorded", plain, record.Options{Nop: true})
	if err != nil {
		t.Fatalf("--nop after recording: %v", err)
	}
	if twice == nil {
		twice = plain // nothing to turn into a NOP
	}
	if a, b := find("recorded, then --nop", twice), find("--nop", nopped); !reflect.DeepEqual(a, b) {
		t.Errorf("recording then --nop finds\n%+v\n--nop at once finds\n%+v", a.Sites, b.Sites)
	}
	if again, res, err := record.Rewrite("nopped", nopped, record.Options{}); err != nil || again != nil {
		t.Errorf("recording after --nop: %d bytes, %s, %v; want no change", len(again), res.Summary(), err)
	}
}

// TestGoldensHaveFixtures catches a golden left behind by a fixture that
// was removed or renamed.
func TestGoldensHaveFixtures(t *testing.T) {
	goldens, err := filepath.Glob("testdata/*.table.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goldens {
		obj := filepath.Join("..", fixture.ObjectDir, strings.TrimSuffix(filepath.Base(g), ".table.golden")+".o")
		if _, err := os.Stat(obj); err != nil {
			t.Errorf("%s: no fixture %s", g, obj)
		}
	}
}

// An image is a file read by debug/elf, which (unlike elfx) shares no
// code with the pass: its views of the input and the output are compared.
type image struct {
	ef   *elf.File
	data []byte
	syms []elf.Symbol // with the null symbol at index 0, unlike ef.Symbols
	ssec int          // index of the SHT_SYMTAB section
}

// openBoth parses data with elfx and with debug/elf; both must accept it.
func openBoth(t *testing.T, what, name string, data []byte) *image {
	t.Helper()
	if _, err := elfx.Parse(name, data); err != nil {
		t.Fatalf("%s: elfx rejects %s: %v", what, name, err)
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: debug/elf rejects %s: %v", what, name, err)
	}
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatalf("%s: debug/elf reads no symbols from %s: %v", what, name, err)
	}
	im := &image{ef: ef, data: data, syms: append([]elf.Symbol{{}}, syms...)}
	for i, s := range ef.Sections {
		if s.Type == elf.SHT_SYMTAB {
			im.ssec = i
		}
		if s.Type == elf.SHT_NOBITS {
			continue
		}
		if _, err := s.Data(); err != nil {
			t.Fatalf("%s: debug/elf cannot read section %d %q of %s: %v", what, i, s.Name, name, err)
		}
	}
	return im
}

func (im *image) section(i int) []byte {
	s := im.ef.Sections[i]
	if s.Type == elf.SHT_NOBITS {
		return nil
	}
	b, _ := s.Data() // read once without error in openBoth
	return b
}

// A rela is one relocation entry as stored.
type rela struct {
	off    uint64
	sym    uint32
	typ    uint32
	addend int64
}

func (im *image) relas(i int) []rela {
	d := im.section(i)
	out := make([]rela, len(d)/24)
	for j := range out {
		e := d[j*24:]
		info := binary.LittleEndian.Uint64(e[8:])
		out[j] = rela{binary.LittleEndian.Uint64(e), uint32(info >> 32), uint32(info), int64(binary.LittleEndian.Uint64(e[16:]))}
	}
	return out
}

func (im *image) relocType(t uint32) string {
	if im.ef.Machine == elf.EM_AARCH64 {
		return elf.R_AARCH64(t).String()
	}
	return elf.R_X86_64(t).String()
}

// symName names symbol i of the symbol table: a section symbol by its
// section, so the same place reads the same in the input and the output.
func (im *image) symName(i uint32) string {
	if i == 0 {
		return "-"
	}
	if int(i) >= len(im.syms) {
		return fmt.Sprintf("<symbol %d out of range>", i)
	}
	s := im.syms[i]
	if elf.ST_TYPE(s.Info) == elf.STT_SECTION {
		return fmt.Sprintf("section %s", im.ef.Sections[s.Section].Name)
	}
	return s.Name
}

// relaString writes a relocation as readelf does, with the symbol's
// index: `R_X86_64_PLT32 __fentry__[9]-4`, or the type alone for an
// R_*_NONE against no symbol.
func (im *image) relaString(r rela) string {
	if r.sym == 0 && r.addend == 0 {
		return im.relocType(r.typ)
	}
	return fmt.Sprintf("%s %s[%d]%+d", im.relocType(r.typ), im.symName(r.sym), r.sym, r.addend)
}

// flagLetters writes section flags as readelf -S does.
func flagLetters(f elf.SectionFlag) string {
	var b strings.Builder
	for _, x := range []struct {
		f elf.SectionFlag
		c byte
	}{
		{elf.SHF_WRITE, 'W'}, {elf.SHF_ALLOC, 'A'}, {elf.SHF_EXECINSTR, 'X'}, {elf.SHF_MERGE, 'M'},
		{elf.SHF_STRINGS, 'S'}, {elf.SHF_INFO_LINK, 'I'}, {elf.SHF_LINK_ORDER, 'L'},
		{elf.SHF_OS_NONCONFORMING, 'O'}, {elf.SHF_GROUP, 'G'}, {elf.SHF_TLS, 'T'},
		{shfExclude, 'E'},
	} {
		if f&x.f != 0 {
			b.WriteByte(x.c)
			f &^= x.f
		}
	}
	if f != 0 {
		fmt.Fprintf(&b, "+%#x", uint64(f))
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

func sectionLine(im *image, i int) string {
	s := im.ef.Sections[i]
	typ := strings.TrimPrefix(s.Type.String(), "SHT_")
	if s.Type == shtLLVMAddrsig {
		typ = "LLVM_ADDRSIG"
	}
	return fmt.Sprintf("[%2d] %-24s %-8s %-4s align %d entsize %d link %d info %d size 0x%x",
		i, s.Name, typ, flagLetters(s.Flags), s.Addralign, s.Entsize, s.Link, s.Info, s.Size)
}

// dumpChanges writes what the pass changed: each new section and each
// section whose header (apart from its place in the file) or contents
// changed, then the details a reader needs to check them.
func dumpChanges(t *testing.T, w *bytes.Buffer, before *sites.Object, ref, out *image) {
	nIn := len(ref.ef.Sections)
	for i := range out.ef.Sections {
		if i == 0 {
			continue
		}
		if i >= nIn {
			fmt.Fprintf(w, "new     %s\n", sectionLine(out, i))
			continue
		}
		a, b := ref.ef.Sections[i], out.ef.Sections[i]
		var what []string
		for _, c := range []struct {
			name string
			diff bool
		}{
			{"name", a.Name != b.Name}, {"type", a.Type != b.Type}, {"flags", a.Flags != b.Flags},
			{"align", a.Addralign != b.Addralign}, {"entsize", a.Entsize != b.Entsize},
			{"link", a.Link != b.Link}, {"info", a.Info != b.Info}, {"size", a.Size != b.Size},
			{"contents", !bytes.Equal(ref.section(i), out.section(i))},
		} {
			if c.diff {
				what = append(what, c.name)
			}
		}
		if len(what) == 0 {
			continue
		}
		fmt.Fprintf(w, "changed %s (%s)\n", sectionLine(out, i), strings.Join(what, ", "))
		switch s := out.ef.Sections[i]; {
		case s.Type == elf.SHT_STRTAB && a.Size < b.Size && bytes.HasPrefix(out.section(i), ref.section(i)):
			fmt.Fprintf(w, "        appended %q\n", out.section(i)[a.Size:])
		case s.Type == elf.SHT_GROUP:
			fmt.Fprintf(w, "        members:")
			d := out.section(i)
			for j := 4; j+4 <= len(d); j += 4 {
				m := binary.LittleEndian.Uint32(d[j:])
				fmt.Fprintf(w, " [%d] %s", m, out.ef.Sections[m].Name)
			}
			fmt.Fprintf(w, "\n")
		case s.Type == elf.SHT_SYMTAB:
			fmt.Fprintf(w, "        symbols %d -> %d, first global %d -> %d\n", len(ref.syms), len(out.syms), a.Info, b.Info)
			had := map[elf.SectionIndex]bool{}
			for _, sym := range ref.syms {
				if elf.ST_TYPE(sym.Info) == elf.STT_SECTION {
					had[sym.Section] = true
				}
			}
			for j, sym := range out.syms {
				if elf.ST_TYPE(sym.Info) == elf.STT_SECTION && !had[sym.Section] {
					fmt.Fprintf(w, "        new symbol %d: %v %v section [%d] %s\n", j,
						elf.ST_BIND(sym.Info), elf.ST_TYPE(sym.Info), sym.Section, out.ef.Sections[sym.Section].Name)
				}
			}
		case s.Type == shtLLVMAddrsig:
			var o, c []string
			for _, sym := range addrsig(t, ref.section(i)) {
				o = append(o, fmt.Sprintf("%s[%d]", ref.symName(uint32(sym)), sym))
			}
			for _, sym := range addrsig(t, out.section(i)) {
				c = append(c, fmt.Sprintf("%s[%d]", out.symName(uint32(sym)), sym))
			}
			fmt.Fprintf(w, "        symbols %s -> %s\n", strings.Join(o, " "), strings.Join(c, " "))
		case s.Type == elf.SHT_RELA && a.Size == b.Size:
			old, cur := ref.relas(i), out.relas(i)
			for j := range cur {
				if old[j] != cur[j] {
					fmt.Fprintf(w, "        relocation %d at 0x%x: %s -> %s\n", j, cur[j].off, ref.relaString(old[j]), out.relaString(cur[j]))
				}
			}
		case s.Flags&elf.SHF_EXECINSTR != 0 && a.Size == b.Size:
			old, cur := ref.section(i), out.section(i)
			covered := make([]bool, len(cur))
			for _, st := range before.Sites {
				if st.Section != i {
					continue
				}
				r := old[st.Off : st.Off+uint64(st.Len)]
				n := cur[st.Off : st.Off+uint64(st.Len)]
				for j := range r {
					covered[st.Off+uint64(j)] = true
				}
				if !bytes.Equal(r, n) {
					fmt.Fprintf(w, "        +0x%x %s+0x%x: % x -> % x\n", st.Off, st.Func, st.FuncOff, r, n)
				}
			}
			for j := 0; j < len(cur); j++ {
				if old[j] != cur[j] && !covered[j] {
					fmt.Fprintf(w, "        +0x%x outside every site: %02x -> %02x\n", j, old[j], cur[j])
				}
			}
		}
	}
	for i, s := range out.ef.Sections {
		if i < nIn || s.Type != elf.SHT_RELA || s.Name != ".rela"+sites.TableName {
			continue
		}
		fmt.Fprintf(w, "relocations of [%d] %s (symbols [%d], applies to [%d] %s):\n", i, s.Name, s.Link, s.Info, out.ef.Sections[s.Info].Name)
		for _, r := range out.relas(i) {
			// Name the site each entry points at, from the input's
			// discovery: a section symbol's value is 0, so the addend is
			// the site's offset in the section.
			fn := "# NO SITE HERE"
			if r.sym < uint32(len(out.syms)) {
				for _, st := range before.Sites {
					if elf.SectionIndex(st.Section) == out.syms[r.sym].Section && uint64(r.addend) == st.Off+out.syms[r.sym].Value {
						fn = fmt.Sprintf("# %s+0x%x", st.Func, st.FuncOff)
					}
				}
			}
			fmt.Fprintf(w, "  0x%02x %-16s %-32s 0x%-5x %s\n", r.off, out.relocType(r.typ), out.symName(r.sym), r.addend, fn)
		}
	}
}

// comparable is the part of a site that the pass's output must keep.
func comparable(s sites.Site) sites.Site {
	return sites.Site{Section: s.Section, SecName: s.SecName, Off: s.Off, Len: s.Len, Kind: s.Kind,
		Func: s.Func, FuncOff: s.FuncOff, Group: s.Group, Pre: s.Pre, Weak: s.Weak}
}

// checkRoundTrip: discovery on the output finds the same sites, now
// listed in our table (or still in the compiler's, which is kept). Without
// --nop they are identical, down to the relocation each came from; with
// it, each call site is now one NOP, and its relocation is gone.
func checkRoundTrip(t *testing.T, before *sites.Object, img []byte, opts record.Options) {
	t.Helper()
	f, err := elfx.Parse("output", img)
	if err != nil {
		t.Fatal(err)
	}
	after, err := sites.FindObject(f)
	if err != nil {
		t.Fatalf("FindObject on the output: %v", err)
	}
	wantTable := sites.TableOurs
	if before.Table != sites.TableNone {
		wantTable = before.Table
	}
	if after.Table != wantTable {
		t.Errorf("output's Table = %v, want %v", after.Table, wantTable)
	}
	if len(after.Sites) != len(before.Sites) {
		t.Fatalf("output has %d sites, input %d", len(after.Sites), len(before.Sites))
	}
	for i, a := range after.Sites {
		b := before.Sites[i]
		if !opts.Nop {
			if !reflect.DeepEqual(a, b) {
				t.Errorf("site %d:\n got %+v\nwant %+v", i, a, b)
			}
			continue
		}
		if comparable(a) != comparable(b) {
			t.Errorf("site %d:\n got %+v\nwant %+v", i, comparable(a), comparable(b))
		}
		want := sites.StateNop
		if b.State == sites.StateNops && after.Arch == arch.ARM64 {
			want = sites.StateNops // arm64 areas are a NOP per instruction
		}
		if a.State != want || a.Rela != -1 {
			t.Errorf("site %d (%s): state %v, relocation section %d; want %v and none", i, a.Func, a.State, a.Rela, want)
		}
	}
	if !reflect.DeepEqual(after.Warnings, before.Warnings) || !reflect.DeepEqual(after.Notes, before.Notes) {
		t.Errorf("output's warnings %q and notes %q, input's %q and %q", after.Warnings, after.Notes, before.Warnings, before.Notes)
	}
}

// checkTable checks the new tables against the design (DESIGN.md,
// "Sites"), reading them with debug/elf: each __mcount_loc is PROGBITS,
// writable and allocated, align 8, entsize 8, zero-filled, with a
// .rela__mcount_loc (SHF_INFO_LINK, entsize 24, linked to the symbol
// table, applying to it) holding one absolute 64-bit relocation per word,
// against the local section symbol of the site's section with the site's
// offset as addend. Every site is listed exactly once, and a table lists
// the sites of one COMDAT group (or of none) and belongs to that group,
// with its relocations, so the linker keeps or drops them together.
func checkTable(t *testing.T, out *image, nIn int, before *sites.Object) {
	t.Helper()
	abs := uint32(elf.R_X86_64_64)
	if out.ef.Machine == elf.EM_AARCH64 {
		abs = uint32(elf.R_AARCH64_ABS64)
	}
	groupOf := map[int]int{} // member section -> group section
	for i, g := range out.ef.Sections {
		if g.Type != elf.SHT_GROUP {
			continue
		}
		d := out.section(i)
		for j := 4; j+4 <= len(d); j += 4 {
			groupOf[int(binary.LittleEndian.Uint32(d[j:]))] = i
		}
	}
	type place struct {
		sec int
		off uint64
	}
	listed := map[place]int{}
	tables := 0
	for i, rs := range out.ef.Sections {
		if i < nIn || rs.Type != elf.SHT_RELA {
			continue
		}
		tab := out.ef.Sections[rs.Info]
		where := fmt.Sprintf("[%d] %s for [%d] %s", i, rs.Name, rs.Info, tab.Name)
		if rs.Name != ".rela"+sites.TableName || tab.Name != sites.TableName || int(rs.Info) < nIn {
			t.Errorf("%s: unexpected new relocation section", where)
			continue
		}
		tables++
		if rs.Flags&^elf.SHF_GROUP != elf.SHF_INFO_LINK || rs.Entsize != 24 || int(rs.Link) != out.ssec || rs.Addralign != 8 {
			t.Errorf("%s: flags %v entsize %d link %d align %d", where, rs.Flags, rs.Entsize, rs.Link, rs.Addralign)
		}
		if tab.Type != elf.SHT_PROGBITS || tab.Flags&^elf.SHF_GROUP != elf.SHF_ALLOC|elf.SHF_WRITE || tab.Addralign != 8 || tab.Entsize != 8 {
			t.Errorf("%s: table type %v flags %v align %d entsize %d", where, tab.Type, tab.Flags, tab.Addralign, tab.Entsize)
		}
		rels := out.relas(i)
		if d := out.section(int(rs.Info)); len(d) != 8*len(rels) || !bytes.Equal(d, make([]byte, len(d))) {
			t.Errorf("%s: table is %d bytes (% x), want %d zero bytes", where, len(d), d, 8*len(rels))
		}
		group := groupOf[int(rs.Info)]
		if groupOf[i] != group || (group != 0) != (tab.Flags&elf.SHF_GROUP != 0) || (group != 0) != (rs.Flags&elf.SHF_GROUP != 0) {
			t.Errorf("%s: table in group %d with flags %v, relocations in group %d with flags %v", where, group, tab.Flags, groupOf[i], rs.Flags)
		}
		for j, r := range rels {
			sym := out.syms[r.sym]
			if r.off != uint64(j*8) || r.typ != abs || elf.ST_TYPE(sym.Info) != elf.STT_SECTION || elf.ST_BIND(sym.Info) != elf.STB_LOCAL || sym.Value != 0 {
				t.Errorf("%s: relocation %d is %s at 0x%x, want %s against a section symbol at 0x%x",
					where, j, out.relaString(r), r.off, out.relocType(abs), j*8)
				continue
			}
			if g := groupOf[int(sym.Section)]; g != group {
				t.Errorf("%s: relocation %d points into section %d of group %d, the table is in group %d", where, j, sym.Section, g, group)
			}
			listed[place{int(sym.Section), uint64(r.addend)}]++
		}
	}
	if tables == 0 {
		t.Error("no table written")
	}
	for _, s := range before.Sites {
		if n := listed[place{s.Section, s.Off}]; n != 1 {
			t.Errorf("site %s+0x%x (%s) listed %d times", s.SecName, s.Off, s.Func, n)
		}
		delete(listed, place{s.Section, s.Off})
	}
	for p := range listed {
		t.Errorf("table lists section %d+0x%x, which is not a site", p.sec, p.off)
	}
}

// checkIdempotent: running the pass again changes nothing.
func checkIdempotent(t *testing.T, img []byte, opts record.Options) {
	t.Helper()
	again, res, err := record.Rewrite("output", img, opts)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if again != nil || res.Changed {
		t.Errorf("second run changed the output again: %s", res.Summary())
	}
}

// Canonical NOPs, written here rather than taken from package nops so the
// test checks the pass against the design, not against itself.
var (
	x86Nop5  = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}       // nopl 0x0(%rax,%rax,1)
	x86Nop6  = []byte{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00} // nopw 0x0(%rax,%rax,1)
	arm64Nop = []byte{0x1f, 0x20, 0x03, 0xd5}             // nop
)

// nopped reports whether --nop rewrites site s: every call, and on x86-64
// a patchable area of several NOPs.
func nopped(s sites.Site, a arch.Arch) bool {
	return s.State.IsCall() || s.State == sites.StateNops && a == arch.X86_64
}

// checkPreserved computes, from the input alone, what the output's first
// len(in) bytes must be, and compares them byte for byte: the pass
// appends, and changes in place only the bytes it must. Those are the
// section header fields e_shoff and e_shnum; with --nop, each nopped
// site's bytes and its hook relocation (info and addend zeroed); and when
// section symbols were inserted, the symbol index of each relocation naming
// a symbol after the insertion point.
func checkPreserved(t *testing.T, before *sites.Object, in, img []byte, opts record.Options) {
	t.Helper()
	if len(img) < len(in) {
		t.Fatalf("output is %d bytes, shorter than the %d-byte input", len(img), len(in))
	}
	f, err := elfx.Parse("input", in)
	if err != nil {
		t.Fatal(err)
	}
	g, err := elfx.Parse("output", img)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), in...)
	copy(want[40:48], img[40:48]) // e_shoff
	copy(want[60:62], img[60:62]) // e_shnum

	inSym, _, err := f.Symtab()
	if err != nil {
		t.Fatal(err)
	}
	outSym, _, err := g.Symtab()
	if err != nil {
		t.Fatal(err)
	}
	first := inSym.Info
	added := uint32((outSym.Size - inSym.Size) / 24)
	retyped := map[[2]int]bool{}
	if opts.Nop {
		for _, s := range before.Sites {
			if !nopped(s, f.Arch) {
				continue
			}
			var nop []byte
			switch {
			case f.Arch == arch.ARM64:
				nop = arm64Nop
			case s.Len == 5:
				nop = x86Nop5
			case s.Len == 6:
				nop = x86Nop6
			}
			if len(nop) != s.Len {
				t.Errorf("%s+0x%x: no %d-byte NOP for %v", s.SecName, s.Off, s.Len, f.Arch)
				continue
			}
			copy(want[uint64(f.Sections[s.Section].Off)+s.Off:], nop)
			if s.Rela >= 0 {
				retyped[[2]int{int(s.Rela), int(s.RelaIdx)}] = true
			}
		}
	}
	for _, rs := range f.Sections {
		if rs.Type != elf.SHT_RELA || int(rs.Link) != inSym.Index {
			continue
		}
		relas, err := f.Relas(rs)
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range relas {
			e := want[uint64(rs.Off)+uint64(j)*elfx.RelaSize:][:0]
			switch {
			case retyped[[2]int{rs.Index, j}]:
				elfx.AppendRela(e, elfx.Rela{Off: r.Off, Type: elfx.RelocNone}) // symbol 0, R_*_NONE, addend 0
			case added > 0 && r.Sym >= first:
				r.Sym += added
				elfx.AppendRela(e, r)
			}
		}
	}
	if added > 0 {
		for _, s := range f.Sections {
			if s.Type != shtLLVMAddrsig || int(s.Link) != inSym.Index {
				continue
			}
			// Renumbered in place only if the indices still fit: a ULEB128
			// may grow, and the section move to the end.
			var re []byte
			for _, sym := range addrsig(t, f.SectionData(s)) {
				if sym >= uint64(first) {
					sym += uint64(added)
				}
				re = binary.AppendUvarint(re, sym)
			}
			if uint64(len(re)) == s.Size {
				copy(want[s.Off:], re)
			}
		}
	}
	got := img[:len(in)]
	if bytes.Equal(got, want) {
		return
	}
	n := 0
	for i := range want {
		if got[i] == want[i] {
			continue
		}
		where := "outside every section"
		for _, s := range f.Sections[1:] {
			if s.Type != elf.SHT_NOBITS && uint64(i) >= uint64(s.Off) && uint64(i) < uint64(s.Off)+s.Size {
				where = fmt.Sprintf("%s+0x%x", s, uint64(i)-uint64(s.Off))
			}
		}
		t.Errorf("input byte 0x%x (%s) is %#02x in the output, want %#02x", i, where, got[i], want[i])
		if n++; n == 10 {
			t.Fatal("... and more")
		}
	}
}

// shtLLVMAddrsig is clang's .llvm_addrsig: the indices of the symbols
// whose address is taken, as ULEB128 numbers.
const shtLLVMAddrsig elf.SectionType = 0x6fff4c03

// shfExclude is SHF_EXCLUDE: the linker drops the section (readelf's E).
const shfExclude elf.SectionFlag = 0x80000000

// addrsig decodes an .llvm_addrsig section.
func addrsig(t testing.TB, d []byte) []uint64 {
	var out []uint64
	for len(d) > 0 {
		v, n := binary.Uvarint(d)
		if n <= 0 {
			t.Helper()
			t.Fatalf("bad ULEB128 in .llvm_addrsig: % x", d)
		}
		out = append(out, v)
		d = d[n:]
	}
	return out
}

// checkSymbols: the symbol table keeps locals before globals, every
// relocation of the input names the same symbol in the output (section
// symbols by their section), except those --nop retyped to R_*_NONE, and
// every site's section has a section symbol for the table to use.
func checkSymbols(t *testing.T, ref, out *image, before *sites.Object, opts record.Options) {
	t.Helper()
	info := out.ef.Sections[out.ssec].Info
	for i, s := range out.syms[1:] {
		if local := elf.ST_BIND(s.Info) == elf.STB_LOCAL; local != (uint32(i+1) < info) {
			t.Errorf("symbol %d %q (%v): first global is %d", i+1, s.Name, elf.ST_BIND(s.Info), info)
		}
	}
	for i, s := range ref.ef.Sections {
		if s.Type != elf.SHT_RELA {
			continue
		}
		old, cur := ref.relas(i), out.relas(i)
		if len(old) != len(cur) {
			t.Errorf("section %d %s: %d relocations, was %d", i, s.Name, len(cur), len(old))
			continue
		}
		for j := range old {
			if opts.Nop && cur[j].typ == 0 && old[j].typ != 0 {
				continue // checked by checkNops
			}
			if o, c := ref.symName(old[j].sym), out.symName(cur[j].sym); o != c || old[j].typ != cur[j].typ || old[j].addend != cur[j].addend {
				t.Errorf("section %d %s relocation %d: %s %s%+d, was %s %s%+d", i, s.Name, j,
					out.relocType(cur[j].typ), c, cur[j].addend, ref.relocType(old[j].typ), o, old[j].addend)
			}
		}
	}
	for i, s := range ref.ef.Sections {
		if s.Type != shtLLVMAddrsig {
			continue
		}
		var o, c []string
		for _, sym := range addrsig(t, ref.section(i)) {
			o = append(o, ref.symName(uint32(sym)))
		}
		for _, sym := range addrsig(t, out.section(i)) {
			c = append(c, out.symName(uint32(sym)))
		}
		if !reflect.DeepEqual(o, c) {
			t.Errorf("section %d %s names symbols %q, was %q", i, s.Name, c, o)
		}
	}
	has := map[elf.SectionIndex]bool{}
	for _, s := range out.syms {
		if elf.ST_TYPE(s.Info) == elf.STT_SECTION && elf.ST_BIND(s.Info) == elf.STB_LOCAL && s.Value == 0 {
			has[s.Section] = true
		}
	}
	for _, s := range before.Sites {
		if !has[elf.SectionIndex(s.Section)] && before.Table == sites.TableNone {
			t.Errorf("section %d %s holds sites but has no section symbol", s.Section, s.SecName)
		}
	}
}

// checkNops: with --nop, each call site (and each x86-64 multi-NOP area)
// decodes, with golang.org/x/arch, as one NOP of the site's length, and
// its hook relocation is R_*_NONE against no symbol.
func checkNops(t *testing.T, before *sites.Object, ref, out *image) {
	t.Helper()
	for _, s := range before.Sites {
		text := out.section(s.Section)
		b := text[s.Off : s.Off+uint64(s.Len)]
		where := fmt.Sprintf("%s+0x%x (%s)", s.SecName, s.Off, s.Func)
		if out.ef.Machine == elf.EM_AARCH64 {
			for o := 0; o < len(b); o += 4 {
				in, err := arm64.Decode(b[o:])
				if err != nil || in.Op != arm64asm.NOP {
					t.Errorf("%s: word %d is % x (%v), want nop", where, o/4, b[o:o+4], in)
				}
			}
		} else {
			in, err := x86asm.Decode(b, 64)
			if err != nil || in.Op != x86asm.NOP || in.Len != s.Len {
				t.Errorf("%s: % x decodes as %v (%d bytes, err %v), want one %d-byte NOP", where, b, in, in.Len, err, s.Len)
			}
		}
		if s.Rela < 0 {
			continue
		}
		r := out.relas(int(s.Rela))[s.RelaIdx]
		if r.typ != 0 || r.sym != 0 || r.addend != 0 {
			t.Errorf("%s: hook relocation is %s %s%+d, want %s", where, out.relocType(r.typ), out.symName(r.sym), r.addend, out.relocType(0))
		}
	}
}

// tools are the ELF readers every output must satisfy without a word of
// complaint, with the Debian package that installs each.
var tools = []struct {
	argv []string
	arch arch.Arch // Unknown: any
	pkg  string
}{
	{[]string{"readelf", "-a", "-W"}, arch.Unknown, "binutils"},
	{[]string{"llvm-readelf", "-a"}, arch.Unknown, "llvm"},
	{[]string{"objdump", "-dr"}, arch.X86_64, "binutils"},
	{[]string{"aarch64-linux-gnu-objdump", "-dr"}, arch.ARM64, "binutils-aarch64-linux-gnu"},
	{[]string{"llvm-objdump", "-dr"}, arch.Unknown, "llvm"},
}

// checkTools runs readelf and objdump (GNU and LLVM) on the output: each
// must succeed and print no warning or error. A missing tool fails the
// test, naming the package to install: the check matters too much to skip.
func checkTools(t *testing.T, fx fixture.Object, img []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), fx.Base+".o")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.arch != arch.Unknown && tool.arch != fx.Arch {
			continue
		}
		if _, err := exec.LookPath(tool.argv[0]); err != nil {
			t.Errorf("%s is not installed: apt-get install %s", tool.argv[0], tool.pkg)
			continue
		}
		cmd := exec.Command(tool.argv[0], append(tool.argv[1:], path)...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		err := cmd.Run()
		var bad []string
		for _, l := range strings.Split(stderr.String(), "\n") {
			if ll := strings.ToLower(l); strings.Contains(ll, "warning") || strings.Contains(ll, "error") {
				bad = append(bad, l)
			}
		}
		if err != nil || len(bad) > 0 {
			t.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, strings.Join(bad, "\n"))
		}
	}
}

// TestRewriteUnchanged: an object whose compiler wrote the table
// (-mrecord-mcount) is left alone, and the summary says why.
func TestRewriteUnchanged(t *testing.T) {
	for _, fx := range fixture.Corpus(t, "..", "*.o") {
		if !fx.Tokens["mrecord"] {
			continue
		}
		in, err := os.ReadFile(fx.Path)
		if err != nil {
			t.Fatal(err)
		}
		img, res, err := record.Rewrite(fx.Path, in, record.Options{})
		if err != nil || img != nil || res.Changed || res.Tabled != 0 {
			t.Errorf("%s: Rewrite = %d bytes, %+v, %v; want nil and unchanged", fx.Base, len(img), res, err)
		}
		if s := res.Summary(); !strings.Contains(s, "-mrecord-mcount") {
			t.Errorf("%s: summary %q does not say the compiler wrote the table", fx.Base, s)
		}
	}
}

// TestFile checks the file-level wrapper on one fixture per architecture:
// the written file is Rewrite's image with the input's mode, and a second
// run does not rewrite it.
func TestFile(t *testing.T) {
	seen := map[arch.Arch]bool{}
	var picked []fixture.Object
	for _, fx := range fixture.Corpus(t, "..", "*.o") {
		if !seen[fx.Arch] && !fx.Tokens["mrecord"] {
			seen[fx.Arch] = true
			picked = append(picked, fx)
		}
	}
	sort.Slice(picked, func(i, j int) bool { return picked[i].Base < picked[j].Base })
	for _, fx := range picked {
		t.Run(fx.Base, func(t *testing.T) {
			in, err := os.ReadFile(fx.Path)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "x.o")
			if err := os.WriteFile(path, in, 0o640); err != nil {
				t.Fatal(err)
			}
			res := record.File(path, "", record.Options{})
			if res.Err != nil || !res.Changed {
				t.Fatalf("File: changed %v, %v", res.Changed, res.Err)
			}
			want, _, err := record.Rewrite(path, in, record.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Error("written file differs from Rewrite's image")
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640", st.Mode().Perm())
			}
			if res := record.File(path, "", record.Options{}); res.Err != nil || res.Changed {
				t.Errorf("second File: changed %v, %v", res.Changed, res.Err)
			}
			ents, err := os.ReadDir(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 {
				t.Errorf("directory holds %d files after writing, want only x.o (a temporary left behind?)", len(ents))
			}
		})
	}
}

// FuzzRewrite mutates the fuzz seeds every package shares (fixture.Seeds:
// the fixtures, elfx's objects, recordmcount's good and bad objects): the
// pass must never panic, and an image it writes must read back, with
// nothing left to change. Crashers go under testdata/fuzz/FuzzRewrite so
// they stay fixed.
func FuzzRewrite(f *testing.F) {
	for _, b := range fixture.Read(f, fixture.Seeds(f, "..")...) {
		f.Add(b, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, nop bool) {
		opts := record.Options{Nop: nop}
		img, _, err := record.Rewrite("fuzz.o", data, opts)
		if err != nil || img == nil {
			return
		}
		if _, err := elfx.Parse("output", img); err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
		again, res, err := record.Rewrite("output", img, opts)
		if err != nil {
			t.Fatalf("second run: %v", err)
		}
		if again != nil {
			t.Fatalf("second run changed the output again: %s", res.Summary())
		}
	})
}
