package tests

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/internal/sitetest"
	"ftpatch/isa/x86"
	"ftpatch/model"
	"ftpatch/runtime/abi"
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

// unwoundIn counts the calls of threads left without returning (a
// longjmp, an exception), by "CALLER > FUNCTION".
func unwoundIn(threads []model.Thread) map[string]int {
	out := map[string]int{}
	var walk func(n *model.Node, caller string)
	walk = func(n *model.Node, caller string) {
		if n.Unwound {
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
// hooked call, caught two frames up, and a throw of the program's own:
// output and exit status untraced's under both tracers; under
// function_graph the throwing call and pick are unwound inside mid,
// three times; the runtime's own lookups (the unwinder's hooks' dlsym)
// are not the program's calls.
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
			if err != nil || wantOut != "r=1\n" {
				t.Fatalf("untraced: exit %d, %v, output %q", wantCode, err, wantOut)
			}
			for _, tracer := range []string{"function", "function_graph"} {
				out := runLibcalls(t, tg, dir, tracer, tracer, wantOut, wantCode, prog)
				tr, syms := readTrace(t, out)
				counts, _ := tracedCalls(t, tr, syms, tracer)
				if counts["dlsym"] != 0 || counts["mid"] != 3 || counts["pick"] != 3 {
					t.Errorf("%s: report %v; want mid and pick 3 times, and no dlsym (the runtime's)", tracer, counts)
				}
				if tracer != "function_graph" {
					continue
				}
				_, threads := graphOf(t, out)
				checkNesting(t, threads)
				unwound := unwoundIn(threads)["pick > std::__throw_out_of_range_fmt(char const*, ...)"]
				if unwound != 3 {
					t.Errorf("function_graph: %d calls of __throw_out_of_range_fmt unwound in pick, want 3", unwound)
				}
			}
		})
	}
}

// TestLibCallNoReturn: library calls that do not return normally
// (progs/libcallnr.c): a longjmp out of a callback qsort called, a
// thread's pthread_exit from a nested call, exit from a nested call,
// and vfork then exec. Output and exit status are untraced's under both
// tracers; the calls that never return are traced (longjmp, pthread_exit,
// exit), those that return twice (setjmp, vfork) as plain calls whose
// returns are not hooked; under function_graph every call lies
// within its caller, and qsort and the comparator's last call are left
// unwound by the jump.
func TestLibCallNoReturn(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC} {
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			prog := traced(t, tg, dir, "-O2 "+preferred[tg.arch], true, "libcallnr.c")
			for _, c := range []struct {
				how  string
				want map[string]int
			}{
				{"jump", map[string]int{"_setjmp": 1, "qsort": 1, "cmp": 3, "longjmp": 1}},
				{"thread", map[string]int{"thread_fn": 1, "leave_thread": 1, "pthread_exit": 1}},
				{"exit", map[string]int{"quit": 1, "exit": 1}},
				{"vfork", map[string]int{"vfork": 1, "waitpid": 1}},
			} {
				wantOut, _, wantCode, err := runStatus(dir, tg.on(prog, c.how)...)
				if err != nil {
					t.Fatal(err)
				}
				for _, tracer := range []string{"function", "function_graph"} {
					out := runLibcalls(t, tg, dir, c.how+"-"+tracer, tracer, wantOut, wantCode, prog, c.how)
					tr, syms := readTrace(t, out)
					counts, _ := tracedCalls(t, tr, syms, tracer)
					for f, n := range c.want {
						if counts[f] != n {
							t.Errorf("%s %s: %d calls of %s, want %d (%v)", c.how, tracer, counts[f], f, n, counts)
						}
					}
					if tracer != "function_graph" {
						continue
					}
					_, threads := graphOf(t, out)
					checkNesting(t, threads)
					if c.how == "jump" {
						unwound := unwoundIn(threads)
						if unwound["main > qsort"] != 1 || unwound["qsort > cmp"] != 1 {
							t.Errorf("jump: unwound %v, want qsort and the comparator's last call", unwound)
						}
					}
				}
			}
		})
	}
}
