package tests

import (
	"encoding/hex"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/funclist"
	"ftpatch/prologue"
	"ftpatch/runtime/abi"
)

// TestDlopenPreloaded: a program linked without the runtime, run with
// the runtime preloaded, loads a plugin with dlopen after start, calls
// it, closes it and loads it again. The plugin links no module stub:
// built with sites (x86-64 -pg -mfentry, arm64
// -fpatchable-function-entry=2, recordmcount's table), or without
// tracing flags and traced through sites made from its prologues (-P .:
// the plan server started here). Under both tracers its output and exit
// status are the untraced run's, and the trace holds each of the
// plugin's calls of both loads, named. The loader's debugger hook the
// runtime wrote (_dl_debug_state's ret become a jump to a page near the
// loader, which jumps on to the runtime) is decoded back.
func TestDlopenPreloaded(t *testing.T) {
	t.Parallel()
	sited := map[string]string{"x86_64": "-pg -mfentry", "arm64": "-fpatchable-function-entry=2"}
	// plug_run(3), then plug_run(4): each calls plug_mid n times, which
	// calls plug_leaf twice.
	want := map[string]int{"plug_run": 2, "plug_mid": 7, "plug_leaf": 14}
	for _, tg := range []target{x86GCC, x86Clang, a64GCC} {
		for _, kind := range []string{"sites", "prologues"} {
			t.Run(tg.arch+"/"+tg.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				flags := "-fPIC"
				if kind == "sites" {
					flags += " " + sited[tg.arch]
				}
				objs := buildSrc(t, tg, dir, flags, true, "dlplainplug.c")
				if kind == "sites" {
					run(t, dir, append([]string{tool("recordmcount")}, objs...)...)
				}
				plug := filepath.Join(dir, "libplug.so")
				run(t, dir, append(append(append([]string{}, tg.link...), "-shared", "-o", plug), objs...)...)
				prog := filepath.Join(dir, "dlplain")
				run(t, dir, append(append(append([]string{}, tg.link...), "-o", prog), buildSrc(t, tg, dir, "", true, "dlplain.c")...)...)
				wantOut, errOut, wantCode, err := runStatus(dir, tg.on(prog, plug)...)
				if err != nil || !strings.Contains(wantOut, "round 1") {
					t.Fatalf("untraced: exit %d (%v), output\n%s\nstderr\n%s", wantCode, err, wantOut, errOut)
				}
				var env []string
				if kind == "prologues" {
					all := &funclist.List{}
					all.Add("*", "test")
					plans, err := prologue.ServePlans(all, io.Discard)
					if err != nil {
						t.Fatal(err)
					}
					defer plans.Close()
					env = append(env, abi.EnvPrologueSocket+"="+plans.Path())
				}
				env = preloaded(tg, preloadedLib(t, tg), env)
				for _, tracer := range []string{"function", "function_graph"} {
					td := filepath.Join(dir, "trace-"+tracer)
					e := append([]string{"FTRACE=" + tracer, "FTRACE_OUT=" + td, "FTRACE_SCHED=0"}, env...)
					out, errOut, code, err := runStatusEnv(dir, e, tg.on(prog, plug, "dump")...)
					if err != nil || out != wantOut || code != wantCode {
						t.Fatalf("%s: exit %d (%v), output\n%s\nstderr\n%s\nwant exit %d, output\n%s", tracer, code, err, out, errOut, wantCode, wantOut)
					}
					got := callsByName(t, td)
					for name, n := range want {
						if got[name] != n {
							t.Errorf("%s: %s called %d times in the trace, want %d (the trace's counts: %v; stderr:\n%s)", tracer, name, got[name], n, got, errOut)
						}
					}
					checkLoaderHook(t, tg.arch, errOut)
				}
			})
		}
	}
}

// checkLoaderHook decodes what progs/dlplain.c wrote on stderr (out) of
// the loader's debugger hook: its first instruction must be a jump to a
// page within reach, whose code jumps through the word after it (x86-64:
// jmp *2(%rip); arm64: ldr x16 of that word, br x16).
func checkLoaderHook(t *testing.T, arch, out string) {
	t.Helper()
	var brk, page []byte
	var brkAt, pageAt uint64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || (f[0] != "brk" && f[0] != "page") {
			continue
		}
		at, err1 := strconv.ParseUint(f[1], 16, 64)
		b, err2 := hex.DecodeString(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable: %q", line)
		}
		if f[0] == "brk" {
			brk, brkAt = b, at
		} else {
			page, pageAt = b, at
		}
	}
	if brk == nil || page == nil {
		t.Fatalf("the loader's hook was not written (no jump at _dl_debug_state); stderr:\n%s", out)
	}
	switch arch {
	case "x86_64":
		in, err := x86asm.Decode(brk, 64)
		rel, ok := in.Args[0].(x86asm.Rel)
		if err != nil || in.Op != x86asm.JMP || !ok || in.Len != 5 || brkAt+5+uint64(int64(rel)) != pageAt {
			t.Errorf("_dl_debug_state begins % x (%v), not a jmp rel32 to %#x", brk, in, pageAt)
		}
		in, err = x86asm.Decode(page, 64)
		mem, ok := in.Args[0].(x86asm.Mem)
		if err != nil || in.Op != x86asm.JMP || !ok || mem.Base != x86asm.RIP || mem.Disp != 2 || in.Len != 6 {
			t.Errorf("its page begins % x (%v), not jmp *2(%%rip)", page, in)
		}
	case "arm64":
		in, err := arm64asm.Decode(brk)
		if err != nil || in.Op != arm64asm.B || in.Args[0] != arm64asm.PCRel(int64(pageAt-brkAt)) {
			t.Errorf("_dl_debug_state begins % x (%v), not b to %#x", brk, in, pageAt)
		}
		ldr, err1 := arm64asm.Decode(page[:4])
		br, err2 := arm64asm.Decode(page[4:8])
		if err1 != nil || err2 != nil || ldr.String() != "LDR X16, .+0x8" || br.String() != "BR X16" {
			t.Errorf("its page begins % x (%v; %v), not ldr x16, .+8; br x16", page, ldr, br)
		}
	}
}
