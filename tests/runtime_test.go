package tests

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
	"ftpatch/internal/sitetest"
	"ftpatch/model"
	ftrt "ftpatch/runtime"
	"ftpatch/symbols"
	"ftpatch/trace"
)

// runtimes are the runtime's archives, one per architecture, each built
// once for the whole test run.
var runtimes = map[string]*struct {
	once sync.Once
	lib  string
	err  error
}{"x86_64": {}, "arm64": {}}

// runtimeArchive builds x86-64's libftrt.a once for the whole test run.
func runtimeArchive(t *testing.T) string {
	t.Helper()
	return runtimeArchiveFor(t, "x86_64")
}

// runtimeArchiveFor builds the runtime's archive for the architecture
// arch ("x86_64" or "arm64", as a target names it) once for the whole
// test run, with that architecture's compiler.
func runtimeArchiveFor(t *testing.T, name string) string {
	t.Helper()
	r, ok := runtimes[name]
	if !ok {
		t.Fatalf("no runtime for architecture %q", name)
	}
	r.once.Do(func() {
		a, err := arch.Parse(name)
		if err != nil {
			r.err = err
			return
		}
		r.lib, r.err = ftrt.Build(context.Background(), ftrt.Options{Dir: filepath.Join(toolDir, "ftrt", name), Arch: a})
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.lib
}

var (
	ftrtLine      = regexp.MustCompile(`ftrt: (\d+) sites: (\d+) patched to NOPs, (\d+) NOPs already, (\d+) skipped, (\d+) failed; (\d+) empty and (\d+) duplicate`)
	sitecheckLine = regexp.MustCompile(`sitecheck: (\d+) sites, (\d+) nops, (\d+) other, (\d+) writable code mappings`)
)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestLoadTimeNops: a program linked with the runtime, run with nothing
// set, has every site turned into a NOP before main (checked from inside
// the process at exit), no writable code mapping, and the same output and
// exit status as the program built without instrumentation. A program
// whose sites are NOPs already (recordmcount --nop; arm64's patchable
// areas) is not written at all. On x86-64 and on arm64.
func TestLoadTimeNops(t *testing.T) {
	t.Parallel()
	type variant struct {
		flags string
		pie   bool
		rec   []string // recordmcount flags; nil: gcc writes the table itself
		nop   string   // FTRACE_NOP: force a NOP style (the fallbacks no x86-64 CPU needs)
		clean bool     // every site a NOP this CPU runs already: nothing written
	}
	variants := map[string][]variant{
		"x86_64": {
			{"-pg -mfentry", true, []string{}, "", false},
			{"-pg -mfentry", false, []string{}, "", false},
			{"-pg", true, []string{}, "", false},
			{"-fpatchable-function-entry=5", true, []string{}, "", false},
			{"-pg -mfentry -fcf-protection", true, []string{}, "", false},
			{"-pg -mfentry", true, []string{"--nop"}, "", true},
			{"-pg -mfentry -mrecord-mcount", false, nil, "", false},
			{"-pg -mfentry", true, []string{}, "k8", false},
			{"-pg -mfentry", true, []string{"--nop"}, "jmp", false},
		},
		// arm64's patchable areas are one NOP per instruction as the
		// compiler leaves them: a program built so writes no code page
		// when run untraced.
		"arm64": {
			{"-fpatchable-function-entry=2", true, []string{}, "", true},
			{"-fpatchable-function-entry=4,2 -falign-functions=8 -mbranch-protection=standard", true, []string{}, "", true},
			{"-fpatchable-function-entry=4,2", false, []string{}, "", true},
			{"-pg", true, []string{}, "", false},
			{"-pg -mbranch-protection=standard", false, []string{}, "", false},
			{"-pg", true, []string{"--nop"}, "", true},
		},
	}
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		prefix := ""
		if tg.arch != "x86_64" {
			prefix = tg.arch + "/"
		}
		for _, b := range variants[tg.arch] {
			if b.rec == nil && tg.name != "gcc" {
				continue
			}
			name := fmt.Sprintf("%s%s/%s/%s/%s", prefix, tg.name, slug(b.flags+" "+strings.Join(b.rec, " ")), picFlag(b.pie), "nop_"+b.nop)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				lib := runtimeArchiveFor(t, tg.arch)
				dir := t.TempDir()
				_, wantOut, wantCode := plainRun(t, tg, b.pie, "bfd")

				objs := build(t, tg, dir, b.flags, b.pie)
				if b.rec != nil {
					run(t, dir, append(append([]string{tool("recordmcount")}, b.rec...), objs...)...)
				}
				check := progPath(t, "sitecheck.c")
				prog := filepath.Join(dir, "prog")
				argv := append(append([]string{}, tg.link...), "-o", prog, picLink(b.pie))
				argv = append(append(append(argv, objs...), check), ftrt.LinkFlags(lib)...)
				run(t, dir, argv...)

				_, l := sitetest.Linked(t, prog)
				live := len(l.Sites) + len(l.Dead)

				out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE_DEBUG=1", "FTRACE_NOP=" + b.nop}, tg.on(prog)...)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, "", out, code, wantOut, wantCode)
				m := ftrtLine.FindStringSubmatch(errOut)
				c := sitecheckLine.FindStringSubmatch(errOut)
				if m == nil || c == nil {
					t.Fatalf("no report from the runtime or the checker in stderr:\n%s", errOut)
				}
				total, patched, already, skipped, failed := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4]), atoi(m[5])
				if total != live || patched+already != live || skipped != 0 || failed != 0 {
					t.Errorf("runtime: %s; the table lists %d sites (%d in live functions, %d dead)", m[0], live, len(l.Sites), len(l.Dead))
				}
				if b.clean && (patched != 0 || !strings.Contains(errOut, " 0 code pages written;")) {
					t.Errorf("a program whose sites are NOPs already had %d sites written at load; want none: %s", patched, m[0])
				}
				if atoi(c[1]) != live || atoi(c[2]) != live || atoi(c[3]) != 0 || atoi(c[4]) != 0 {
					t.Errorf("checker: %s; want %d sites, all NOPs, no writable code", c[0], live)
				}
				if b.nop != "" {
					// A forced fallback: every site rewritten to it, even
					// those --nop made P6 NOPs, and tracing still works.
					if !strings.Contains(errOut, " "+b.nop+" NOPs;") || patched != live {
						t.Errorf("FTRACE_NOP=%s: %s", b.nop, m[0])
					}
					got, _, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_NOP=" + b.nop, "FTRACE_OUT=" + filepath.Join(dir, "t")}, tg.on(prog)...)
					if err != nil || got != wantOut || code != wantCode {
						t.Errorf("traced from %s NOPs: exit %d, %v, output\n%s", b.nop, code, err, got)
					}
				}
			})
		}
	}
}

func picLink(pie bool) string {
	if pie {
		return "-pie"
	}
	return "-no-pie"
}

// TestLoadTimeOddSites: the sites of progs/oddsites.S, whose table is
// written by hand (see there), each checked from inside the process
// (trampdump.c) and decoded with x/arch: with nothing set and with
// FTRACE=function, unexpected bytes are skipped and counted and never
// written; a site one byte into another is judged by what the write of
// the first left there; a site across a page boundary is written whole;
// a NOP first in the table and unexpected bytes last are counted without
// bounding the pages made writable; the counts are exact and no mapping
// is left writable and executable. The same again with oddtable.S
// linked after, which makes the table one to copy, sort and de-duplicate
// rather than read where it is.
func TestLoadTimeOddSites(t *testing.T) {
	t.Parallel()
	for _, table := range []struct {
		name        string
		srcs        []string
		empty, dups int
	}{
		{"clean", []string{"oddsites.c", "oddsites.S", "trampdump.c"}, 0, 0},
		{"copied", []string{"oddsites.c", "oddsites.S", "oddtable.S", "trampdump.c"}, 1, 1},
	} {
		t.Run(table.name, func(t *testing.T) {
			t.Parallel()
			need(t, x86GCC.tools...)
			dir := t.TempDir()
			objs := buildSrc(t, x86GCC, dir, "", false, table.srcs...)
			prog := filepath.Join(dir, "prog")
			run(t, dir, append(append([]string{"gcc", "-o", prog, "-no-pie"}, objs...), ftrt.LinkFlags(runtimeArchive(t))...)...)
			checkOddSites(t, dir, prog, table.empty, table.dups)
		})
	}
}

// heldSites reads what trampdump.c printed on stderr: the bytes each
// site holds at exit, by address. A mapping writable and executable is an
// error of the test.
func heldSites(t *testing.T, stderr string) map[uint64][]byte {
	t.Helper()
	held := map[uint64][]byte{}
	for _, line := range strings.Split(stderr, "\n") {
		fs := strings.Fields(line)
		if len(fs) == 2 && fs[0] == "wx" && fs[1] != "0" {
			t.Errorf("%s mappings writable and executable", fs[1])
		}
		if len(fs) != 3 || fs[0] != "site" {
			continue
		}
		a, err := strconv.ParseUint(fs[1], 0, 64)
		b, err2 := hex.DecodeString(fs[2])
		if err != nil || err2 != nil {
			t.Fatalf("trampdump: %q", line)
		}
		held[a] = b
	}
	return held
}

// checkOddSites runs TestLoadTimeOddSites's program with nothing set and
// with FTRACE=function; the table holds empty zero words and dups
// repeated entries.
func checkOddSites(t *testing.T, dir, prog string, empty, dups int) {
	t.Helper()
	f := sitetest.Open(t, prog)
	addr := sitetest.Symbols(t, f)

	// What a site must hold: an instruction of len bytes, and for a
	// call, its target.
	type want struct {
		site   string // symbol, +1 for the bogus entry
		op     x86asm.Op
		len    int
		target string
	}
	for _, c := range []struct {
		name                                       string
		env                                        []string
		patched, already, skipped, failed, enabled int
		sites                                      []want
	}{
		{"nothing set", nil, 3, 2, 2, 0, 0, []want{
			{"odd_nop", x86asm.NOP, 5, ""},
			{"odd_call", x86asm.NOP, 5, ""},
			{"odd_call6", x86asm.NOP, 6, ""},
			{"odd_call6+1", x86asm.NOP, 5, ""}, // the tail of odd_call6's NOP
			{"odd_span", x86asm.NOP, 5, ""},
			{"odd_other", x86asm.CALL, 5, "odd_call"},
			{"odd_mov", x86asm.MOV, 5, ""},
		}},
		{"FTRACE=function", []string{"FTRACE=function", "FTRACE_OUT=" + filepath.Join(dir, "t")}, 0, 0, 3, 0, 4, []want{
			{"odd_nop", x86asm.CALL, 5, "ftrace_caller5"},
			{"odd_call", x86asm.CALL, 5, "ftrace_caller5"},
			{"odd_call6", x86asm.CALL, 6, "ftrace_caller6"},
			{"odd_call6+1", x86asm.CALL, 5, "ftrace_caller6"}, // the tail of odd_call6's call: not ours at 5 bytes
			{"odd_span", x86asm.CALL, 5, "ftrace_caller5"},
			{"odd_other", x86asm.CALL, 5, "odd_call"},
			{"odd_mov", x86asm.MOV, 5, ""},
		}},
	} {
		t.Run(slug(c.name), func(t *testing.T) {
			out, errOut, code, err := runStatusEnv(dir, append([]string{"FTRACE_DEBUG=1"}, c.env...), prog)
			if err != nil || code != 0 || out != "1 2 6 3 4 5\n" {
				t.Fatalf("exit %d, %v, output %q; want 1 2 6 3 4 5\n%s", code, err, out, errOut)
			}
			m, p := ftrtLine.FindStringSubmatch(errOut), pageLine.FindStringSubmatch(errOut)
			if m == nil || p == nil {
				t.Fatalf("no report from the runtime:\n%s", errOut)
			}
			if atoi(m[1]) != 7 || atoi(m[2]) != c.patched || atoi(m[3]) != c.already || atoi(m[4]) != c.skipped || atoi(m[5]) != c.failed || atoi(m[6]) != empty || atoi(m[7]) != dups || atoi(p[1]) != c.enabled {
				t.Errorf("runtime: %s; %s traced\nwant 7 sites: %d patched, %d NOPs already, %d skipped, %d failed; %d empty and %d duplicate; %d traced", m[0], p[1], c.patched, c.already, c.skipped, c.failed, empty, dups, c.enabled)
			}
			held := heldSites(t, errOut)
			if len(held) != len(c.sites) {
				t.Fatalf("trampdump reported %d sites, want %d:\n%s", len(held), len(c.sites), errOut)
			}
			for _, w := range c.sites {
				at := addr[strings.TrimSuffix(w.site, "+1")]
				if strings.HasSuffix(w.site, "+1") {
					at++
				}
				b, ok := held[at]
				if !ok || at == 0 {
					t.Errorf("%s: no site reported at %#x", w.site, at)
					continue
				}
				in, err := x86asm.Decode(b, 64)
				if err != nil || in.Op != w.op || in.Len != w.len {
					t.Errorf("%s: holds %v (% x), %v; want a %d-byte %v", w.site, in, b, err, w.len, w.op)
					continue
				}
				if w.target == "" {
					continue
				}
				rel, ok := in.Args[0].(x86asm.Rel)
				if got := at + uint64(in.Len) + uint64(int64(rel)); !ok || got != addr[w.target] {
					t.Errorf("%s: %v calls %#x, want %s at %#x", w.site, in, got, w.target, addr[w.target])
				}
			}
		})
	}

	// The trace holds the calls of the functions enabled, and says how
	// many sites were skipped.
	tr, err := trace.Read(filepath.Join(dir, "t"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Meta.Enabled != 4 || tr.Meta.Skipped != 3 {
		t.Errorf("trace metadata: %d enabled, %d skipped; want 4 and 3", tr.Meta.Enabled, tr.Meta.Skipped)
	}
	tsyms, err := symbols.Load(tr.Meta.Exe, tr.Meta.BuildID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range model.Counts(model.Events(tr, tsyms)) {
		got[c.Func] = c.Calls
	}
	if fmt.Sprint(got) != fmt.Sprint(map[string]int{"odd_call": 2, "odd_call6": 1, "odd_nop": 1, "odd_span": 1}) {
		t.Errorf("traced %v; want odd_call twice (once from odd_other), odd_nop, odd_call6 and odd_span once", got)
	}
}

// TestLoadTimeSymbols: the sites of progs/symsites.S, one per rule by
// which the load-time pass tells what a site is (runtime/src/patch/patch.c's
// choose, runtime/src/core/symbols.c): a call of __fentry__ at the entry,
// after an endbr64, after a patchable area's NOPs, after a nested
// function's push %r10 (a chain site, three forms), and in code no
// symbol covers, which need no symbol table when nothing is filtered;
// -pg calls of mcount after a prologue, one in a function that holds a
// zero-size function symbol before the site, which need the table. Under
// each tracer and filter, and in a stripped copy, every site's bytes are
// decoded with x/arch: enabled sites call (or, for function_graph at an
// entry, jump to) the right trampoline, a chain site its own under both
// tracers, the rest hold NOPs; the program's output is unchanged (a
// chain site's static chain intact) and the trace's counts name the
// right functions, called from main.
func TestLoadTimeSymbols(t *testing.T) {
	t.Parallel()
	need(t, x86GCC.tools...)
	dir := t.TempDir()
	objs := buildSrc(t, x86GCC, dir, "", false, "symsites.c", "symsites.S", "trampdump.c")
	prog := filepath.Join(dir, "prog")
	run(t, dir, append(append([]string{"gcc", "-o", prog, "-no-pie"}, objs...), ftrt.LinkFlags(runtimeArchive(t))...)...)
	stripped := filepath.Join(dir, "stripped")
	run(t, dir, "strip", "-o", stripped, prog)
	f := sitetest.Open(t, prog)
	addr := sitetest.Symbols(t, f)
	// The sites, by function: where each is, and what it becomes when
	// enabled ("" for the jump to a trampoline of its own). The one in
	// no function is found as the site that is none of these.
	type site struct {
		fn     string
		at     uint64
		caller string
		len    int
	}
	const nameless = "(no function)"
	named := []site{
		{"sym_entry", addr["sym_entry"], "ftrace_caller5", 5},
		{"sym_endbr", addr["sym_endbr"] + 4, "ftrace_caller5", 5},
		{"sym_pg", addr["sym_pg"] + 4, "ftrace_mcount_caller5", 5},
		{"sym_outer", addr["sym_outer"] + 5, "ftrace_mcount_caller5", 5},
		{"sym_area", addr["sym_area"] + 5, "ftrace_caller5", 5},
		{"sym_area_endbr", addr["sym_area_endbr"] + 9, "ftrace_caller5", 5},
		{"sym_chain", addr["sym_chain"] + 2, "ftrace_chain_caller5", 5},
		{"sym_chain_endbr", addr["sym_chain_endbr"] + 6, "ftrace_chain_caller5", 5},
		{"sym_chain6", addr["sym_chain6"] + 2, "ftrace_chain_caller6", 6},
	}
	fentry := []string{"sym_entry", "sym_endbr", "sym_area", "sym_area_endbr", "sym_chain", "sym_chain_endbr", "sym_chain6"}
	all := append([]string{"sym_pg", "sym_outer", nameless}, fentry...)
	const output = "1 2 3 4 5 6 7 8 9\n"
	for _, c := range []struct {
		name    string
		prog    string
		env     []string
		enabled []string // the sites enabled, by function
		warning string   // on stderr
	}{
		{"function", prog, []string{"FTRACE=function"}, all, ""},
		{"function_graph", prog, []string{"FTRACE=function_graph"}, all, ""},
		{"filter sym_outer", prog, []string{"FTRACE=function", "FTRACE_FILTER=sym_outer"}, []string{"sym_outer"}, ""},
		{"filter not sym_pg", prog, []string{"FTRACE=function_graph", "FTRACE_FILTER=!sym_pg"}, append([]string{"sym_outer"}, fentry...), ""},
		{"filter sym_label", prog, []string{"FTRACE=function", "FTRACE_FILTER=sym_label"}, nil, ""},
		{"filter sym_chain*", prog, []string{"FTRACE=function_graph", "FTRACE_FILTER=sym_chain*"}, []string{"sym_chain", "sym_chain_endbr", "sym_chain6"}, ""},
		{"filter sym_area*", prog, []string{"FTRACE=function", "FTRACE_FILTER=sym_area*"}, []string{"sym_area", "sym_area_endbr"}, ""},
		{"stripped", stripped, []string{"FTRACE=function_graph"}, append([]string{nameless}, fentry...),
			"cannot read the symbol table of the program (stripped?); tracing only its sites that call __fentry__"},
		{"stripped function", stripped, []string{"FTRACE=function"}, append([]string{nameless}, fentry...),
			"cannot read the symbol table of the program (stripped?); tracing only its sites that call __fentry__"},
		{"stripped filter", stripped, []string{"FTRACE=function", "FTRACE_FILTER=sym_*"}, nil,
			"cannot read the symbol table of the program (stripped?); tracing none of it"},
	} {
		t.Run(slug(c.name), func(t *testing.T) {
			out := filepath.Join(dir, "t-"+slug(c.name))
			stdout, errOut, code, err := runStatusEnv(dir, append([]string{"FTRACE_OUT=" + out}, c.env...), c.prog)
			if err != nil || code != 0 || stdout != output {
				t.Fatalf("exit %d, %v, output %q; want %q\n%s", code, err, stdout, output, errOut)
			}
			if (c.warning == "") != !strings.Contains(errOut, "ftrt:") || !strings.Contains(errOut, c.warning) {
				t.Errorf("stderr:\n%s\nwant %q", errOut, c.warning)
			}
			held := heldSites(t, errOut)
			if len(held) != len(named)+1 {
				t.Fatalf("trampdump reported %d sites, want %d:\n%s", len(held), len(named)+1, errOut)
			}
			for at, b := range held {
				in, err := x86asm.Decode(b, 64)
				if err != nil {
					t.Errorf("site %#x: % x: %v", at, b, err)
					continue
				}
				s := site{nameless, at, "ftrace_caller5", 5}
				for _, n := range named {
					if n.at == at {
						s = n
					}
				}
				if !slices.Contains(c.enabled, s.fn) {
					if in.Op != x86asm.NOP || in.Len != s.len {
						t.Errorf("%s: site %#x holds %v (% x); want a %d-byte NOP", s.fn, at, in, b, s.len)
					}
					continue
				}
				op, target, n := x86asm.CALL, s.caller, s.len
				if c.env[0] == "FTRACE=function_graph" && s.caller == "ftrace_caller5" {
					op, target = x86asm.JMP, "" // to the site's own trampoline
				}
				if s.len == 6 && (b[0] != 0x67 || b[1] != 0xe8) {
					t.Errorf("%s: site %#x holds % x; want addr32 call (67 e8)", s.fn, at, b[:6])
				}
				rel, ok := in.Args[0].(x86asm.Rel)
				if in.Op != op || in.Len != n || !ok {
					t.Errorf("%s: site %#x holds %v (% x); want a %d-byte %v", s.fn, at, in, b, n, op)
				} else if got := at + uint64(n) + uint64(int64(rel)); target != "" && got != addr[target] {
					t.Errorf("%s: site %#x: %v reaches %#x; want %s at %#x", s.fn, at, in, got, target, addr[target])
				}
			}
			// The calls, named from the unstripped program; the nameless
			// code is never run.
			want := map[string]int{}
			for _, fn := range c.enabled {
				if fn != nameless {
					want[fn] = 1
				}
			}
			got := map[string]int{}
			if len(c.enabled) > 0 {
				tr, err := trace.Read(out)
				if err != nil {
					t.Fatal(err)
				}
				syms, warns, err := symbols.LoadProcess(&tr.Meta, prog)
				if err != nil || len(warns) > 0 {
					t.Fatal(err, warns)
				}
				events := model.Events(tr, syms)
				for _, cnt := range model.Counts(events) {
					got[cnt.Func] = cnt.Calls
				}
				// function records the caller: every function is called
				// from main (the chain sites through sym_chain_call, which
				// jumps). A trampoline that took the word on top of a
				// chain site's stack for the return address would name
				// the saved static chain.
				for _, e := range events {
					if c.env[0] == "FTRACE=function" && !strings.HasPrefix(e.Caller, "main+") {
						t.Errorf("%s called from %s, want main", e.Func, e.Caller)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("traced %v; want %v", got, want)
			}
		})
	}
}
