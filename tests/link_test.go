package tests

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"ftpatch/internal/sitetest"
	"ftpatch/sites"
)

// expectation is what the linked table must hold, computed from the
// objects before linking: one site per instrumented function, and the
// number of weak definitions the linker will discard for strong ones.
type expectation struct {
	funcs []string // sorted, unique
	dead  int
}

func expect(t *testing.T, objs []string) expectation {
	t.Helper()
	weak, strong := map[string]int{}, map[string]bool{}
	set := map[string]bool{}
	for _, o := range objs {
		_, obj := sitetest.Object(t, o)
		for _, s := range obj.Sites {
			set[s.Func] = true
			if s.Weak {
				weak[s.Func]++
			} else {
				strong[s.Func] = true
			}
		}
	}
	var e expectation
	for fn := range set {
		e.funcs = append(e.funcs, fn)
	}
	sort.Strings(e.funcs)
	for fn, n := range weak {
		if strong[fn] {
			e.dead += n
		}
	}
	if len(e.funcs) < 5 || e.dead != 1 {
		t.Fatalf("the test program should give several sites and one discarded weak function; got %v, %d dead", e.funcs, e.dead)
	}
	return e
}

// checkTable asserts the linked file's table lists exactly one site per
// instrumented function, nothing else, and skips the dead weak one.
func checkTable(t *testing.T, prog string, e expectation, wantState func(sites.Site) bool) *sites.Linked {
	t.Helper()
	_, l := sitetest.Linked(t, prog)
	var got []string
	for _, s := range l.Sites {
		got = append(got, s.Func)
		if !wantState(s) {
			t.Errorf("%s: site %s at 0x%x is %v %v", prog, s.Func, s.Off, s.Kind, s.State)
		}
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(e.funcs, " ") {
		t.Errorf("%s: table lists functions\n  %v\nwant exactly\n  %v", prog, got, e.funcs)
	}
	if len(l.Dead) != e.dead || l.Dups != 0 {
		t.Errorf("%s: %d dead entries, %d duplicates; want %d dead, 0 duplicates", prog, len(l.Dead), l.Dups, e.dead)
	}
	// A dead entry still holds the bytes its weak function was compiled
	// with (or the NOP the runtime's pass or ftpatch wrote): read like a
	// live site's, for patching to keep it a NOP.
	for _, d := range l.Dead {
		if d.Func != "" || d.Len < 4 || d.Len > 8 || d.State == sites.StateUnknown {
			t.Errorf("%s: dead entry at 0x%x holds %v of %d bytes (function %q)", prog, d.Off, d.State, d.Len, d.Func)
		}
	}
	return l
}

// checkClean asserts the linked file has no text relocations and that
// readelf and objdump read it without a warning.
func checkClean(t *testing.T, tg target, prog, linkErr string) {
	t.Helper()
	if strings.TrimSpace(linkErr) != "" {
		t.Errorf("linker printed:\n%s", linkErr)
	}
	ef, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if v, _ := ef.DynValue(elf.DT_TEXTREL); len(v) > 0 {
		t.Errorf("%s has DT_TEXTREL", prog)
	}
	if v, _ := ef.DynValue(elf.DT_FLAGS); len(v) > 0 && elf.DynFlag(v[0])&elf.DF_TEXTREL != 0 {
		t.Errorf("%s has DF_TEXTREL", prog)
	}
	for _, argv := range [][]string{{"readelf", "-a", "-W", prog}, {tg.objdump, "-d", prog}} {
		_, stderr := run(t, filepath.Dir(prog), argv...)
		if strings.TrimSpace(stderr) != "" {
			t.Errorf("%s complains:\n%s", argv[0], stderr)
		}
	}
}

// TestLink: objects rewritten by recordmcount link with GNU ld and lld, as
// PIE and non-PIE, without a warning or a text relocation; the program's
// table lists one site per instrumented function and nothing else; and
// the program runs exactly as the one built without instrumentation.
func TestLink(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		for _, flags := range flagSets[tg.arch] {
			for _, pie := range []bool{true, false} {
				for _, ld := range []string{"bfd", "lld"} {
					name := fmt.Sprintf("%s/%s/%s/%s/%s", tg.arch, tg.name, slug(flags), map[bool]string{true: "pie", false: "nopie"}[pie], ld)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						need(t, tg.tools...)
						dir := t.TempDir()
						_, wantOut, wantCode := plainRun(t, tg, pie, ld)

						objs := build(t, tg, dir, flags, pie)
						e := expect(t, objs)
						run(t, dir, append([]string{tool("recordmcount")}, objs...)...)
						prog, linkErr := link(t, tg, dir, "prog", objs, pie, ld, true)
						checkClean(t, tg, prog, linkErr)
						checkTable(t, prog, e, func(s sites.Site) bool {
							// Compiler-made patchable areas are NOPs; calls
							// stay calls until --nop or the runtime.
							if s.Kind == sites.X86Patchable || s.Kind == sites.ARM64Patchable || s.Kind == sites.ARM64CallOps {
								return s.State == sites.StateNops || s.State == sites.StateNop
							}
							return s.State == sites.StateHook
						})
						out, code := execute(t, tg, prog)
						checkSame(t, "instrumented program", out, code, wantOut, wantCode)
					})
				}
			}
		}
	}
}

// TestNop: with --nop, the linked program starts with every site a NOP
// (checked in the table and in objdump's disassembly) and behaves exactly
// like the untouched instrumented build and the plain one.
func TestNop(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		for _, flags := range flagSets[tg.arch] {
			t.Run(fmt.Sprintf("%s/%s/%s", tg.arch, tg.name, slug(flags)), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				untouchedDir, dir := t.TempDir(), t.TempDir()
				untouched, _ := link(t, tg, untouchedDir, "untouched", build(t, tg, untouchedDir, flags, true), true, "bfd", true)
				wantOut, wantCode := execute(t, tg, untouched)

				objs := build(t, tg, dir, flags, true)
				e := expect(t, objs)
				run(t, dir, append([]string{tool("recordmcount"), "--nop"}, objs...)...)
				prog, linkErr := link(t, tg, dir, "prog", objs, true, "bfd", true)
				checkClean(t, tg, prog, linkErr)
				l := checkTable(t, prog, e, func(s sites.Site) bool {
					// arm64 patchable areas are two NOPs already.
					return s.State == sites.StateNop || (tg.arch == "arm64" && s.State == sites.StateNops)
				})
				checkDisasmNops(t, tg, prog, l)
				out, code := execute(t, tg, prog)
				checkSame(t, "--nop program", out, code, wantOut, wantCode)
			})
		}
	}
}

var objdumpLine = regexp.MustCompile(`^\s*([0-9a-f]+):\s+(?:[0-9a-f]{2,8} )+\s*(\S+)`)

// checkDisasmNops asserts objdump shows a NOP at every site address.
func checkDisasmNops(t *testing.T, tg target, prog string, l *sites.Linked) {
	t.Helper()
	out, _ := run(t, filepath.Dir(prog), tg.objdump, "-d", "--no-show-raw-insn", prog)
	mnem := map[uint64]string{}
	re := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(\S+)`)
	for _, line := range strings.Split(out, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			mnem[a] = m[2]
		}
	}
	for _, s := range l.Sites {
		if m := mnem[s.Off]; !strings.HasPrefix(m, "nop") {
			t.Errorf("objdump shows %q at site 0x%x (%s), want a NOP", m, s.Off, s.Func)
		}
	}
}

// TestOracle: gcc's own -mrecord-mcount table and ours list the same
// addresses, function for function, for the same program (PIE and not).
func TestOracle(t *testing.T) {
	t.Parallel()
	need(t, "gcc")
	for _, flags := range []string{"-pg -mfentry", "-pg", "-pg -mfentry -fcf-protection"} {
		for _, pie := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/%s", slug(flags), picFlag(pie)), func(t *testing.T) {
				t.Parallel()
				gccDir, ourDir := t.TempDir(), t.TempDir()
				gccProg, _ := link(t, x86GCC, gccDir, "prog", build(t, x86GCC, gccDir, flags+" -mrecord-mcount", pie), pie, "bfd", true)
				objs := build(t, x86GCC, ourDir, flags, pie)
				run(t, ourDir, append([]string{tool("recordmcount")}, objs...)...)
				ourProg, _ := link(t, x86GCC, ourDir, "prog", objs, pie, "bfd", true)
				gcc, ours := linkedSites(t, gccProg), linkedSites(t, ourProg)
				if len(ours) < 5 {
					t.Fatalf("only %d sites", len(ours))
				}
				if strings.Join(gcc, "\n") != strings.Join(ours, "\n") {
					t.Errorf("gcc's table:\n%s\nours:\n%s", strings.Join(gcc, "\n"), strings.Join(ours, "\n"))
				}
			})
		}
	}
}

func linkedSites(t *testing.T, prog string) []string {
	t.Helper()
	_, l := sitetest.Linked(t, prog)
	var out []string
	for _, s := range l.Sites {
		out = append(out, fmt.Sprintf("0x%x %s+0x%x", s.Off, s.Func, s.FuncOff))
	}
	return out
}
