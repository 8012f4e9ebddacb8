package tests

import (
	"encoding/binary"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"

	"ftpatch/elfx"
	"ftpatch/internal/sitetest"
	"ftpatch/isa/arm64"
	"ftpatch/model"
	ftrt "ftpatch/runtime"
)

// literalLine is the load-time report's count of sites enabled through
// their literal, and of those with a misaligned slot.
var literalLine = regexp.MustCompile(`; (\d+) through their literal, (\d+) with a misaligned one`)

// TestLoadTimeOddSitesARM64: the sites of progs/oddarm64.S, whose site
// table and list of patchable areas are written by hand (see there),
// read from inside the process (oddarm64.c) and decoded with x/arch,
// with nothing set, with FTRACE=function, and traced with the patchable
// areas left disabled (each then `mov x9, x30; nop`, so that enabling
// it is one store; nothing is written in a run not traced): a site is a
// literal's only where the compiler's list says its slot is, 8-byte
// aligned; NOPs before
// a function that are not listed are never written, nor is a slot that
// is not aligned (that function takes ftrace_caller, counted); an entry
// that is not 4-byte aligned, a call of no hook and other instructions
// are skipped, counted, never written; the counts are exact and no
// mapping is left writable and executable.
func TestLoadTimeOddSitesARM64(t *testing.T) {
	t.Parallel()
	tg := a64GCC
	dir := t.TempDir()
	prog := linkHandTables(t, tg, dir, "oddarm64.S", "oddarm64.c")
	f := sitetest.Open(t, prog)
	addr := sitetest.Symbols(t, f)
	name := map[uint64]string{}
	for n, a := range addr {
		name[a] = n
	}
	// The words at a site as x/arch decodes them (GNU syntax), a bl as
	// "bl SYMBOL".
	words := func(b []byte, at uint64) []string {
		var out []string
		for i := 0; i < len(b); i += 4 {
			in, err := arm64.Decode(b[i:])
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("%08x", binary.LittleEndian.Uint32(b[i:])))
			case in.Op == arm64asm.BL:
				out = append(out, "bl "+name[at+uint64(i)+uint64(int64(in.Args[0].(arm64asm.PCRel)))])
			default:
				out = append(out, strings.TrimSpace(arm64asm.GNUSyntax(in)))
			}
		}
		return out
	}
	const nop = "nop"
	const enter = "mov x9, x30"
	// What the 16 bytes around each site hold (8 before it, 8 from it),
	// by the site's symbol and offset.
	type site struct {
		fn   string
		off  uint64
		want [4]string // "" for a word unchanged from the file; "=SYMBOL", "=": a literal holding SYMBOL's address
	}
	for _, c := range []struct {
		name                                       string
		env                                        []string
		patched, already, skipped, failed, enabled int
		literal, misaligned                        int
		sites                                      []site
		traced                                     map[string]int
	}{
		{"nothing set", nil, 1, 4, 3, 0, 0, 0, 0, []site{
			{"odd_nop", 12, [4]string{"", "", nop, ""}},
			{"odd_call", 12, [4]string{"", "", nop, ""}},
			{"odd_area", 0, [4]string{nop, nop, nop, nop}},
			{"odd_literal", 0, [4]string{nop, nop, nop, nop}},
			{"odd_skew", 0, [4]string{nop, nop, nop, nop}},
			{"odd_half", 6, [4]string{"", "", "", ""}},
			{"odd_other", 12, [4]string{"", "", "bl odd_leaf", ""}},
			{"odd_mov", 0, [4]string{"", "", "", ""}},
		}, nil},
		{"FTRACE=function", []string{"FTRACE=function", "FTRACE_OUT=" + filepath.Join(dir, "t")}, 0, 0, 3, 0, 5, 1, 1, []site{
			{"odd_nop", 12, [4]string{"", "", "bl ftrace_mcount_caller", ""}},
			{"odd_call", 12, [4]string{"", "", "bl ftrace_mcount_caller", ""}},
			{"odd_area", 0, [4]string{nop, nop, enter, "bl ftrace_caller"}}, // the padding before it untouched
			{"odd_literal", 0, [4]string{"=ftrt_ops_function", "=", enter, "bl ftrace_ops_caller"}},
			{"odd_skew", 0, [4]string{nop, nop, enter, "bl ftrace_caller"}}, // its slot untouched
			{"odd_half", 6, [4]string{"", "", "", ""}},
			{"odd_other", 12, [4]string{"", "", "bl odd_leaf", ""}},
			{"odd_mov", 0, [4]string{"", "", "", ""}},
		}, map[string]int{"odd_nop": 1, "odd_call": 1, "odd_area": 1, "odd_literal": 1, "odd_skew": 1}},
		// Traced, with the patchable areas left disabled: each becomes
		// mov x9, x30; nop, so that enabling it is one store; no
		// literal is written.
		{"filtered", []string{"FTRACE=function", "FTRACE_FILTER=odd_call", "FTRACE_OUT=" + filepath.Join(dir, "t-filtered")}, 3, 1, 3, 0, 1, 0, 0, []site{
			{"odd_nop", 12, [4]string{"", "", nop, ""}},
			{"odd_call", 12, [4]string{"", "", "bl ftrace_mcount_caller", ""}},
			{"odd_area", 0, [4]string{nop, nop, enter, nop}},
			{"odd_literal", 0, [4]string{nop, nop, enter, nop}},
			{"odd_skew", 0, [4]string{nop, nop, enter, nop}},
			{"odd_half", 6, [4]string{"", "", "", ""}},
			{"odd_other", 12, [4]string{"", "", "bl odd_leaf", ""}},
			{"odd_mov", 0, [4]string{"", "", "", ""}},
		}, map[string]int{"odd_call": 1}},
	} {
		t.Run(slug(c.name), func(t *testing.T) {
			out, errOut, code, err := runStatusEnv(dir, append([]string{"FTRACE_DEBUG=1"}, c.env...), tg.on(prog)...)
			if err != nil || code != 0 || out != "1 2 3 4 5 6 7 8\n" {
				t.Fatalf("exit %d, %v, output %q; want 1 2 3 4 5 6 7 8\n%s", code, err, out, errOut)
			}
			m, p, l := ftrtLine.FindStringSubmatch(errOut), pageLine.FindStringSubmatch(errOut), literalLine.FindStringSubmatch(errOut)
			if m == nil || p == nil || l == nil {
				t.Fatalf("no report from the runtime:\n%s", errOut)
			}
			if atoi(m[1]) != 8 || atoi(m[2]) != c.patched || atoi(m[3]) != c.already || atoi(m[4]) != c.skipped || atoi(m[5]) != c.failed || atoi(p[1]) != c.enabled || atoi(l[1]) != c.literal || atoi(l[2]) != c.misaligned {
				t.Errorf("runtime: %s; %s traced; %s\nwant 8 sites: %d patched, %d NOPs already, %d skipped, %d failed; %d traced; %d through their literal, %d misaligned",
					m[0], p[1], l[0], c.patched, c.already, c.skipped, c.failed, c.enabled, c.literal, c.misaligned)
			}
			held := heldSites(t, errOut)
			if len(held) != len(c.sites) {
				t.Fatalf("the program reported %d sites, want %d:\n%s", len(held), len(c.sites), errOut)
			}
			for _, s := range c.sites {
				at := addr[s.fn] + s.off
				b, ok := held[at]
				if !ok || addr[s.fn] == 0 || len(b) != 16 {
					t.Fatalf("%s+%d: no site reported at %#x", s.fn, s.off, at)
				}
				file, err := f.ReadAt(elfx.Addr(at-8), 16)
				if err != nil {
					t.Fatal(err)
				}
				got, orig := words(b, at-8), words(file, at-8)
				for i, w := range s.want {
					switch {
					case w == "" && got[i] != orig[i]:
						t.Errorf("%s+%d, word %d: %s, want it unchanged (%s)", s.fn, s.off, i-2, got[i], orig[i])
					case w == "=":
					case strings.HasPrefix(w, "="):
						lit := binary.LittleEndian.Uint64(b[:8])
						if name[lit] != w[1:] {
							t.Errorf("%s+%d: the literal holds %#x (%s), want %s", s.fn, s.off, lit, name[lit], w[1:])
						}
					case w != "" && got[i] != w:
						t.Errorf("%s+%d, word %d: %s, want %s", s.fn, s.off, i-2, got[i], w)
					}
				}
			}
			if c.traced != nil {
				want := c.traced
				tr, syms := readTrace(t, strings.TrimPrefix(c.env[len(c.env)-1], "FTRACE_OUT=")) // skipped sites are this test's point: not traceCounts
				got := map[string]int{}
				for _, c := range model.Counts(model.Events(tr, syms)) {
					got[c.Func] = c.Calls
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("traced %v, want %v", got, want)
				}
			}
		})
	}
}

// TestPrologueStraddlesPageARM64: a -pg function whose prologue begins
// on one page and ends on the next (progs/straddle.S) is graphed whole:
// the tracer reads its prologue across the page boundary, knowing from
// the module's executable segment that the page before is there (qemu-
// user, which runs this, has no process_vm_readv to ask). Each call has
// its return; under FTRACE_GRAPH_NOTRACE=straddle, nothing it calls is
// recorded.
func TestPrologueStraddlesPageARM64(t *testing.T) {
	t.Parallel()
	tg := a64GCC
	dir := t.TempDir()
	prog := linkHandTables(t, tg, dir, "straddle.S", "straddle.c")
	if a := sitetest.Symbols(t, sitetest.Open(t, prog))["straddle"]; a&0xfff != 0xff8 {
		t.Fatalf("straddle at %#x; want its prologue across a page boundary (at 0x...ff8)", a)
	}
	for _, tc := range []struct {
		name string
		env  []string
		want map[string]int
	}{
		{"graph", nil, map[string]int{"straddle": 3, "straddle_leaf": 3}},
		{"notrace", []string{"FTRACE_GRAPH_NOTRACE=straddle"}, map[string]int{}},
	} {
		out := filepath.Join(dir, tc.name)
		env := append([]string{"FTRACE=function_graph", "FTRACE_OUT=" + out}, tc.env...)
		got, stderr, code, err := runStatusEnv(dir, env, tg.on(prog)...)
		if err != nil || code != 0 || got != "126\n" {
			t.Fatalf("%s: exit %d, %v, output %q\n%s", tc.name, code, err, got, stderr)
		}
		tr, syms := readTrace(t, out)
		calls, stats := tracedCalls(t, tr, syms, "function_graph")
		delete(calls, "main")
		if !maps.Equal(calls, tc.want) {
			t.Errorf("%s: traced %v, want %v", tc.name, calls, tc.want)
		}
		for _, s := range stats {
			if s.Untimed != 0 || s.Open != 0 {
				t.Errorf("%s: %s: %d calls without their return, %d open; want every call whole", tc.name, s.Func, s.Untimed, s.Open)
			}
		}
	}
}

// linkHandTables builds srcs of progs/ (assembler whose site tables are
// written by hand, and C built without sites) into dir/prog, linked at
// a fixed address with the runtime, and returns its path.
func linkHandTables(t *testing.T, tg target, dir string, srcs ...string) string {
	t.Helper()
	need(t, tg.tools...)
	objs := buildSrc(t, tg, dir, "", false, srcs...)
	prog := filepath.Join(dir, "prog")
	run(t, dir, append(append(append(append([]string{}, tg.link...), "-o", prog, "-no-pie"), objs...), ftrt.LinkFlags(runtimeArchiveFor(t, tg.arch))...)...)
	return prog
}
