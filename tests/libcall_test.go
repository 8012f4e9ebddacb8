package tests

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/internal/sitetest"
	"ftpatch/isa/x86"
	"ftpatch/model"
	"ftpatch/runtime/abi"
	"ftpatch/symbols"
)

// libcallBuilds are the ways a program calls a shared object's function
// that the library-call hooks must redirect: through the PLT with lazy
// binding (a slot not bound yet, whose function the runtime looks up),
// bound at start with RELRO (a slot the runtime writes through its code
// writer), in a program that is not PIE, and through the GOT with
// -fno-plt (GLOB_DAT slots).
var libcallBuilds = []struct {
	name, flags string
	pie         bool
	link        []string
}{
	{"lazy", "-O2 -pg -mfentry", true, nil},
	{"now-relro", "-O2 -pg -mfentry", true, []string{"-Wl,-z,now,-z,relro"}},
	{"no-pie", "-O2 -pg -mfentry", false, nil},
	{"fno-plt", "-O2 -pg -mfentry -fno-plt", true, []string{"-Wl,-z,now,-z,relro"}},
}

// TestLibCalls: with FTRACE_LIBCALL=1, a program's calls into the C
// library (progs/libcall.c: strlen 5 times, getpid twice, qsort with a
// traced comparator, malloc and free 3 times each, printf once) are in
// its trace with exact counts under both tracers, named by their GOT
// slots; under function_graph each lies in the function that made it,
// and the comparator's calls in qsort's; the program's output and exit
// status are untraced's; the runtime's own calls of the C library are
// not the program's. FTRACE_FILTER chooses library functions by name as
// it chooses the program's; ftpatch record traces them by default, and
// not with --no-libcall; without FTRACE_LIBCALL, no library call is
// traced. x86-64 and arm64 (under qemu), gcc and clang, every build of
// libcallBuilds.
func TestLibCalls(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		for _, b := range libcallBuilds {
			flags := b.flags
			if tg.arch == "arm64" {
				flags = strings.Replace(flags, "-pg -mfentry", preferred["arm64"], 1)
			}
			t.Run(tg.arch+"/"+tg.name+"/"+b.name, func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				objs := buildSrc(t, tg, dir, flags, b.pie, "libcall.c")
				prog := linkRecordedOn(t, tg, dir, objs, append([]string{picLink(b.pie)}, b.link...)...)
				wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
				if err != nil || wantCode != 0 {
					t.Fatalf("untraced: exit %d, %v", wantCode, err)
				}
				m := regexp.MustCompile(`cmp (\d+)`).FindStringSubmatch(wantOut)
				if m == nil {
					t.Fatalf("no comparator count in %q", wantOut)
				}
				cmps, _ := strconv.Atoi(m[1])
				want := map[string]int{"main": 1, "work": 1, "cmp": cmps, "strlen": 5, "getpid": 2, "qsort": 1, "malloc": 3, "free": 3, "printf": 1}
				for _, tracer := range []string{"function", "function_graph"} {
					out := runLibcalls(t, tg, dir, tracer, tracer, wantOut, wantCode, prog)
					counts, errOut := reportCounts(t, out)
					// arm64: libgcc's outline atomics, linked into the
					// program, ask __getauxval from a constructor: a call
					// of the program's, made before main.
					if tg.arch == "arm64" && counts["__getauxval"] == 1 {
						delete(counts, "__getauxval")
					}
					if !maps.Equal(counts, want) || errOut != "" {
						t.Errorf("%s: report %v, stderr %q; want %v\n%s", tracer, counts, errOut, want, errOut)
					}
					if l := traceMeta(t, out).Libcalls; l.Hooked < 6 || l.Hooked > l.Slots || l.Unresolved != 0 || l.Failed != 0 {
						t.Errorf("%s: library calls in the metadata %+v; want the 6 functions' slots redirected at least, none failed", tracer, l)
					}
					checkLibraryRows(t, out, want)
					if tracer == "function_graph" {
						checkLibcallGraph(t, out, cmps)
						// --libname: each C library function by the
						// library its symbol's version names.
						named, _ := reportCounts(t, out, "--libname")
						for _, f := range []string{"strlen", "getpid", "qsort", "malloc", "free", "printf"} {
							if named[f+"@libc.so.6"] != want[f] {
								t.Errorf("report --libname: %v, want %s@libc.so.6 %d times", named, f, want[f])
							}
						}
					}
				}
				// By name, as the program's own functions: FTRACE_FILTER
				// chooses library functions too.
				out := filepath.Join(dir, "filter")
				if _, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_LIBCALL=1", "FTRACE_FILTER=malloc,fre?,cmp", "FTRACE_OUT=" + out}, tg.on(prog)...); err != nil || code != 0 {
					t.Fatalf("FTRACE_FILTER: exit %d, %v\n%s", code, err, errOut)
				}
				if counts, _ := reportCounts(t, out); !maps.Equal(counts, map[string]int{"malloc": 3, "free": 3, "cmp": cmps}) {
					t.Errorf("FTRACE_FILTER=malloc,fre?,cmp: report %v, want malloc and free 3 times and cmp %d", counts, cmps)
				}
				// The subtree filters (-F, -N) name library functions
				// as the program's: only qsort and the comparator it
				// calls; everything but them and printf.
				for _, c := range []struct {
					env  string
					want map[string]int
				}{
					{"FTRACE_GRAPH_FUNCS=qsort", map[string]int{"qsort": 1, "cmp": cmps}},
					{"FTRACE_GRAPH_NOTRACE=qsort,printf", map[string]int{"main": 1, "work": 1, "strlen": 5, "getpid": 2, "malloc": 3, "free": 3}},
				} {
					if b.name != "lazy" && b.name != "fno-plt" {
						break
					}
					out := filepath.Join(dir, "subtree")
					os.RemoveAll(out)
					if _, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_LIBCALL=1", c.env, "FTRACE_OUT=" + out}, tg.on(prog)...); err != nil || code != 0 {
						t.Fatalf("%s: exit %d, %v\n%s", c.env, code, err, errOut)
					}
					counts, _ := reportCounts(t, out)
					delete(counts, "__getauxval") // arm64's libgcc, as above
					if !maps.Equal(counts, c.want) {
						t.Errorf("%s: report %v, want %v", c.env, counts, c.want)
					}
				}
				// ftpatch record: on by default, off with --no-libcall
				// (x86-64: record runs the program itself, and this host
				// runs no arm64 program without qemu in front).
				for _, off := range []bool{false, true} {
					if tg.arch != "x86_64" {
						break
					}
					out := filepath.Join(dir, fmt.Sprint("record-", off))
					argv := []string{tool("ftpatch"), "record", "--tracer", "function", "-d", out}
					if off {
						argv = append(argv, "--no-libcall")
					}
					if _, errOut, code, err := runStatus(dir, append(argv, prog)...); err != nil || code != 0 {
						t.Fatalf("%v: exit %d, %v\n%s", argv, code, err, errOut)
					}
					counts, _ := reportCounts(t, out)
					delete(counts, "__getauxval") // arm64's libgcc, as above
					w := want
					if off {
						w = map[string]int{"main": 1, "work": 1, "cmp": cmps}
					}
					if !maps.Equal(counts, w) {
						t.Errorf("%v: report %v, want %v", argv, counts, w)
					}
				}
				// Off unless asked: the program's own calls alone.
				out = filepath.Join(dir, "off")
				if _, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_OUT=" + out}, tg.on(prog)...); err != nil || code != 0 {
					t.Fatalf("without FTRACE_LIBCALL: exit %d, %v\n%s", code, err, errOut)
				}
				if counts, _ := reportCounts(t, out); !maps.Equal(counts, map[string]int{"main": 1, "work": 1, "cmp": cmps}) {
					t.Errorf("without FTRACE_LIBCALL: report %v, want the program's functions alone", counts)
				}
			})
		}
	}
}

// checkLibraryRows checks that report marks the rows of library
// functions, and only those, in the trace in dir of progs/libcall.c,
// whose functions are want's keys.
func checkLibraryRows(t *testing.T, dir string, want map[string]int) {
	t.Helper()
	out, _ := run(t, filepath.Dir(dir), tool("ftpatch"), "report", dir)
	own := map[string]bool{"main": true, "work": true, "cmp": true}
	for f := range want {
		marked := regexp.MustCompile(`(?m)\s` + regexp.QuoteMeta(f) + ` \[lib\]$`).MatchString(out)
		plain := regexp.MustCompile(`(?m)\s` + regexp.QuoteMeta(f) + `$`).MatchString(out)
		if own[f] == marked || own[f] != plain {
			t.Errorf("report: %s marked %v, unmarked %v; want the library functions' rows alone marked [lib]\n%s", f, marked, plain, out)
		}
	}
}

// unwoundIn counts the calls of threads left without returning (a
// longjmp, an exception), by "CALLER > FUNCTION".
func unwoundIn(threads []model.Thread) map[string]int {
	return countCalls(threads, func(n *model.Node, caller string) bool { return n.Unwound })
}

// countCalls counts the calls of threads' graphs that keep chooses, by
// "CALLER > FUNCTION" ("" for a thread's first call).
func countCalls(threads []model.Thread, keep func(n *model.Node, caller string) bool) map[string]int {
	out := map[string]int{}
	var walk func(n *model.Node, caller string)
	walk = func(n *model.Node, caller string) {
		if keep(n, caller) {
			out[caller+" > "+n.Func]++
		}
		for _, c := range n.Children {
			walk(c, n.Func)
		}
	}
	for _, th := range threads {
		for _, n := range th.Roots {
			walk(n, "")
		}
	}
	return out
}

// runLibcalls runs prog (tg's, with args) under tracer with library
// calls traced, into dir/name, and checks its output and exit status
// are wantOut and wantCode: the trace's directory.
func runLibcalls(t *testing.T, tg target, dir, name, tracer, wantOut string, wantCode int, prog string, args ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_LIBCALL=1", "FTRACE_OUT=" + out}, tg.on(prog, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, name+" (stderr "+errOut+")", got, code, wantOut, wantCode)
	return out
}

// checkLibcallGraph checks the graph of progs/libcall.c: every call in
// its caller's time; work's children the library calls it made, qsort's
// the comparator's calls; printf main's.
func checkLibcallGraph(t *testing.T, dir string, cmps int) {
	t.Helper()
	_, threads := graphOf(t, dir)
	checkNesting(t, threads)
	var main *model.Node
	for _, th := range threads {
		for _, n := range th.Roots {
			if n.Func == "main" {
				main = n
			}
		}
	}
	if main == nil {
		t.Fatalf("%s: no call of main at the top", dir)
	}
	children := func(n *model.Node) map[string]int {
		c := map[string]int{}
		for _, k := range n.Children {
			c[k.Func]++
		}
		return c
	}
	if got := children(main); !maps.Equal(got, map[string]int{"work": 1, "printf": 1}) {
		t.Errorf("main's calls: %v, want work and printf", got)
	}
	for _, w := range main.Children {
		switch w.Func {
		case "work":
			if got := children(w); !maps.Equal(got, map[string]int{"strlen": 5, "getpid": 2, "qsort": 1, "malloc": 3, "free": 3}) {
				t.Errorf("work's calls: %v", got)
			}
			for _, q := range w.Children {
				if q.Func == "qsort" && !maps.Equal(children(q), map[string]int{"cmp": cmps}) {
					t.Errorf("qsort's calls: %v, want cmp %d times", children(q), cmps)
				}
			}
		}
	}
}

// TestLibCallStub: the stub a redirected GOT slot points at (through
// &getpid, which a PIE takes from the slot) decodes with x/arch to what
// arch/libstub.h draws, and the words at the end of its page, which the
// stub jumps through, hold the entry points: under function, on x86-64
// endbr64; mov $idx, %r11d; jmp *word(%rip), the page's last word
// ftrace_libcall; on arm64 (under qemu) bti c; movz and movk of w17
// (x/arch shows movz as mov); ldr x16 from the word; br x16. Under
// function_graph, x86-64's graph stub (decodeGraphStubX86: a graph
// trampoline entered from the slot, its function getpid itself); arm64's
// the same stub as under function.
func TestLibCallStub(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, a64GCC} {
		for _, tracer := range []string{"function", "function_graph"} {
			t.Run(tg.arch+"/"+tracer, func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				flags := "-O2 -pg -mfentry"
				if tg.arch == "arm64" {
					flags = "-O2 " + preferred["arm64"]
				}
				objs := buildSrc(t, tg, dir, flags, true, "libcall.c")
				prog := linkRecordedOn(t, tg, dir, objs, "-pie")
				out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_LIBCALL=1", "FTRACE_OUT=" + filepath.Join(dir, "t")}, tg.on(prog, "stub")...)
				if err != nil || code != 0 {
					t.Fatalf("exit %d, %v\n%s", code, err, errOut)
				}
				m := regexp.MustCompile(`stub 0x([0-9a-f]+)((?: [0-9a-f]{2}){80}) words 0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+) getpid 0x([0-9a-f]+)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no stub line in %q", out)
				}
				at, _ := strconv.ParseUint(m[1], 16, 64)
				code80, err := hex.DecodeString(strings.ReplaceAll(m[2], " ", ""))
				if err != nil {
					t.Fatal(err)
				}
				var words [3]uint64 // at the page's 4072, 4080, 4088
				for i := range words {
					words[i], _ = strconv.ParseUint(m[3+i], 16, 64)
				}
				getpid, _ := strconv.ParseUint(m[6], 16, 64)
				page := at &^ 4095
				// The entry points, at the program's load bias (a page's
				// multiple) from their symbols in the file.
				f, _ := sitetest.Linked(t, prog)
				_, syms, err := f.Symtab()
				if err != nil {
					t.Fatal(err)
				}
				sym := map[string]uint64{}
				for _, s := range syms {
					sym[s.Name] = uint64(s.Value)
				}
				bias := words[2] - sym["ftrace_libcall"]
				if sym["ftrace_libcall"] == 0 || bias%4096 != 0 {
					t.Errorf("the stub page's entry word is %#x; ftrace_libcall is at %#x in the file", words[2], sym["ftrace_libcall"])
				}
				var ops string
				switch {
				case tg.arch == "arm64":
					ops = decodeStubARM64(t, at, code80[:32], page+4088)
				case tracer == "function_graph":
					ops = decodeGraphStubX86(t, at, code80, getpid)
					for i, name := range []string{"ftrace_libgraph_enter", "ftrace_graph_leave"} {
						if sym[name] == 0 || words[i] != sym[name]+bias {
							t.Errorf("the stub page's word at %d is %#x; %s is at %#x in the file, the bias %#x", 4072+8*i, words[i], name, sym[name], bias)
						}
					}
				default:
					ops = decodeStubX86(t, at, code80[:16], page+4088)
				}
				want := map[string]string{"x86_64": "ENDBR64 MOV JMP", "arm64": "BTI MOV MOVK LDR BR"}[tg.arch]
				if tg.arch == "x86_64" && tracer == "function_graph" {
					want = "ENDBR64 MOV CALL JE ADD CALL JMP MOV JMP JMP INT3 INT3 INT3 INT3 INT3 INT3 INT3 INT3 INT3 INT3 INT3 INT3"
				}
				if ops != want {
					t.Errorf("the stub decodes as %q, want %q", ops, want)
				}
			})
		}
	}
}

// decodeGraphStubX86 decodes x86-64's graph stub at at (arch/libstub.h),
// 64 bytes of code and two words: its instructions' names, and where
// each goes: the slot's entry read from the word at +64 into r11, the
// enter and leave through the page's words at 4072 and 4080, the je to
// the stub's way into the common entry (an ordinary stub's two
// instructions, through the word at 4088), the function called through
// an island that jumps through the word at +72, which holds function;
// the hook (the call's return address) as far past the enter's return
// address as in a site's graph trampoline (abi.TrampHook -
// abi.TrampEntered), which ftrace_graph_enter's push relies on.
func decodeGraphStubX86(t *testing.T, at uint64, code []byte, function uint64) string {
	t.Helper()
	page := at &^ 4095
	if w := binary.LittleEndian.Uint64(code[72:]); w != function {
		t.Errorf("the graph stub's function word is %#x, want getpid at %#x", w, function)
	}
	if w := binary.LittleEndian.Uint64(code[64:]); w == 0 || w&7 != 0 {
		t.Errorf("the graph stub's slot word is %#x, want a slot's entry in the table", w)
	}
	var ops []string
	var calls, jmps int
	var entered, hook uint64
	for off := 0; off < 64; {
		in, err := x86.Decode(code[off:])
		if err != nil {
			t.Fatalf("graph stub at %#x, byte %d: %v (% x)", at, off, err, code)
		}
		end := at + uint64(off+in.Len)
		ripTo := func() uint64 {
			for _, a := range in.Args {
				if mem, ok := a.(x86asm.Mem); ok && mem.Base == x86asm.RIP {
					return end + uint64(mem.Disp)
				}
			}
			return 0
		}
		relTo := func() uint64 {
			if r, ok := in.Args[0].(x86asm.Rel); ok {
				return end + uint64(int64(r))
			}
			return 0
		}
		op := in.Op.String()
		check := func(what string, got, want uint64) {
			if got != want {
				t.Errorf("the graph stub's %s at +%d (%v) goes to %#x, want %#x", what, off, in, got, want)
			}
		}
		switch {
		case x86.IsEndbr64(code[off:]):
			op = "ENDBR64"
		case code[off] == 0xcc:
			op = "INT3" // x/arch: INT 3
		case in.Op == x86asm.MOV && off == 4:
			if r, ok := in.Args[0].(x86asm.Reg); !ok || r != x86asm.R11 {
				t.Errorf("the graph stub's first mov writes %v, want r11", in.Args[0])
			}
			check("mov", ripTo(), at+64)
		case in.Op == x86asm.MOV:
			if r, ok := in.Args[0].(x86asm.Reg); !ok || r != x86asm.R11L {
				t.Errorf("the graph stub's second mov writes %v, want r11d", in.Args[0])
			}
		case in.Op == x86asm.CALL && calls == 0:
			check("call of the enter", ripTo(), page+4072)
			entered = end
			calls++
		case in.Op == x86asm.CALL:
			check("call of the function", relTo(), at+46)
			hook = end
		case in.Op == x86asm.JE:
			check("je", relTo(), at+34)
		case in.Op == x86asm.ADD:
			if in.String() != "ADD RSP, 0x8" {
				t.Errorf("the graph stub's add is %v, want add $8, %%rsp", in)
			}
		case in.Op == x86asm.JMP && jmps < 3:
			check("jmp", ripTo(), []uint64{page + 4080, page + 4088, at + 72}[jmps])
			jmps++
		}
		ops = append(ops, op)
		off += in.Len
	}
	if entered == 0 || hook-entered != abi.TrampHook-abi.TrampEntered {
		t.Errorf("the graph stub's hook is %d bytes past the enter's return address, want %d", hook-entered, abi.TrampHook-abi.TrampEntered)
	}
	return strings.Join(ops, " ")
}

// decodeStubX86 decodes x86-64's stub at at: its instructions' names,
// the mov's register and the jmp's word checked.
func decodeStubX86(t *testing.T, at uint64, code []byte, word uint64) string {
	t.Helper()
	var ops []string
	for off := 0; off < len(code); {
		in, err := x86.Decode(code[off:]) // endbr64 understood, as x/arch does not
		if err != nil {
			t.Fatalf("stub at %#x, byte %d: %v (% x)", at, off, err, code)
		}
		op := in.Op.String()
		switch {
		case x86.IsEndbr64(code[off:]):
			op = "ENDBR64"
		case in.Op == x86asm.MOV:
			if r, ok := in.Args[0].(x86asm.Reg); !ok || r != x86asm.R11L {
				t.Errorf("the stub's mov writes %v, want r11d", in.Args[0])
			}
		case in.Op == x86asm.JMP:
			mem, ok := in.Args[0].(x86asm.Mem)
			if got := at + uint64(off+in.Len) + uint64(mem.Disp); !ok || mem.Base != x86asm.RIP || got != word {
				t.Errorf("the stub's jmp goes through %v (%#x), want the page's last word %#x", in.Args[0], got, word)
			}
		}
		ops = append(ops, op)
		off += in.Len
	}
	return strings.Join(ops, " ")
}

// decodeStubARM64 decodes arm64's stub at at, up to its br: its
// instructions' names, the registers, and the ldr's word checked.
func decodeStubARM64(t *testing.T, at uint64, code []byte, word uint64) string {
	t.Helper()
	var ops []string
	for off := 0; off < len(code); off += 4 {
		in, err := arm64asm.Decode(code[off:])
		if err != nil {
			t.Fatalf("stub at %#x, word %d: %v (% x)", at, off/4, err, code)
		}
		text := in.String()
		op := in.Op.String()
		switch in.Op {
		case arm64asm.MOV, arm64asm.MOVK: // movz is shown as its alias, mov
			if !strings.HasPrefix(text, op+" W17,") {
				t.Errorf("the stub's %q writes not w17", text)
			}
		case arm64asm.LDR:
			pc, ok := in.Args[1].(arm64asm.PCRel)
			if got := at + uint64(off) + uint64(pc); !ok || !strings.HasPrefix(text, "LDR X16,") || got != word {
				t.Errorf("the stub's %q loads from %#x, want x16 from the page's last word %#x", text, got, word)
			}
		case arm64asm.BR:
			if text != "BR X16" {
				t.Errorf("the stub's %q, want BR X16", text)
			}
		}
		if strings.HasPrefix(text, "BTI") || (in.Op == arm64asm.HINT && text == "HINT #0x22") {
			op = "BTI"
		}
		ops = append(ops, op)
		if in.Op == arm64asm.BR {
			break
		}
	}
	return strings.Join(ops, " ")
}

// TestLibCallExceptions: C++ exceptions thrown from a library function
// (libstdc++'s __throw_out_of_range_fmt, under vector::at) through a
// hooked call, caught two frames up; the same through a frame whose
// cleanup goes on unwinding, caught, thrown on with __cxa_rethrow and
// caught above; and a throw of the program's own (__cxa_throw): output
// and exit status untraced's under both tracers, exact counts; under
// function_graph exactly the calls the exceptions left are unwound,
// each in its caller; the runtime's own lookups (the unwinder's hooks'
// dlsym) are not the program's calls. (_Unwind_Resume, which the
// cleanup calls, is the runtime's own hook, defined in the program: not
// a library call.)
func TestLibCallExceptions(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GXX, x86ClangXX, a64GXX} {
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			objs := buildSrc(t, tg, dir, "-O2 "+preferred[tg.arch], true, "libcallex.cc")
			prog := linkRecordedOn(t, tg, dir, objs, "-pie")
			wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
			if err != nil || wantOut != "r=-1\n" {
				t.Fatalf("untraced: exit %d, %v, output %q", wantCode, err, wantOut)
			}
			for _, tracer := range []string{"function", "function_graph"} {
				out := runLibcalls(t, tg, dir, tracer, tracer, wantOut, wantCode, prog)
				tr, syms := readTrace(t, out)
				counts, _ := tracedCalls(t, tr, syms, tracer)
				want := map[string]int{"dlsym": 0, "mid": 3, "pick": 4, "guard": 1, "again": 1, "outer": 1, "__cxa_rethrow": 1, "__cxa_throw": 1}
				for f, n := range want {
					if counts[f] != n {
						t.Errorf("%s: %d calls of %s, want %d (dlsym is the runtime's)\n%v", tracer, counts[f], f, n, counts)
					}
				}
				if tracer != "function_graph" {
					continue
				}
				_, threads := graphOf(t, out)
				checkNesting(t, threads)
				thrower := "std::__throw_out_of_range_fmt(char const*, ...)"
				if u, want := unwoundIn(threads), map[string]int{"pick > " + thrower: 4, "mid > pick": 3, "guard > pick": 1, "again > guard": 1,
					"again > __cxa_rethrow": 1, "outer > again": 1, "main > __cxa_throw": 1}; !maps.Equal(u, want) {
					t.Errorf("function_graph: unwound %v, want %v", u, want)
				}
			}
		})
	}
}

// TestLibCallNoReturn: library calls that do not return normally
// (progs/libcallnr.c): a longjmp out of a callback qsort called, a
// thread's pthread_exit from a nested call, exit, _exit and abort from
// nested calls, vfork then exec, a siglongjmp out of a signal handler
// entered inside a library call, fork (both processes going on), the
// exec and posix_spawn families, makecontext, swapcontext and
// setcontext between two stacks, a thread's start, a signal handler
// entered while sigsuspend waits, and a plugin loaded with dlopen
// (with sites, and without), called, closed, loaded and called again.
// Output and exit status (or killing signal) are untraced's under both
// tracers, and each case's calls have exact counts over every process
// it became; the calls that never return are traced (longjmp,
// siglongjmp, pthread_exit, exit, abort), those that return twice or
// switch stacks (setjmp, vfork, the context family) as plain calls
// whose returns are not hooked; under function_graph every call lies
// within its caller, and where each case's calls lie is checked.
func TestLibCallNoReturn(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC} {
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			flags := "-O2 " + preferred[tg.arch]
			prog := traced(t, tg, dir, flags, true, "libcallnr.c")
			plugs := libcallPlugins(t, tg, dir, flags)
			for _, c := range libcallNoReturn {
				if q := c.qemu; q != nil && len(tg.exec) != 0 {
					c.want, c.never, c.unwound, c.calls = q.want, q.never, q.unwound, q.calls
				}
				args := []string{c.how}
				if c.plugin != "" {
					args = append(args, plugs[c.plugin])
				}
				wantOut, _, wantWs := waitRun(t, dir, nil, tg.on(prog, args...)...)
				for _, tracer := range []string{"function", "function_graph"} {
					name := c.name() + "-" + tracer
					out := filepath.Join(dir, name)
					got, errOut, ws := waitRun(t, dir, append([]string{"FTRACE=" + tracer, "FTRACE_LIBCALL=1", "FTRACE_OUT=" + out}, c.env...), tg.on(prog, args...)...)
					if got != wantOut || describe(ws) != describe(wantWs) {
						t.Errorf("%s: %s, output\n%s\nwant %s, output\n%s\nstderr:\n%s", name, describe(ws), got, describe(wantWs), wantOut, errOut)
						continue
					}
					tr, syms := readTrace(t, out)
					counts, _ := tracedCalls(t, tr, syms, tracer)
					pids := map[int]bool{}
					for _, st := range tr.Streams {
						pids[st.Pid] = true
					}
					if len(pids) != max(c.procs, 1) {
						t.Errorf("%s: %d processes in the trace, want %d", name, len(pids), max(c.procs, 1))
					}
					for f, n := range c.want {
						if counts[f] != n {
							t.Errorf("%s: %d calls of %s, want %d (%v)", name, counts[f], f, n, counts)
						}
					}
					for _, f := range c.never {
						if counts[f] != 0 {
							t.Errorf("%s: %d calls of %s, want none (%v)", name, counts[f], f, counts)
						}
					}
					if tracer != "function_graph" {
						continue
					}
					threads := model.Graph(tr, syms)
					checkNesting(t, threads)
					if u := unwoundIn(threads); !maps.Equal(u, c.unwound) {
						t.Errorf("%s: unwound %v, want %v", name, u, c.unwound)
					}
					if c.calls != nil {
						if got := callsIn(threads, slices.Collect(maps.Keys(c.calls))); !maps.Equal(got, c.calls) {
							t.Errorf("%s: calls %v, want %v", name, got, c.calls)
						}
					}
				}
			}
		})
	}
}

// TestNestLibCalls: with FTRACE_LIBCALL=nest (record --nest-libcall),
// the calls shared objects without sites make are traced too: those of
// a library the program links (libnest.so's strcspn, inside the
// program's call of nest_len under function_graph) and those of a plugin
// it opens, calls through dlsym's pointer and closes, twice (its strspn,
// hooked again at each load); with FTRACE_LIBCALL=1, neither.
// Output and exit status are untraced's; x86-64 gcc and clang, arm64
// under qemu.
func TestNestLibCalls(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC} {
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			plainShared := func(src, name string) string {
				obj := filepath.Join(dir, strings.TrimSuffix(src, ".c")+".o")
				run(t, dir, append(append([]string{}, tg.cc...), "-O2", "-fPIC", "-c", progPath(t, src), "-o", obj)...)
				so := filepath.Join(dir, name)
				run(t, dir, append(append([]string{}, tg.link...), "-shared", "-o", so, obj)...)
				return so
			}
			plainShared("nestlib.c", "libnest.so")
			plug := plainShared("nestplug.c", "nestplug.so")
			objs := buildSrc(t, tg, dir, "-O2 "+preferred[tg.arch], true, "nest.c")
			prog := linkRecordedOn(t, tg, dir, objs, "-L"+dir, "-Wl,-rpath,"+dir, "-Wl,--no-as-needed", "-lnest", "-ldl")
			wantOut, _, wantCode, err := runStatus(dir, tg.on(prog, plug)...)
			if err != nil || wantCode != 0 {
				t.Fatalf("untraced: exit %d, %v", wantCode, err)
			}
			for _, c := range []struct {
				mode, tracer string
				want         map[string]int
			}{
				{"nest", "function", map[string]int{"nest_len": 2, "strcspn": 2, "strspn": 2, "dlopen": 2, "dlsym": 2, "dlclose": 2}},
				{"nest", "function_graph", map[string]int{"nest_len": 2, "strcspn": 2, "strspn": 2, "dlopen": 2, "dlsym": 2, "dlclose": 2}},
				{"1", "function_graph", map[string]int{"nest_len": 2, "strcspn": 0, "strspn": 0, "dlopen": 2, "dlsym": 2, "dlclose": 2}},
			} {
				name := c.mode + "-" + c.tracer
				out := filepath.Join(dir, name)
				got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + c.tracer, "FTRACE_LIBCALL=" + c.mode, "FTRACE_OUT=" + out}, tg.on(prog, plug)...)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, name+" (stderr "+errOut+")", got, code, wantOut, wantCode)
				counts, _ := reportCounts(t, out)
				for f, n := range c.want {
					if counts[f] != n {
						t.Errorf("%s: %d calls of %s, want %d (%v)", name, counts[f], f, n, counts)
					}
				}
				if c.tracer != "function_graph" || c.mode != "nest" {
					continue
				}
				// Under qemu-user the program names the C library by
				// its path in the guest (/lib/libc.so.6), which this
				// host has not: its own functions show as addresses.
				tr := openForks(t, out)
				syms, warns, err := symbols.LoadProcess(&tr.Meta, "")
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range warns {
					if tg.arch == "x86_64" || !strings.Contains(w.Error(), "open /lib/") {
						t.Error(w)
					}
				}
				threads := model.Graph(tr, syms)
				checkNesting(t, threads)
				in := countCalls(threads, func(*model.Node, string) bool { return true })
				if in["nest_len > strcspn"] != 2 || in["main > strspn"] != 2 {
					t.Errorf("%s: calls by caller %v; want libnest.so's strcspn in nest_len, the plugin's strspn in main", name, in)
				}
			}
		})
	}
}

// slotBuilds are the builds of TestLiveLibCalls and TestEnableLibCall:
// x86-64 lazy and -z now with RELRO (a slot in a read-only page), arm64
// lazy.
var slotBuilds = []struct {
	tg    target
	name  string
	flags string
	link  []string
}{
	{x86GCC, "lazy", "-O2 -pg -mfentry", nil},
	{x86GCC, "now-relro", "-O2 -pg -mfentry", []string{"-Wl,-z,now,-z,relro"}},
	{a64GCC, "lazy", "-O2 -fpatchable-function-entry=4,2 -falign-functions=8", nil},
}

// TestLiveLibCalls: the live API chooses library functions by name as it
// chooses the program's (progs/livelib.c): a slot made traced by
// ftrace_enable_functions records the calls made after, one made
// untraced by ftrace_disable_functions records none, and a lazy slot
// not bound yet is made traced with the function it would be bound to;
// each call says it changed one slot. Output and exit status are
// untraced's; both tracers; x86-64 lazy and -z now with RELRO (a slot
// in a read-only page), arm64 under qemu.
func TestLiveLibCalls(t *testing.T) {
	t.Parallel()
	for _, c := range slotBuilds {
		t.Run(c.tg.arch+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			objs := buildSrc(t, c.tg, dir, c.flags+apiFlags(t, c.tg), true, "livelib.c")
			prog := linkRecordedOn(t, c.tg, dir, objs, append([]string{picLink(true)}, c.link...)...)
			want := "calls made: 11\n"
			for _, tracer := range []string{"function", "function_graph"} {
				out := filepath.Join(dir, tracer)
				got, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_LIBCALL=1", "FTRACE_FILTER=main", "FTRACE_OUT=" + out}, c.tg.on(prog)...)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, tracer, got, code, want, 0)
				if w := "enable getppid 1\ndisable getp* 1\nenable getpid 1\n"; stderr != w {
					t.Errorf("%s: live calls said\n%s\nwant\n%s", tracer, stderr, w)
				}
				counts, _ := reportCounts(t, out)
				delete(counts, "__getauxval") // arm64's libgcc (TestLibCalls)
				if w := map[string]int{"main": 1, "getppid": 3, "getpid": 2}; !maps.Equal(counts, w) {
					t.Errorf("%s: report %v, want %v", tracer, counts, w)
				}
			}
		})
	}
}

// libcallNoReturn are TestLibCallNoReturn's cases: progs/libcallnr.c's
// first argument, the plugin its second names ("sites" or "plain":
// libcallPlugins), the calls each function must have in all and
// (function_graph) those unwound by "CALLER > FUNCTION", and the calls
// of some callers by "CALLER > FUNCTION" (callsIn).
var libcallNoReturn = []libcallCase{
	{how: "jump", want: map[string]int{"_setjmp": 1, "qsort": 1, "cmp": 3, "longjmp": 1},
		unwound: map[string]int{"main > qsort": 1, "qsort > cmp": 1, "cmp > longjmp": 1}},
	{how: "thread", want: map[string]int{"thread_fn": 1, "leave_thread": 1, "pthread_exit": 1},
		unwound: map[string]int{" > thread_fn": 1, "thread_fn > leave_thread": 1, "leave_thread > pthread_exit": 1}},
	{how: "exit", want: map[string]int{"quit": 1, "exit": 1},
		calls: map[string]int{"quit > printf": 1, "quit > fflush": 1, "quit > exit": 1}},
	// The program's execl is the runtime's wrapper's (process/exec.c),
	// which calls the C library's execv: that call is the one traced, in
	// the buffer the child shares with its parent. qemu-user runs vfork
	// as fork: then the child's call goes with its image, as exec's.
	{how: "vfork", want: map[string]int{"vfork": 1, "waitpid": 1, "execv": 1},
		unwound: map[string]int{"main > execv": 1},
		qemu:    &libcallCase{want: map[string]int{"vfork": 1, "waitpid": 1, "execv": 0}}},
	// _exit is the runtime's own (process/exit.c), defined in the
	// program: not a library call.
	{how: "_exit", want: map[string]int{"quit_now": 1},
		calls: map[string]int{"quit_now > printf": 1, "quit_now > fflush": 1}},
	// Killed by SIGABRT: the flight recorder writes out what a stream
	// buffer would lose.
	{how: "abort", env: []string{"FTRACE_BUFFER=ring:1m"}, want: map[string]int{"give_up": 1, "abort": 1},
		calls: map[string]int{"give_up > printf": 1, "give_up > fflush": 1, "give_up > abort": 1}},
	{how: "siglong", want: map[string]int{"__sigsetjmp": 1, "raise_in": 1, "raise": 1, "on_usr1": 1, "getpid": 1, "siglongjmp": 1},
		unwound: map[string]int{"main > raise_in": 1, "raise_in > raise": 1, "raise > on_usr1": 1, "on_usr1 > siglongjmp": 1},
		calls:   map[string]int{"raise_in > raise": 1, "raise > on_usr1": 1, "on_usr1 > getpid": 1, "on_usr1 > siglongjmp": 1}},
	{how: "fork", procs: 2, want: map[string]int{"fork": 1, "child_work": 1, "busy": 2, "strlen": 2, "getpid": 2, "reap": 1, "waitpid": 1, "exit": 1},
		calls: map[string]int{"child_work > busy": 1, "child_work > printf": 1, "busy > strlen": 2, "busy > getpid": 2,
			"reap > waitpid": 1, "reap > printf": 1}},
	// The children exec before they record anything of their own: the
	// exec functions' calls are made after the runtime's wrapper wrote
	// the child's buffer out, and go with its image.
	{how: "exec", want: map[string]int{"fork": 2, "reap": 2, "waitpid": 2}, never: []string{"strncmp", "execve", "execvp"},
		calls: map[string]int{"reap > waitpid": 2, "reap > printf": 2}},
	{how: "spawn", want: map[string]int{"posix_spawn": 1, "posix_spawnp": 1, "reap": 2, "waitpid": 2}, never: []string{"strncmp"},
		calls: map[string]int{"reap > waitpid": 2, "reap > printf": 2}},
	{how: "context", want: map[string]int{"getcontext": 1, "makecontext": 1, "swapcontext": 7, "setcontext": 1, "co_fn": 1,
		"busy": 7, "strlen": 7, "getpid": 7}, never: []string{"mmap", "sched_yield"},
		calls: map[string]int{"co_fn > busy": 3, "co_fn > printf": 3, "co_fn > swapcontext": 3, "co_fn > setcontext": 1,
			"busy > strlen": 7, "busy > getpid": 7}},
	{how: "create", want: map[string]int{"pthread_create": 1, "pthread_join": 1, "start_fn": 1, "busy": 1, "strlen": 1, "getpid": 1},
		calls: map[string]int{"start_fn > busy": 1, "start_fn > printf": 1, "busy > strlen": 1, "busy > getpid": 1}},
	{how: "alarm", want: map[string]int{"wait_alarm": 1, "sigsuspend": 1, "on_alrm": 1, "busy": 1, "strlen": 1, "getpid": 1},
		calls: map[string]int{"sigsuspend > on_alrm": 1, "on_alrm > busy": 1, "busy > strlen": 1, "busy > getpid": 1}},
	// dlsym's functions are called through a pointer, outside any slot:
	// plug_work is traced by its own site, not as a library call; a
	// plugin without sites has neither sites nor its slots hooked.
	{how: "dlopen", plugin: "sites", want: map[string]int{"dlopen": 2, "dlsym": 2, "dlclose": 2, "plug_work": 2, "plug_step": 2,
		"snprintf": 2, "strlen": 4, "getpid": 2},
		calls: map[string]int{"plug_work > plug_step": 2, "plug_work > snprintf": 2, "plug_work > strlen": 2,
			"plug_step > strlen": 2, "plug_step > getpid": 2}},
	{how: "dlopen", plugin: "plain", want: map[string]int{"dlopen": 2, "dlsym": 2, "dlclose": 2},
		never: []string{"plug_work", "plug_step", "snprintf", "strlen", "getpid"}},
}

// A libcallCase is a case of TestLibCallNoReturn.
type libcallCase struct {
	how, plugin string
	env         []string // besides FTRACE, FTRACE_LIBCALL and FTRACE_OUT
	procs       int      // processes in the trace, when not 1
	want        map[string]int
	never       []string
	unwound     map[string]int
	calls       map[string]int
	// qemu, when not nil, has the want, never, unwound and calls of a
	// run under qemu-user.
	qemu *libcallCase
}

// name names the case's runs.
func (c libcallCase) name() string {
	if c.plugin == "" {
		return c.how
	}
	return c.how + "-" + c.plugin
}

// libcallPlugins builds progs/libcallplug.c into two plugins in dir:
// "sites", with flags' sites and the module stub, and "plain", with
// neither: their paths by those names.
func libcallPlugins(t *testing.T, tg target, dir, flags string) map[string]string {
	t.Helper()
	sdir, pdir := filepath.Join(dir, "sites"), filepath.Join(dir, "plain")
	for _, d := range []string{sdir, pdir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sites := linkShared(t, tg, sdir, "libcallplug.so", buildSrc(t, tg, sdir, flags+" -fPIC", true, "libcallplug.c"))
	plain := filepath.Join(pdir, "libcallplug.so")
	obj := buildSrc(t, tg, pdir, "-O2 -fPIC", true, "libcallplug.c")
	run(t, pdir, append(append(append([]string{}, tg.link...), "-shared", "-o", plain), obj...)...)
	return map[string]string{"sites": sites, "plain": plain}
}

// callsIn counts, in threads' graphs, the calls made by each caller of
// keys ("CALLER > FUNCTION"; "" for a thread's first call): the keys'
// callers' calls of any function, by "CALLER > FUNCTION".
func callsIn(threads []model.Thread, keys []string) map[string]int {
	callers := map[string]bool{}
	for _, k := range keys {
		c, _, _ := strings.Cut(k, " > ")
		callers[c] = true
	}
	return countCalls(threads, func(_ *model.Node, caller string) bool { return callers[caller] })
}

// TestEnableLibCall: ftpatch enable --libcall bakes library calls into a
// file: its list chooses among the library functions the program calls
// (progs/libcall.c: strlen and getp?d, getpid) as among its functions, and
// the file run with no environment traces those calls where it makes
// them and nothing of the others; FTRACE set when it runs wins (library
// calls then as FTRACE_LIBCALL says: none); ftpatch disable drops the
// library functions its list names; without --libcall a library
// function matches nothing. x86-64 lazy and -z now with RELRO, arm64
// under qemu.
func TestEnableLibCall(t *testing.T) {
	t.Parallel()
	for _, c := range slotBuilds {
		t.Run(c.tg.arch+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			objs := buildSrc(t, c.tg, dir, c.flags, true, "libcall.c")
			prog := linkRecordedOn(t, c.tg, dir, objs, append([]string{picLink(true)}, c.link...)...)
			wantOut, _, wantCode, err := runStatus(dir, c.tg.on(prog)...)
			if err != nil || wantCode != 0 {
				t.Fatalf("untraced: exit %d, %v", wantCode, err)
			}
			cmps, _ := strconv.Atoi(regexp.MustCompile(`cmp (\d+)`).FindStringSubmatch(wantOut)[1])
			baked := prog + ".traced"
			out, _ := run(t, dir, tool("ftpatch"), "enable", "--libcall", "--tracer", "function_graph", "-o", baked, prog, "main", "work", "strlen", "getp?d")
			if !strings.Contains(out, "calls of 2 library functions traced (getpid, strlen)") {
				t.Errorf("enable --libcall said %q", out)
			}
			runIn := func(name, bin string, env []string, want map[string]int) {
				t.Helper()
				sub := filepath.Join(dir, name)
				if err := os.Mkdir(sub, 0o755); err != nil {
					t.Fatal(err)
				}
				got, errOut, code, err := runStatusEnv(sub, env, c.tg.on(bin)...)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, name+" (stderr "+errOut+")", got, code, wantOut, wantCode)
				counts, _ := reportCounts(t, filepath.Join(sub, "ftrace.data"))
				delete(counts, "__getauxval") // arm64's libgcc (TestLibCalls)
				if !maps.Equal(counts, want) {
					t.Errorf("%s: report %v, want %v", name, counts, want)
				}
			}
			runIn("baked", baked, nil, map[string]int{"main": 1, "work": 1, "strlen": 5, "getpid": 2})
			runIn("env", baked, []string{"FTRACE=function"}, map[string]int{"main": 1, "work": 1, "cmp": cmps})
			dropped := prog + ".dropped"
			run(t, dir, tool("ftpatch"), "disable", "-o", dropped, baked, "strlen")
			runIn("disabled", dropped, nil, map[string]int{"main": 1, "work": 1, "getpid": 2})
			if _, errOut, code, _ := runStatus(dir, tool("ftpatch"), "enable", "-o", prog+".x", prog, "strlen"); code == 0 || !strings.Contains(errOut, `0 functions matched "strlen"`) {
				t.Errorf("enable strlen without --libcall: exit %d, %q; want no match", code, errOut)
			}
		})
	}
}
