package tests

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ftpatch/elfx"
	"ftpatch/internal/sitetest"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
	"ftpatch/nops"
	"ftpatch/outfile"
	ftrt "ftpatch/runtime"
	"ftpatch/sites"
)

// A decodeLink is one way of linking a program whose sites are then
// found by decoding.
type decodeLink struct {
	name  string
	pie   bool     // PIE objects and link
	args  []string // link flags beyond -pie/-no-pie
	hooks string   // "stub": runtime/stub's hooks; "libc": the C library's (imported); "runtime": libftrt
	libs  []string // libraries, after the objects
}

// decodeLinks are the link setups: each gives the hook calls a different
// form (direct, addr32, through the GOT with GLOB_DAT or a filled or
// RELATIVE slot, through the PLT). Both architectures have the first
// five; x86-64 adds linker relaxation turned off and the runtime itself.
var decodeLinks = map[string][]decodeLink{
	"x86_64": append(slices.Clip(decodeLinksBoth),
		decodeLink{"pie-stub-norelax", true, []string{"-Wl,--no-relax"}, "stub", nil},
		decodeLink{"static-norelax", false, []string{"-static", "-Wl,--no-relax"}, "stub", nil},
		decodeLink{"pie-runtime", true, nil, "runtime", nil},
	),
	"arm64": decodeLinksBoth,
}

var decodeLinksBoth = []decodeLink{
	{"pie-stub", true, nil, "stub", nil},
	{"pie-libc", true, nil, "libc", nil},
	{"nopie-stub", false, nil, "stub", nil},
	{"nopie-libc", false, nil, "libc", nil},
	{"static-stub", false, []string{"-static"}, "stub", nil},
}

// decodeFlags are the -pg builds per target, never through recordmcount.
var decodeFlags = map[string][]string{
	"x86_64": {"-pg -mfentry", "-pg", "-pg -mfentry -fcf-protection", "-pg -fcf-protection"},
	"arm64":  {"-pg", "-pg -mbranch-protection=standard"},
}

// linkDecode links objs into dir/name as l says.
func linkDecode(t *testing.T, tg target, dir, name string, objs []string, l decodeLink) string {
	t.Helper()
	out := filepath.Join(dir, name)
	argv := append(append([]string{}, tg.link...), "-o", out, picLink(l.pie))
	argv = append(append(argv, l.args...), objs...)
	switch l.hooks {
	case "stub":
		hooks, err := filepath.Abs(filepath.Join("..", "runtime", "stub", "hooks_"+tg.arch+".S"))
		if err != nil {
			t.Fatal(err)
		}
		argv = append(argv, hooks)
	case "runtime":
		argv = append(argv, ftrt.LinkFlags(runtimeArchive(t))...)
	}
	run(t, dir, append(argv, l.libs...)...)
	return out
}

// siteLines lists sites as "address function+offset kind len state".
func siteLines(l *sites.Linked) []string {
	var out []string
	for _, s := range l.Sites {
		out = append(out, fmt.Sprintf("0x%x %s", s.Off, siteLine(s)))
	}
	return out
}

// funcLines lists sites as "function+offset kind len state": what two
// links of the same objects with different layouts share.
func funcLines(l *sites.Linked) []string {
	var out []string
	for _, s := range l.Sites {
		out = append(out, siteLine(s))
	}
	slices.Sort(out)
	return out
}

func siteLine(s sites.Site) string {
	return fmt.Sprintf("%s+0x%x %v %d %v", s.Func, s.FuncOff, s.Kind, s.Len, s.State)
}

// targetLines lists sites as "address status target": where each call
// leads, as `ftpatch sites` prints it ("-" for a NOP).
func targetLines(l *sites.Linked) []string {
	var out []string
	for _, s := range l.Sites {
		target := "-"
		if s.Call != nil {
			target = s.Call.String()
		}
		out = append(out, fmt.Sprintf("0x%x %v %s", s.Off, s.State.Effect(), target))
	}
	return out
}

// decodeOracle links the objects (compiled into dir) twice: as they are,
// where FindLinked must decode the function entries, and after
// recordmcount, where it reads the table. Both must list the same sites,
// function for function. The table's own program, with the table hidden
// by renaming it, must decode to its table's sites, address for address.
// It returns the program linked without a table.
func decodeOracle(t *testing.T, tg target, dir string, objs []string, l decodeLink) string {
	t.Helper()
	recDir := filepath.Join(dir, "rec")
	if err := os.Mkdir(recDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var recObjs []string
	for _, o := range objs {
		b, err := os.ReadFile(o)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(recDir, filepath.Base(o))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		recObjs = append(recObjs, p)
	}
	run(t, recDir, append([]string{tool("recordmcount")}, recObjs...)...)
	decoded := linkDecode(t, tg, dir, "prog", objs, l)
	table := linkDecode(t, tg, recDir, "prog", recObjs, l)

	_, dl := sitetest.Linked(t, decoded)
	tf, tl := sitetest.Linked(t, table)
	for _, s := range dl.Sites {
		if s.Origin != sites.FromDecode {
			t.Fatalf("%s: site %s found from %v, want decoding", decoded, s.Func, s.Origin)
		}
	}
	if want := funcLines(tl); len(want) < 5 {
		t.Fatalf("the table lists only %d sites:\n%s", len(want), strings.Join(want, "\n"))
	} else if got := funcLines(dl); !slices.Equal(got, want) {
		t.Errorf("decoded sites differ from the table's\n%s", diffLines(want, got))
	}
	hidden := filepath.Join(recDir, "hidden")
	if err := outfile.WriteFile(hidden, 0o755, hideTable(t, tf)); err != nil {
		t.Fatal(err)
	}
	_, hl := sitetest.Linked(t, hidden)
	if got, want := siteLines(hl), siteLines(tl); !slices.Equal(got, want) {
		t.Errorf("%s with its table hidden: decoded sites differ from the table's\n%s", table, diffLines(want, got))
	}
	if got, want := targetLines(hl), targetLines(tl); !slices.Equal(got, want) {
		t.Errorf("%s with its table hidden: decoded sites lead elsewhere than the table's\n%s", table, diffLines(want, got))
	}
	return decoded
}

// hideTable returns f's bytes with its __mcount_loc section renamed, so
// FindLinked finds no table in a file otherwise byte for byte the same.
func hideTable(t *testing.T, f *elfx.File) []byte {
	t.Helper()
	data := slices.Clone(f.Data)
	strs := f.Sections[f.Shstrndx]
	names := data[strs.Off : uint64(strs.Off)+strs.Size]
	i := bytes.Index(names, []byte("\x00"+sites.TableName+"\x00"))
	if i < 0 {
		t.Fatalf("%s: no %s in the section names", f.Path, sites.TableName)
	}
	names[i+len(sites.TableName)] = 'X' // __mcount_loX
	return data
}

// diffLines shows what is only in want (-) and only in got (+).
func diffLines(want, got []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&b, "- %s (table only)\n", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&b, "+ %s (decoded only)\n", g)
		}
	}
	return b.String()
}

// TestDecodeOracle: programs compiled with -pg (with -mfentry or not, -O0
// and -O2, gcc and clang) but never through recordmcount are decoded; the
// same objects after recordmcount give a table; the two lists of sites
// are the same, address for address, kind for kind, however the hooks
// are reached (direct, relaxed, GOT, PLT, static, PIE).
func TestDecodeOracle(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		for _, flags := range decodeFlags[tg.arch] {
			if tg.arch == "arm64" && tg.name == "clang" && flags != "-pg" {
				continue
			}
			for _, opt := range []string{"-O0", "-O2"} {
				for _, l := range decodeLinks[tg.arch] {
					if opt == "-O0" && l.name != "pie-stub" && l.name != "nopie-libc" {
						continue // how the hooks are reached does not depend on -O
					}
					t.Run(fmt.Sprintf("%s/%s/%s/%s%s", tg.arch, tg.name, l.name, slug(flags), opt), func(t *testing.T) {
						t.Parallel()
						need(t, tg.tools...)
						dir := t.TempDir()
						decodeOracle(t, tg, dir, build(t, tg, dir, flags+" "+opt, l.pie), l)
					})
				}
			}
		}
	}
}

// TestDecodeMrecordMcount: gcc's own table (-mrecord-mcount) and the
// decoded entries of the same program built without it agree.
func TestDecodeMrecordMcount(t *testing.T) {
	t.Parallel()
	for _, flags := range []string{"-pg -mfentry", "-pg"} {
		for _, pie := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/%s", slug(flags), picFlag(pie)), func(t *testing.T) {
				t.Parallel()
				need(t, x86GCC.tools...)
				gccDir, dir := t.TempDir(), t.TempDir()
				l := decodeLink{"", pie, nil, "stub", nil}
				_, gl := sitetest.Linked(t, linkDecode(t, x86GCC, gccDir, "prog", build(t, x86GCC, gccDir, flags+" -mrecord-mcount", pie), l))
				_, dl := sitetest.Linked(t, linkDecode(t, x86GCC, dir, "prog", build(t, x86GCC, dir, flags, pie), l))
				got, want := siteLines(dl), siteLines(gl)
				if len(want) < 5 || !slices.Equal(got, want) {
					t.Errorf("gcc's table (%d sites) and the decoded sites differ\n%s", len(want), diffLines(want, got))
				}
			})
		}
	}
}

// TestDecodePatched: a program whose sites were rewritten as ftpatch
// enable and the runtime rewrite them (each of our NOPs, calls to the
// trampolines of the site's kind and length, to ftrace_stub) gives the
// same sites on a second decoding, in their new states; the input file is
// left as it was.
func TestDecodePatched(t *testing.T) {
	t.Parallel()
	type variant struct {
		tg    target
		flags string
		link  decodeLink
	}
	runtimeLink := decodeLinks["x86_64"][len(decodeLinks["x86_64"])-1]
	for _, v := range []variant{
		{x86GCC, "-pg -mfentry", runtimeLink},
		{x86GCC, "-pg", runtimeLink},
		{x86Clang, "-pg -mfentry -fcf-protection", runtimeLink},
		{x86Clang, "-pg", runtimeLink},
		{x86Clang, "-pg -O0", runtimeLink},
		{x86GCC, "-pg -O0", runtimeLink},
		{a64GCC, "-pg", decodeLinks["arm64"][0]},
		{a64GCC, "-pg -mbranch-protection=standard", decodeLinks["arm64"][0]},
		{a64GCC, "-pg -O0", decodeLinks["arm64"][0]},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", v.tg.arch, v.tg.name, slug(v.flags)), func(t *testing.T) {
			t.Parallel()
			need(t, v.tg.tools...)
			dir := t.TempDir()
			prog := decodeOracle(t, v.tg, dir, build(t, v.tg, dir, v.flags, v.link.pie), v.link)
			f, l := sitetest.Linked(t, prog)
			before := slices.Clone(f.Data)
			data := slices.Clone(f.Data)
			want := patchSites(t, f, l, data)
			patched := filepath.Join(dir, "patched")
			if err := outfile.WriteFile(patched, 0o755, data); err != nil {
				t.Fatal(err)
			}
			if after, err := os.ReadFile(prog); err != nil || !slices.Equal(after, before) {
				t.Fatalf("the input changed: %v", err)
			}
			_, pl := sitetest.Linked(t, patched)
			if got := siteLines(pl); !slices.Equal(got, want) {
				t.Errorf("after patching:\n%s", diffLines(want, got))
			}
		})
	}
}

// patchSites rewrites the sites of l in data (f's bytes) in turn: on
// x86-64 one of our NOPs (each style in turn), a call to the trampoline
// the runtime would call from the site, a call to ftrace_stub, a NOP
// again; on arm64 a NOP, then left alone. It returns the site lines a
// decoding of the result must give.
func patchSites(t *testing.T, f *elfx.File, l *sites.Linked, data []byte) []string {
	t.Helper()
	addr := sitetest.Symbols(t, f)
	styles := []x86.NopStyle{x86.P6, x86.K8, x86.JmpPad}
	var want []string
	counts := map[string]int{}
	for i, s := range l.Sites {
		off, err := f.AddrToOff(elfx.Addr(s.Off), uint64(s.Len))
		if err != nil {
			t.Fatal(err)
		}
		text := nops.Bytes{Base: s.Off, B: data[off : uint64(off)+uint64(s.Len)]}
		old := slices.Clone(text.B)
		var new []byte
		how := "leave"
		switch {
		case f.Arch.String() == "arm64" && i%2 == 0:
			how, new = "nop", arm64.Bytes(arm64.NOP)
		case f.Arch.String() == "arm64":
		case i%4 == 0 || i%4 == 3:
			how = "nop"
			new, err = x86.Nop(s.Len, styles[counts["nop"]%len(styles)])
		case i%4 == 1:
			tramp := fmt.Sprintf("ftrace_caller%d", s.Len)
			if s.Kind == sites.X86Mcount {
				tramp = fmt.Sprintf("ftrace_mcount_caller%d", s.Len)
			}
			how = "trampoline"
			new, err = x86CallTo(s.Off, s.Len, addr[tramp])
		case i%4 == 2:
			how = "stub"
			new, err = x86CallTo(s.Off, s.Len, addr["ftrace_stub"])
		}
		if err != nil {
			t.Fatal(err)
		}
		state := s.State
		if new != nil {
			if err := nops.Modify(text, s.Off, old, new); err != nil {
				t.Fatal(err)
			}
			if how == "nop" {
				state = sites.StateNop
			} else {
				state = sites.StateTraced
			}
		}
		counts[how]++
		want = append(want, fmt.Sprintf("0x%x %s+0x%x %v %d %v", s.Off, s.Func, s.FuncOff, s.Kind, s.Len, state))
	}
	if counts["nop"] < 3 || (f.Arch.String() == "x86_64" && (counts["trampoline"] == 0 || counts["stub"] == 0)) {
		t.Fatalf("patched too few sites: %v", counts)
	}
	return want
}

// x86CallTo is the call the runtime writes at a site of n bytes.
func x86CallTo(site uint64, n int, target uint64) ([]byte, error) {
	if target == 0 {
		return nil, fmt.Errorf("no trampoline symbol in the program")
	}
	if n == 6 {
		return x86.Call6(site, target)
	}
	return x86.Call(site, target)
}

// TestDecodeLua: Lua 5.4, a real program of some 700 instrumented
// functions, built with -pg in gcc's and clang's shapes and linked with
// the runtime (whose own functions must give no site), decodes to exactly
// the sites recordmcount finds in the same objects; with every site made
// a NOP, it decodes to the same sites again. Built without -pg but with
// frame pointers (prologues like -pg's, loops aligned with the very NOPs
// ftpatch writes), it has no site at all.
func TestDecodeLua(t *testing.T) {
	t.Parallel()
	src := luaSource(t)
	for _, v := range []struct {
		tg    target
		flags string
	}{
		{x86GCC, "-pg -O2"},
		{x86Clang, "-pg -O2"},
		{a64GCC, "-pg -O2"},
		{x86GCC, "-O2 -fno-omit-frame-pointer"},
		{x86Clang, "-O2 -fno-omit-frame-pointer"},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", v.tg.arch, v.tg.name, slug(v.flags)), func(t *testing.T) {
			t.Parallel()
			need(t, v.tg.tools...)
			dir := t.TempDir()
			srcs, err := filepath.Glob(filepath.Join(src, "*.c"))
			if err != nil || len(srcs) < 20 {
				t.Fatalf("Lua's sources: %v, %d files", err, len(srcs))
			}
			var objs []string
			for _, c := range srcs {
				if filepath.Base(c) == "luac.c" {
					continue
				}
				obj := filepath.Join(dir, strings.TrimSuffix(filepath.Base(c), ".c")+".o")
				argv := append(append([]string{}, v.tg.cc...), "-std=gnu99", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX", "-fPIE", "-c", c, "-o", obj)
				run(t, dir, append(argv, strings.Fields(v.flags)...)...)
				objs = append(objs, obj)
			}
			l := decodeLink{"pie-runtime", true, nil, "runtime", []string{"-lm", "-ldl"}}
			if v.tg.arch == "arm64" {
				l.hooks = "stub" // no arm64 runtime yet
			}
			if strings.Contains(v.flags, "-pg") {
				prog := decodeOracle(t, v.tg, dir, objs, l)
				checkAllNops(t, prog)
				return
			}
			f, dl := sitetest.Decoded(t, linkDecode(t, v.tg, dir, "lua", objs, l))
			if len(dl.Sites) != 0 {
				t.Errorf("a program built without -pg has %d decoded sites:\n%s", len(dl.Sites), strings.Join(siteLines(dl), "\n"))
			}
			if _, err := sites.FindLinked(f); !errors.Is(err, sites.ErrNoTable) {
				t.Errorf("FindLinked: %v, want ErrNoTable", err)
			}
			nops := countOurNops(t, f)
			if nops < 10 {
				t.Errorf("only %d of our NOPs in the program's code: it no longer tests that loop alignment is not taken for sites", nops)
			}
		})
	}
}

// checkAllNops turns every decoded site of prog into our NOP (in memory)
// and checks that decoding finds every one again, as a NOP.
func checkAllNops(t *testing.T, prog string) {
	t.Helper()
	f, l := sitetest.Linked(t, prog)
	data := slices.Clone(f.Data)
	var want []string
	for _, s := range l.Sites {
		off, err := f.AddrToOff(elfx.Addr(s.Off), uint64(s.Len))
		if err != nil {
			t.Fatal(err)
		}
		nop := arm64.Bytes(arm64.NOP)
		if f.Arch.String() == "x86_64" {
			if nop, err = x86.Nop(s.Len, x86.P6); err != nil {
				t.Fatal(err)
			}
		}
		text := nops.Bytes{Base: s.Off, B: data[off : uint64(off)+uint64(s.Len)]}
		if err := nops.Modify(text, s.Off, slices.Clone(text.B), nop); err != nil {
			t.Fatal(err)
		}
		s.State = sites.StateNop
		want = append(want, fmt.Sprintf("0x%x %s", s.Off, siteLine(s)))
	}
	nl := sitetest.Find(t, sitetest.Parse(t, prog, data), sites.FindLinked)
	if got := siteLines(nl); !slices.Equal(got, want) {
		t.Errorf("with every site a NOP:\n%s", diffLines(want, got))
	}
}

// countOurNops counts the 5- and 6-byte NOPs of ours in f's code sections
// (scanning bytes, so it overcounts rather than undercounts).
func countOurNops(t *testing.T, f *elfx.File) int {
	t.Helper()
	n := 0
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		n += bytes.Count(f.SectionData(s), x86.NOP5) + bytes.Count(f.SectionData(s), x86.NOP6)
	}
	return n
}
