package sites_test

import (
	"bytes"
	"debug/elf"
	"fmt"
	"ftpatch/internal/fixture"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/internal/golden"
	"ftpatch/sites"
)

// fixtureGlob matches the objects built by `make fixtures` (mk/fixtures.mk).
const fixtureGlob = "testdata/*.o"

// fixtures lists testdata/*.o; a glob matching nothing, or a name not in
// the fixture scheme, fails the test.
func fixtures(t *testing.T) []fixture.Object { return fixture.Objects(t, fixtureGlob) }

func open(t *testing.T, path string) *elfx.File {
	t.Helper()
	f, err := elfx.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// dump prints what FindObject found, one site per line, in the form the
// goldens hold.
func dump(obj *sites.Object, f *elfx.File) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "arch %v\ntable %v\n", obj.Arch, obj.Table)
	tw := tabwriter.NewWriter(&b, 0, 8, 1, ' ', 0)
	fmt.Fprintln(tw, "SECTION\tOFFSET\tFUNCTION\tKIND\tLEN\tSTATE\tPRE\tWEAK\tSOURCE\tHOOK\tGROUP")
	for _, s := range obj.Sites {
		hook, group := s.Hook(), "-"
		if hook == "" {
			hook = "-"
		}
		if s.Group != 0 {
			group = fmt.Sprintf("[%d] %s", s.Group, f.Sections[s.Group].Name)
		}
		fmt.Fprintf(tw, "[%d] %s\t0x%x\t%s+0x%x\t%v\t%d\t%v\t%d\t%v\t%v\t%s\t%s\n",
			s.Section, s.SecName, s.Off, s.Func, s.FuncOff, s.Kind, s.Len, s.State.Insn(), s.Pre, s.Weak, s.Origin, hook, group)
	}
	tw.Flush()
	for _, n := range obj.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, w := range obj.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.Bytes()
}

// TestFindObject compares the sites of every fixture with its golden
// testdata/<fixture>.sites.golden, then checks each against facts read
// independently of package sites.
func TestFindObject(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.Base, func(t *testing.T) {
			f := open(t, fx.Path)
			obj, err := sites.FindObject(f)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", fx.Base+".sites.golden"), dump(obj, f))

			ef, err := elf.Open(fx.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.Close()
			checkTable(t, fx, obj)
			checkNotes(t, fx, obj)
			checkFuncCount(t, ef, obj)
			checkBytes(t, fx, f, obj)
			if fx.Arch == arch.X86_64 && (fx.Has("pg") || fx.Has("mfentry")) {
				checkHookRelocs(t, ef, obj)
			}
			if fx.Arch == arch.ARM64 && fx.Has("pfe4_2") {
				checkCallOps(t, fx, f, obj)
			}
		})
	}
}

// checkTable: only -mrecord-mcount objects carry a table, the compiler's.
func checkTable(t *testing.T, fx fixture.Object, obj *sites.Object) {
	t.Helper()
	want := sites.TableNone
	if fx.Has("mrecord") {
		want = sites.TableCompiler
	}
	if obj.Table != want {
		t.Errorf("Table = %v, want %v", obj.Table, want)
	}
	if len(obj.Sites) == 0 {
		t.Error("no sites; every fixture is instrumented")
	}
}

// checkNotes: only tailcall.S holds something that looks like a site and
// is not (`b _mcount`), and shapes.c patchable areas beside calls of a
// hook, which are left alone (one note for all); no fixture but the
// arm64 4,2 ones without -falign-functions=8 (see checkCallOps) and gcc's
// cold functions warn.
func checkNotes(t *testing.T, fx fixture.Object, obj *sites.Object) {
	t.Helper()
	want, about := 0, ""
	switch fx.Case {
	case "tailcall":
		want, about = 1, "tail call `b _mcount`"
	case "shapes":
		// padded and padded_pre; with -fpatchable-function-entry=5 every
		// function (clang has no nested add.0).
		n := 2
		if fx.Has("pfe5") {
			n = map[string]int{"gcc": 6, "clang": 4}[fx.CC]
		}
		want, about = 1, fmt.Sprintf("%d patchable areas (", n)
	}
	if len(obj.Notes) != want {
		t.Errorf("notes %q, want %d", obj.Notes, want)
	}
	for _, n := range obj.Notes {
		if !strings.Contains(n, about) {
			t.Errorf("note %q is not about %q", n, about)
		}
	}
	if len(obj.Warnings) > 0 && !(fx.Arch == arch.ARM64 && fx.Has("pfe4_2")) {
		t.Errorf("warnings %q", obj.Warnings)
	}
}

// checkFuncCount counts the functions the compiler instrumented, with
// debug/elf rather than elfx: the distinct addresses of defined STT_FUNC
// symbols in the instrumented code sections, those that hold a relocation
// against a hook or that __patchable_function_entries or __mcount_loc
// points into. Aliases share an address and so count once; gcc's `.cold`
// symbols name the split-off tail of a function, not an entry, and the
// fixtures' notrace_* functions are built not to be instrumented. Every
// other function must have exactly one site.
func checkFuncCount(t *testing.T, ef *elf.File, obj *sites.Object) {
	t.Helper()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	instrumented := map[int]bool{}
	for _, rs := range ef.Sections {
		if rs.Type != elf.SHT_RELA {
			continue
		}
		target := ef.Sections[rs.Info]
		table := target.Name == sites.PatchableName || target.Name == sites.TableName
		if !table && target.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		data, err := rs.Data()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+24 <= len(data); i += 24 {
			sym := int(ef.ByteOrder.Uint64(data[i+8:])>>32) - 1 // debug/elf drops the null symbol
			if sym < 0 {
				continue
			}
			switch name := syms[sym].Name; {
			case table:
				instrumented[int(syms[sym].Section)] = true
			case name == "__fentry__" || name == "mcount" || name == "_mcount":
				instrumented[int(rs.Info)] = true
			}
		}
	}
	type addr struct {
		sec int
		off uint64
	}
	funcs := map[addr][]string{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE {
			continue
		}
		if !instrumented[int(s.Section)] || strings.HasPrefix(s.Name, "notrace_") || strings.Contains(s.Name, ".cold") {
			continue
		}
		a := addr{int(s.Section), s.Value}
		funcs[a] = append(funcs[a], s.Name)
	}
	sited := map[addr]bool{}
	for _, s := range obj.Sites {
		sited[addr{s.Section, s.Off - s.FuncOff}] = true
	}
	for a, names := range funcs {
		if !sited[a] {
			t.Errorf("function %s (section %d+0x%x) has no site", strings.Join(names, "="), a.sec, a.off)
		}
	}
	for a := range sited {
		if funcs[a] == nil {
			t.Errorf("site in section %d at function start 0x%x, where no counted function starts", a.sec, a.off)
		}
	}
	if len(obj.Sites) != len(funcs) {
		t.Errorf("%d sites for %d instrumented functions", len(obj.Sites), len(funcs))
	}
}

// checkBytes reads each site's bytes and checks them against its kind and
// state, and its place in the function against the kind.
func checkBytes(t *testing.T, fx fixture.Object, f *elfx.File, obj *sites.Object) {
	t.Helper()
	for _, s := range obj.Sites {
		text := f.SectionData(f.Sections[s.Section])
		if s.Off+uint64(s.Len) > uint64(len(text)) {
			t.Errorf("%s+0x%x: %d-byte site runs past the section", s.SecName, s.Off, s.Len)
			continue
		}
		b := text[s.Off : s.Off+uint64(s.Len)]
		where := fmt.Sprintf("%s+0x%x (%s+0x%x)", s.SecName, s.Off, s.Func, s.FuncOff)
		// The entry is the function start, after endbr64 / bti c.
		entry := uint64(0)
		start := text[s.Off-s.FuncOff:]
		if fx.Has("cet") && bytes.HasPrefix(start, []byte{0xf3, 0x0f, 0x1e, 0xfa}) || // endbr64
			fx.Has("bti") && bytes.HasPrefix(start, []byte{0x5f, 0x24, 0x03, 0xd5}) { // bti c
			entry = 4
		}
		lead := start[entry:s.FuncOff]
		switch s.Kind {
		case sites.X86Fentry, sites.X86Mcount, sites.X86Chain:
			// A patchable area (clang's long NOP and 3-byte NOP, or
			// gcc's 90s) may come before an fentry call, and comes
			// before an mcount one's prologue.
			area := map[string][][]byte{"gcc": {bytes.Repeat([]byte{0x90}, 5), bytes.Repeat([]byte{0x90}, 3)},
				"clang": {{0x0f, 0x1f, 0x44, 0x00, 0x08}, {0x0f, 0x1f, 0x00}}}[fx.CC]
			if s.Kind == sites.X86Fentry && s.FuncOff != entry && !(fx.Case == "shapes" && slices.ContainsFunc(area, func(a []byte) bool { return bytes.Equal(lead, a) })) {
				t.Errorf("%s: fentry site at +0x%x after % x, want the entry +0x%x or a patchable area", where, s.FuncOff, lead, entry)
			}
			// gcc saves a nested function's static chain around its
			// call, and (gcc 12) puts the endbr64 and the NOPs of
			// -fpatchable-function-entry after the push.
			chain := regexp.MustCompile(`^(f30f1efa)?4152(f30f1efa)?(90)*$`)
			after := text[s.Off+uint64(s.Len):]
			if s.Kind == sites.X86Chain && (!chain.MatchString(fmt.Sprintf("%x", start[:s.FuncOff])) || !bytes.HasPrefix(after, []byte{0x41, 0x5a}) || fx.CC != "gcc") {
				t.Errorf("%s: chain site after % x, before % x; want push %%r10 before, pop %%r10 after", where, start[:s.FuncOff], after[:min(len(after), 2)])
			}
			if s.Kind == sites.X86Mcount && s.FuncOff == 0 {
				t.Errorf("%s: mcount site at the function start, want after the prologue", where)
			}
			switch {
			case s.Len == 5 && b[0] == 0xe8: // call rel32
			case s.Len == 6 && b[0] == 0xff && b[1] == 0x15: // call *disp32(%rip)
			default:
				t.Errorf("%s: %d-byte call site holds % x", where, s.Len, b)
			}
		case sites.X86Patchable:
			if s.FuncOff != entry || s.Len != 5 {
				t.Errorf("%s: patchable site at +0x%x len %d, want +0x%x len 5", where, s.FuncOff, s.Len, entry)
			}
			// gcc emits five one-byte NOPs, clang one five-byte NOP.
			want := map[string][]byte{"gcc": {0x90, 0x90, 0x90, 0x90, 0x90}, "clang": {0x0f, 0x1f, 0x44, 0x00, 0x08}}[fx.CC]
			if !bytes.Equal(b, want) {
				t.Errorf("%s: patchable site holds % x, want % x", where, b, want)
			}
		case sites.ARM64Patchable, sites.ARM64CallOps:
			nop2 := []byte{0x1f, 0x20, 0x03, 0xd5, 0x1f, 0x20, 0x03, 0xd5} // nop; nop
			if s.FuncOff != entry || !bytes.Equal(b, nop2) {
				t.Errorf("%s: patchable site at +0x%x holds % x, want two NOPs at +0x%x", where, s.FuncOff, b, entry)
			}
		case sites.ARM64Mcount:
			if s.Len != 4 || b[3]&0xfc != 0x94 { // bl
				t.Errorf("%s: mcount site holds % x, want bl", where, b)
			}
		default:
			t.Errorf("%s: kind %v on %v", where, s.Kind, fx.Arch)
		}
		if s.State != sites.StateHook && (s.Kind == sites.X86Fentry || s.Kind == sites.X86Mcount || s.Kind == sites.X86Chain || s.Kind == sites.ARM64Mcount) {
			t.Errorf("%s: state %v, want call", where, s.State)
		}
	}
}

// checkHookRelocs finds the calls to __fentry__ and mcount from the
// relocations, with debug/elf, and checks they are exactly the sites, each
// anchored at the first byte of its call: `ff 15` for the PIE form (the
// relocation at site+2; the kernel's recordmcount records site+1, inside
// the instruction) and `e8` otherwise (the relocation at site+1).
func checkHookRelocs(t *testing.T, ef *elf.File, obj *sites.Object) {
	t.Helper()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	type place struct {
		sec int
		off uint64
	}
	want := map[place]int{} // site -> length
	for ri, rs := range ef.Sections {
		if rs.Type != elf.SHT_RELA || ef.Sections[rs.Info].Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		text, err := ef.Sections[rs.Info].Data()
		if err != nil {
			t.Fatal(err)
		}
		data, err := rs.Data()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+24 <= len(data); i += 24 {
			off := ef.ByteOrder.Uint64(data[i:])
			info := ef.ByteOrder.Uint64(data[i+8:])
			sym := int(info>>32) - 1 // debug/elf drops the null symbol
			if sym < 0 || (syms[sym].Name != "__fentry__" && syms[sym].Name != "mcount") {
				continue
			}
			switch typ := elf.R_X86_64(uint32(info)); typ {
			case elf.R_X86_64_GOTPCRELX, elf.R_X86_64_GOTPCREL:
				if off < 2 || text[off-2] != 0xff || text[off-1] != 0x15 {
					t.Errorf("section %d relocation %d: %v against %s not after `ff 15`", ri, i/24, typ, syms[sym].Name)
				}
				want[place{int(rs.Info), off - 2}] = 6
			case elf.R_X86_64_PLT32, elf.R_X86_64_PC32:
				if off < 1 || text[off-1] != 0xe8 {
					t.Errorf("section %d relocation %d: %v against %s not after `e8`", ri, i/24, typ, syms[sym].Name)
				}
				want[place{int(rs.Info), off - 1}] = 5
			default:
				t.Errorf("section %d relocation %d: unexpected %v against %s", ri, i/24, typ, syms[sym].Name)
			}
		}
	}
	for _, s := range obj.Sites {
		n, ok := want[place{s.Section, s.Off}]
		if !ok {
			t.Errorf("site %s+0x%x (%s) is not the start of a call to a hook", s.SecName, s.Off, s.Func)
			continue
		}
		if n != s.Len {
			t.Errorf("site %s+0x%x (%s): len %d, want %d", s.SecName, s.Off, s.Func, s.Len, n)
		}
		delete(want, place{s.Section, s.Off})
	}
	for p := range want {
		t.Errorf("call to a hook at section %d+0x%x is not a site", p.sec, p.off)
	}
}

// checkCallOps: with -fpatchable-function-entry=4,2 every site has 8
// bytes of NOPs before the function. They can hold the ops pointer only
// when 8-byte aligned (-falign-functions=8): then the kind is callops;
// otherwise each misaligned slot is a warning and the kind plain
// patchable.
func checkCallOps(t *testing.T, fx fixture.Object, f *elfx.File, obj *sites.Object) {
	t.Helper()
	misaligned := 0
	for _, s := range obj.Sites {
		pre := s.Off - s.FuncOff - uint64(s.Pre)
		aligned := pre%8 == 0 && f.Sections[s.Section].Align >= 8
		want := sites.ARM64Patchable
		if aligned {
			want = sites.ARM64CallOps
		} else {
			misaligned++
		}
		if s.Pre != 8 || s.Kind != want {
			t.Errorf("%s+0x%x (%s): kind %v pre %d, want %v pre 8", s.SecName, s.Off, s.Func, s.Kind, s.Pre, want)
		}
	}
	if fx.Has("align8") {
		// -falign-functions does not apply to functions gcc deems cold
		// (here the noreturn die, in .text.unlikely, aligned to 4): only
		// those may lack the slot.
		for _, s := range obj.Sites {
			if s.Kind != sites.ARM64CallOps && !strings.HasPrefix(s.SecName, ".text.unlikely") {
				t.Errorf("-falign-functions=8: %s+0x%x (%s) has no aligned slot", s.SecName, s.Off, s.Func)
			}
		}
	}
	if !fx.Has("align8") && misaligned == 0 {
		t.Error("fixture built without -falign-functions=8 has every slot aligned: it no longer tests the warning")
	}
	if len(obj.Warnings) != misaligned {
		t.Errorf("%d warnings for %d misaligned slots: %q", len(obj.Warnings), misaligned, obj.Warnings)
	}
}

// TestWeakOnlySections: the x86-64 assemblers (gas and clang's) emit no
// section symbol for a -ffunction-sections section nothing refers to as a
// section, such as one holding a single weak function. Its sites must
// still be found (and a table for them needs a section symbol made; see
// package record).
func TestWeakOnlySections(t *testing.T) {
	n := 0
	for _, fx := range fixtures(t) {
		if fx.Case != "weak" || fx.Arch != arch.X86_64 {
			continue
		}
		n++
		t.Run(fx.Base, func(t *testing.T) {
			f := open(t, fx.Path)
			_, syms, err := f.Symtab()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range syms {
				if s.Type() == elf.STT_SECTION && f.Sections[s.Shndx].Flags&elf.SHF_EXECINSTR != 0 {
					t.Fatalf("fixture has section symbol %d for code section %q: it no longer tests a section without one", s.Index, f.Sections[s.Shndx].Name)
				}
			}
			obj, err := sites.FindObject(f)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, s := range obj.Sites {
				if !s.Weak {
					t.Errorf("site in %s: not marked weak", s.Func)
				}
				got[s.Func] = s.SecName
			}
			want := map[string]string{"weak_first": ".text.weak_first", "weak_second": ".text.weak_second"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("sites (function: section) = %v, want %v", got, want)
			}
		})
	}
	if n == 0 {
		t.Fatal("no weak-x86_64-* fixture")
	}
}

// TestGoldensHaveFixtures catches a golden left behind by a fixture that
// was removed or renamed.
func TestGoldensHaveFixtures(t *testing.T) {
	goldens, err := filepath.Glob("testdata/*.sites.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goldens {
		obj := strings.TrimSuffix(g, ".sites.golden") + ".o"
		if _, err := os.Stat(obj); err != nil {
			t.Errorf("%s: no fixture %s", g, obj)
		}
	}
}
