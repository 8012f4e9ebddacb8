package tests

import (
	"bufio"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/internal/sitetest"
	"ftpatch/runtime/abi"
	"ftpatch/sites"
)

// TestGraphTrampolines: under function_graph, every enabled site at a
// function's entry jumps to a trampoline of its own, and what the runtime
// wrote (the site and the trampoline) decodes with x/arch to exactly the
// instructions entry.S draws, with every target where it must be: the
// site for the record, ftrace_graph_enter and ftrace_graph_leave through
// the chunk's slots, the function's body. Sites the filter left out stay
// NOPs; -pg's sites after the prologue call the mcount trampoline; no
// mapping is writable and executable; the program behaves as untraced.
func TestGraphTrampolines(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang} {
		for _, v := range []struct {
			flags string
			pie   bool
		}{
			{"-O2 -pg -mfentry", true},
			{"-O2 -pg -mfentry", false},
			{"-O2 -pg -mfentry -fcf-protection", true},
			{"-O2 -fpatchable-function-entry=5", true},
			{"-O2 -pg", true},
		} {
			t.Run(tg.name+"/"+slug(v.flags)+"/"+picFlag(v.pie), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				prog := traced(t, tg, dir, v.flags, v.pie, append(append([]string{}, progSources...), "trampdump.c")...)
				wantOut, _, wantCode, err := runStatus(dir, prog)
				if err != nil {
					t.Fatal(err)
				}
				out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_FILTER=!main", "FTRACE_OUT=" + filepath.Join(dir, "t")}, prog)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, "", out, code, wantOut, wantCode)
				f, l := sitetest.Linked(t, prog)
				_, syms, err := f.Symtab()
				if err != nil {
					t.Fatal(err)
				}
				var enter uint64
				for _, s := range syms {
					if s.Name == abi.GraphEnter {
						enter = uint64(s.Value)
					}
				}
				checkTrampolines(t, l, enter, errOut)
			})
		}
	}
}

// checkTrampolines decodes trampdump.c's report (see there) against the
// program's sites.
// enter is ftrace_graph_enter's address in the file, for the load bias.
func checkTrampolines(t *testing.T, l *sites.Linked, enter uint64, report string) {
	t.Helper()
	type site struct {
		addr  uint64
		bytes []byte
	}
	type tramp struct {
		addr                               uint64
		bytes                              []byte
		enterSlot, enter, leaveSlot, leave uint64
	}
	var ss []site
	trs := map[uint64]tramp{}
	var hookEnter, hookLeave uint64
	wx := -1
	num := func(s string) uint64 {
		n, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("trampdump: %q: %v", s, err)
		}
		return n
	}
	sc := bufio.NewScanner(strings.NewReader(report))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "site":
			b, err := hex.DecodeString(f[2])
			if err != nil {
				t.Fatal(err)
			}
			ss = append(ss, site{num(f[1]), b})
		case len(f) == 7 && f[0] == "tramp":
			b, err := hex.DecodeString(f[2])
			if err != nil {
				t.Fatal(err)
			}
			tr := tramp{num(f[1]), b, num(f[3]), num(f[4]), num(f[5]), num(f[6])}
			trs[tr.addr] = tr
		case len(f) == 3 && f[0] == "hooks":
			hookEnter, hookLeave = num(f[1]), num(f[2])
		case len(f) == 2 && f[0] == "wx":
			wx = int(num(f[1]))
		}
	}
	if len(ss) != len(l.Sites)+len(l.Dead) || wx < 0 || enter == 0 {
		t.Fatalf("trampdump reported %d sites (want %d, %d of them dead) and wx %d; ftrace_graph_enter at %#x:\n%s", len(ss), len(l.Sites)+len(l.Dead), len(l.Dead), wx, enter, report)
	}
	if wx != 0 {
		t.Errorf("%d mappings writable and executable", wx)
	}
	bias := hookEnter - enter
	byAddr := map[uint64]sites.Site{}
	for _, s := range l.Sites {
		byAddr[s.Off] = s
	}
	jumps, dead := 0, 0
	for _, s := range ss {
		ls, ok := byAddr[s.addr-bias]
		if !ok {
			// In a weak function the linker discarded: never enabled.
			dead++
			if s.bytes[0] == 0xe9 {
				t.Errorf("dead site at %#x (file %#x) jumps: % x", s.addr, s.addr-bias, s.bytes)
			}
			continue
		}
		in, err := x86asm.Decode(s.bytes, 64)
		if err != nil {
			t.Errorf("%s: site %x: %v", ls.Func, s.bytes, err)
			continue
		}
		body := s.addr + uint64(ls.Len)
		switch {
		case ls.Func == "main":
			if in.Op != x86asm.NOP || in.Len != ls.Len {
				t.Errorf("main (filtered out): site holds %v (% x), want one %d-byte NOP", in, s.bytes[:ls.Len], ls.Len)
			}
		case !ls.Kind.AtEntry():
			if in.Op != x86asm.CALL || in.Len != ls.Len {
				t.Errorf("%s (after the prologue): site holds %v, want a %d-byte call", ls.Func, in, ls.Len)
			}
		default:
			rel, ok := in.Args[0].(x86asm.Rel)
			if in.Op != x86asm.JMP || in.Len != 5 || !ok {
				t.Errorf("%s: site holds %v (% x), want jmp rel32", ls.Func, in, s.bytes[:ls.Len])
				continue
			}
			if ls.Len == 6 {
				if pad, err := x86asm.Decode(s.bytes[5:], 64); err != nil || pad.Op != x86asm.NOP || pad.Len != 1 {
					t.Errorf("%s: byte after the jump of a 6-byte site: %v, %v; want nop", ls.Func, pad, err)
				}
			}
			at := uint64(int64(s.addr) + 5 + int64(rel))
			tr, ok := trs[at]
			if !ok {
				t.Errorf("%s: site jumps to %#x, no trampoline reported there", ls.Func, at)
				continue
			}
			jumps++
			checkTramp(t, ls.Func, tr.addr, tr.bytes, s.addr, body, tr.enterSlot, tr.leaveSlot)
			if tr.enter != hookEnter || tr.leave != hookLeave {
				t.Errorf("%s: trampoline slots hold %#x, %#x; want ftrace_graph_enter %#x, ftrace_graph_leave %#x", ls.Func, tr.enter, tr.leave, hookEnter, hookLeave)
			}
		}
	}
	if dead != len(l.Dead) {
		t.Errorf("%d reported sites are not in the file's list, want the %d dead ones", dead, len(l.Dead))
	}
	if jumps == 0 && l.Sites[0].Kind.AtEntry() {
		t.Error("no site jumps to a trampoline")
	}
}

// checkTramp decodes one trampoline: the instructions of entry.S's
// drawing, in order, with their targets.
func checkTramp(t *testing.T, fn string, at uint64, b []byte, site, body, enterSlot, leaveSlot uint64) {
	t.Helper()
	ripMem := func(in x86asm.Inst, i int, pc uint64) (uint64, bool) {
		m, ok := in.Args[i].(x86asm.Mem)
		if !ok || m.Base != x86asm.RIP || m.Index != 0 {
			return 0, false
		}
		return uint64(int64(pc) + int64(int32(m.Disp))), true // x/arch leaves disp32 unextended
	}
	steps := []struct {
		what string
		ok   func(in x86asm.Inst, pc, next uint64) bool
	}{
		{"lea site(%rip), %r11", func(in x86asm.Inst, pc, next uint64) bool {
			a, ok := ripMem(in, 1, next)
			return in.Op == x86asm.LEA && in.Args[0] == x86asm.R11 && ok && a == site
		}},
		{"call *enter(%rip)", func(in x86asm.Inst, pc, next uint64) bool {
			a, ok := ripMem(in, 0, next)
			return in.Op == x86asm.CALL && ok && a == enterSlot
		}},
		{"je tramp+30", func(in x86asm.Inst, pc, next uint64) bool {
			r, ok := in.Args[0].(x86asm.Rel)
			return in.Op == x86asm.JE && ok && uint64(int64(next)+int64(r)) == at+abi.TrampSkip
		}},
		{"add $8, %rsp", func(in x86asm.Inst, pc, next uint64) bool {
			return in.Op == x86asm.ADD && in.Args[0] == x86asm.RSP && in.Args[1] == x86asm.Imm(8)
		}},
		{"call body", func(in x86asm.Inst, pc, next uint64) bool {
			r, ok := in.Args[0].(x86asm.Rel)
			return in.Op == x86asm.CALL && ok && uint64(int64(next)+int64(r)) == body && next == at+abi.TrampHook
		}},
		{"jmp *leave(%rip)", func(in x86asm.Inst, pc, next uint64) bool {
			a, ok := ripMem(in, 0, next)
			return in.Op == x86asm.JMP && ok && a == leaveSlot
		}},
		{"jmp body", func(in x86asm.Inst, pc, next uint64) bool {
			r, ok := in.Args[0].(x86asm.Rel)
			return in.Op == x86asm.JMP && ok && uint64(int64(next)+int64(r)) == body && pc == at+abi.TrampSkip
		}},
	}
	off := 0
	for _, s := range steps {
		in, err := x86asm.Decode(b[off:], 64)
		if err != nil {
			t.Errorf("%s: trampoline+%d (% x): %v; want %s", fn, off, b[off:], err, s.what)
			return
		}
		pc := at + uint64(off)
		if !s.ok(in, pc, pc+uint64(in.Len)) {
			t.Errorf("%s: trampoline+%d: %v; want %s", fn, off, in, s.what)
		}
		off += in.Len
	}
	for ; off < len(b); off++ {
		if b[off] != 0xcc {
			t.Errorf("%s: trampoline+%d: %#x, want int3 padding", fn, off, b[off])
		}
	}
}
