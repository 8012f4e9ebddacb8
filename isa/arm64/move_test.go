package arm64

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"ftpatch/isa/move"
	"ftpatch/nops"

	"golang.org/x/arch/arm64/arm64asm"
)

// buildRun links testdata/run.c and testdata/prologue.S into a static
// arm64 program, with the C at optimisation level opt and
// -mbranch-protection=standard (bti c and paciasp at C functions'
// starts), and returns its path.
func buildRun(t *testing.T, opt string) string {
	t.Helper()
	cc, err := exec.LookPath("aarch64-linux-gnu-gcc")
	if err != nil {
		t.Fatal("aarch64-linux-gnu-gcc is not installed: run `make deps`")
	}
	out := filepath.Join(t.TempDir(), "run"+opt)
	cmd := exec.Command(cc, opt, "-static", "-mbranch-protection=standard", "-o", out, "testdata/run.c", "testdata/prologue.S")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, b)
	}
	return out
}

// A program is a linked file's functions and memory, read for planning.
type program struct {
	f     *elf.File
	funcs []elf.Symbol // FUNC symbols of .symtab, one per address, in address order
}

func openProgram(t *testing.T, path string) *program {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	syms, err := f.Symbols()
	if err != nil {
		syms, err = f.DynamicSymbols()
	}
	if err != nil {
		t.Fatal(err)
	}
	return &program{f: f, funcs: funcSymbols(syms)}
}

// funcSymbols keeps the defined FUNC symbols, one per address (aliases
// share a function), in address order.
func funcSymbols(syms []elf.Symbol) []elf.Symbol {
	var out []elf.Symbol
	seen := map[uint64]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || seen[s.Value] {
			continue
		}
		seen[s.Value] = true
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// read reads n bytes at addr from the file's loaded sections; nil if
// they do not lie in one.
func (p *program) read(addr uint64, n int) []byte {
	for _, s := range p.f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || addr < s.Addr || addr+uint64(n) > s.Addr+s.Size {
			continue
		}
		b := make([]byte, n)
		if _, err := s.ReadAt(b, int64(addr-s.Addr)); err != nil {
			return nil
		}
		return b
	}
	return nil
}

func (p *program) sym(t *testing.T, name string) elf.Symbol {
	t.Helper()
	for _, s := range p.funcs {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no function %s", name)
	return elf.Symbol{}
}

func (p *program) plan(s elf.Symbol, read func(uint64, int) []byte) (move.Plan, error) {
	code := p.read(s.Value, int(s.Size))
	if code == nil && s.Size == 0 {
		code = []byte{} // _init, _fini: crti.o's halves, sizeless
	}
	if code == nil {
		return move.Plan{}, fmt.Errorf("%s: not in a section", s.Name)
	}
	return PlanPrologue(code, s.Value, int(s.Size), read)
}

// fixtureFuncs lists the functions prologue.S defines.
func fixtureFuncs(t *testing.T) []string {
	b, err := os.ReadFile("testdata/prologue.S")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\tfunc\t(\w+)`).FindAllSubmatch(b, -1) {
		out = append(out, string(m[1]))
	}
	if len(out) == 0 {
		t.Fatal("testdata/prologue.S defines no function")
	}
	return out
}

// TestPlanPrologue plans every function of prologue.S: what each moved
// word takes, or why the function is refused.
func TestPlanPrologue(t *testing.T) {
	prog := openProgram(t, buildRun(t, "-O2"))
	cases := map[string]struct {
		how    move.How
		text   string // the moved word's disassembly
		kept   bool   // a bti stays before it
		err    error  // the refusal; nil: planned
		noRead error  // the refusal without the file's memory, if another
	}{
		"copy":         {how: move.Copy, text: "stp x29, x30, [sp,#-16]!"},
		"bti_kept":     {how: move.Copy, text: "add x0, x0, #0x2", kept: true},
		"pac":          {how: move.Authorize, text: "paciasp"},
		"bti_pac":      {how: move.Authorize, text: "pacibsp", kept: true},
		"bti_jc":       {how: move.Copy, text: "add x0, x0, #0x5", kept: true},
		"tail":         {how: move.Branch, text: "b"},
		"call_w":       {how: move.Copy, text: "stp x29, x30, [sp,#-16]!"},
		"call":         {how: move.Branch, text: "bl"},
		"ret_addr_w":   {how: move.Copy, text: "stp x29, x30, [sp,#-16]!"},
		"ret_addr":     {how: move.Branch, text: "bl"},
		"lr_of":        {how: move.Copy, text: "mov x0, x30"},
		"callee":       {how: move.Copy, text: "lsl x0, x0, #1"},
		"recurse":      {how: move.Copy, text: "stp x29, x30, [sp,#-16]!"},
		"bl_moved":     {err: move.ErrBranchInto},
		"lse":          {how: move.Copy, text: "sub sp, sp, #0x10"},
		"sve":          {how: move.Copy, text: ".inst 0x0420e3e0 // sve"},
		"bcond":        {how: move.Copy, text: "cmp x0, #0x0"},
		"bcond_tail":   {how: move.CondJump, text: "b.eq"},
		"bal":          {how: move.CondJump, text: "b.al"},
		"cbz":          {how: move.CondJump, text: "cbz x0"},
		"cbnz":         {how: move.CondJump, text: "cbnz w0"},
		"tbnz":         {how: move.CondJump, text: "tbnz w0, #3"},
		"tbz":          {how: move.CondJump, text: "tbz x0, #40"},
		"adr":          {how: move.PCRel, text: "adr x1"},
		"adrp":         {how: move.PCRel, text: "adrp x1"},
		"ldr_x":        {how: move.PCRel, text: "ldr x0"},
		"ldr_x4":       {how: move.PCRel, text: "ldr x0"},
		"ldr_w":        {how: move.PCRel, text: "ldr w0"},
		"ldrsw":        {how: move.PCRel, text: "ldrsw x0"},
		"ldr_d":        {how: move.PCRel, text: "ldr d0"},
		"ldr_s":        {how: move.PCRel, text: "ldr s1"},
		"ldr_q":        {how: move.PCRel, text: "ldr q2"},
		"prfm":         {how: move.PCRel, text: "prfm pldl1keep"},
		"jt_gcc":       {how: move.Copy, text: "cmp w0, #0x2", kept: true, noRead: move.ErrJumpTable},
		"jt_clang":     {how: move.Copy, text: "cmp w0, #0x3", noRead: move.ErrJumpTable},
		"jt_rel":       {how: move.Copy, text: "cmp x0, #0x1", noRead: move.ErrJumpTable},
		"jt_outline":   {how: move.Copy, text: "stp x29, x30, [sp,#-16]!", noRead: move.ErrJumpTable},
		"jt_into":      {err: move.ErrJumpTable},
		"jt_start":     {err: move.ErrJumpTable},
		"jt_unbounded": {err: move.ErrJumpTable},
		"into_moved":   {err: move.ErrBranchInto},
		"into_start":   {err: move.ErrBranchInto},
		"adr_moved":    {err: move.ErrBranchInto},
		"undecodable":  {err: move.ErrUndecodable},
		"unmovable":    {err: move.ErrUnmovable},
		"too_short":    {err: move.ErrTooShort},
		"empty":        {err: move.ErrTooShort},
	}
	for _, name := range fixtureFuncs(t) {
		t.Run(name, func(t *testing.T) {
			c, ok := cases[name]
			if !ok {
				t.Fatalf("prologue.S's %s has no case", name)
			}
			s := prog.sym(t, name)
			p, err := prog.plan(s, prog.read)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("plan: %v, want %v", err, c.err)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			patch := s.Value
			if c.kept {
				patch += 4
			}
			if p.Func != s.Value || p.Patch != patch || p.Len != 4 || !bytes.Equal(p.Orig, prog.read(patch, 4)) || len(p.Insns) != 1 {
				t.Fatalf("plan %+v, want func %#x patch %#x len 4, orig % x", p, s.Value, patch, prog.read(patch, 4))
			}
			b, _ := p.Bytes(0)
			if in := p.Insns[0]; in.Off != 0 || in.Len != 4 || in.How != c.how || !strings.HasPrefix(Text(Word(b, 0)), c.text) {
				t.Errorf("moved %+v (%s), want %v %q...", in, Text(Word(b, 0)), c.how, c.text)
			}
			_, err = prog.plan(s, nil)
			if c.noRead != nil && !errors.Is(err, c.noRead) || c.noRead == nil && err != nil {
				t.Errorf("plan without memory: %v, want %v", err, c.noRead)
			}
		})
	}
}

// An exit is where a run of a trampoline, or of the original word,
// leaves: the address it branches to and what it did on the way.
type exit struct {
	to     uint64            // where it goes
	regs   map[string]uint64 // general registers set to a known value (x30 for a call)
	loads  []string          // loads: "LDR X0 <- 0x4000" (op, register, address)
	copied []uint32          // words run as they are (the moved word, copied)
}

func (e exit) String() string {
	var regs []string
	for r, v := range e.regs {
		regs = append(regs, fmt.Sprintf("%s=%#x", r, v))
	}
	sort.Strings(regs)
	return fmt.Sprintf("to %#x regs %v loads %v copied %x", e.to, regs, e.loads, e.copied)
}

// xreg names the 64-bit register a w or x register argument is part of.
func xreg(a arm64asm.Arg) (string, bool) {
	var r arm64asm.Reg
	switch a := a.(type) {
	case arm64asm.Reg:
		r = a
	case arm64asm.RegSP:
		r = arm64asm.Reg(a)
	default:
		return "", false
	}
	switch {
	case r >= arm64asm.W0 && r <= arm64asm.W30:
		r = r - arm64asm.W0 + arm64asm.X0
	case r >= arm64asm.X0 && r <= arm64asm.X30:
	default:
		return a.String(), false // an FP/SIMD register, sp or zr
	}
	return r.String(), true
}

// immOf reads an immediate argument as arm64asm prints it (#0x10, #8,
// "#0x1, LSL #12").
func immOf(a arm64asm.Arg) uint64 {
	var v, sh uint64
	fmt.Sscanf(strings.ReplaceAll(a.String(), ", LSL ", " "), "#%v #%d", &v, &sh)
	return v << sh
}

// memOf reads [Xn,#imm] as a base register and an offset.
func memOf(m arm64asm.MemImmediate) (string, uint64) {
	base := arm64asm.Reg(m.Base).String()
	var off int64
	if i := strings.Index(m.String(), "#"); i >= 0 {
		fmt.Sscanf(m.String()[i:], "#%d", &off)
	}
	return base, uint64(off)
}

// runWords follows code (at address at) from pc, each word as arm64asm
// decodes it, until a branch leaves it; cond says whether a conditional
// branch's condition holds, relative to orig's (the original word): a
// branch with orig's condition is taken when it does, one with the
// inverse when it does not.
func runWords(t *testing.T, code []byte, at, pc uint64, orig arm64asm.Inst, cond bool) exit {
	t.Helper()
	e := exit{regs: map[string]uint64{}}
	for steps := 0; ; steps++ {
		if pc < at || pc >= at+uint64(len(code)) {
			e.to = pc
			return e
		}
		if steps > 16 {
			t.Fatalf("no way out of % x", code)
		}
		w := Word(code, pc-at)
		in, err := DecodeWord(w)
		if err != nil && Unknown(w) == "" {
			t.Fatalf("%#x: %08x: %v", pc, w, err)
		}
		next := pc + 4
		switch in.Op {
		case arm64asm.NOP:
		case arm64asm.B, arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ:
			taken := true
			var rel arm64asm.PCRel
			switch a := in.Args[0].(type) {
			case arm64asm.PCRel:
				rel = a
			case arm64asm.Cond:
				rel = in.Args[1].(arm64asm.PCRel)
				if oc := orig.Args[0].(arm64asm.Cond); a.Value&0xe == 0xe {
				} else if a.Value == oc.Value {
					taken = cond
				} else if a.Value == oc.Value^1 {
					taken = !cond
				} else {
					t.Fatalf("%v: not %v's condition nor its inverse", in, orig)
				}
			default: // cbz, tbz: the same register and bit as orig
				for i := range in.Args {
					if _, ok := in.Args[i].(arm64asm.PCRel); ok {
						rel = in.Args[i].(arm64asm.PCRel)
						break
					}
				}
				same := in.Op == orig.Op
				inverse := map[arm64asm.Op]arm64asm.Op{arm64asm.CBZ: arm64asm.CBNZ, arm64asm.CBNZ: arm64asm.CBZ, arm64asm.TBZ: arm64asm.TBNZ, arm64asm.TBNZ: arm64asm.TBZ}[in.Op] == orig.Op
				if in.Args[0] != orig.Args[0] || (in.Op == arm64asm.TBZ || in.Op == arm64asm.TBNZ) && in.Args[1] != orig.Args[1] || !same && !inverse {
					t.Fatalf("%v: not %v's test nor its inverse", in, orig)
				}
				taken = same == cond
			}
			if taken {
				next = pc + uint64(rel)
			}
		case arm64asm.ADR, arm64asm.ADRP:
			r, _ := xreg(in.Args[0])
			v := pc + uint64(in.Args[1].(arm64asm.PCRel))
			if in.Op == arm64asm.ADRP {
				v = pc&^0xfff + uint64(in.Args[1].(arm64asm.PCRel))
			}
			e.regs[r] = v
		case arm64asm.ADD, arm64asm.LDR, arm64asm.LDRSW:
			// Of a register the trampoline set: the rewritten
			// address. Of another: the moved word, copied.
			n, _ := xreg(in.Args[1])
			v, known := e.regs[n]
			m, mem := in.Args[1].(arm64asm.MemImmediate)
			if mem {
				base, off := memOf(m)
				v, known = e.regs[base]
				v += off
			}
			if !known {
				e.copied = append(e.copied, w)
				break
			}
			if in.Op == arm64asm.ADD {
				if _, imm := in.Args[2].(arm64asm.ImmShift); !imm {
					t.Fatalf("%#x: %v: not an add of an immediate", pc, in)
				}
				d, _ := xreg(in.Args[0])
				e.regs[d] = v + immOf(in.Args[2])
				break
			}
			if !mem || m.Mode != arm64asm.AddrOffset {
				t.Fatalf("%#x: %v: not a load from [xn, #imm]", pc, in)
			}
			e.loads = append(e.loads, fmt.Sprintf("%v %v <- %#x", in.Op, in.Args[0], v))
			if r, ok := xreg(in.Args[0]); ok {
				delete(e.regs, r) // no longer the address
			}
		default:
			e.copied = append(e.copied, w)
		}
		pc = next
	}
}

// want is what the original word at patch does, as arm64asm decodes it:
// where it goes (taken or not, for a conditional branch) and what it
// sets.
func want(t *testing.T, orig arm64asm.Inst, w uint32, patch uint64, cond bool) exit {
	e := exit{to: patch + 4, regs: map[string]uint64{}}
	switch orig.Op {
	case arm64asm.B, arm64asm.BL, arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ:
		var rel arm64asm.PCRel
		for _, a := range orig.Args {
			if r, ok := a.(arm64asm.PCRel); ok {
				rel = r
			}
		}
		always := orig.Op == arm64asm.B || orig.Op == arm64asm.BL
		if c, ok := orig.Args[0].(arm64asm.Cond); ok {
			always = c.Value&0xe == 0xe
		}
		if always || cond {
			e.to = patch + uint64(rel)
		}
		if orig.Op == arm64asm.BL {
			e.regs["X30"] = patch + 4
		}
	case arm64asm.ADR, arm64asm.ADRP:
		r, ok := xreg(orig.Args[0])
		if ok {
			e.regs[r] = patch + uint64(orig.Args[1].(arm64asm.PCRel))
			if orig.Op == arm64asm.ADRP {
				e.regs[r] = patch&^0xfff + uint64(orig.Args[1].(arm64asm.PCRel))
			}
		}
	case arm64asm.LDR, arm64asm.LDRSW:
		if rel, ok := orig.Args[1].(arm64asm.PCRel); ok {
			e.loads = []string{fmt.Sprintf("%v %v <- %#x", orig.Op, orig.Args[0], patch+uint64(rel))}
		} else {
			e.copied = []uint32{w}
		}
	case arm64asm.PRFM:
		if _, ok := orig.Args[1].(arm64asm.PCRel); !ok {
			e.copied = []uint32{w}
		}
	default:
		e.copied = []uint32{w}
	}
	return e
}

// TestTrampoline writes the trampoline of every planned function of
// prologue.S at addresses near and far (within 1 MiB, beyond it, below
// the function), decodes it back with arm64asm and runs it, each way a
// conditional branch may go: it must reach the same place, with the same
// registers set and the same loads, as the original word at its own
// address. The jump to it is `b t`, and a trampoline beyond a branch's
// reach is a *nops.RangeError.
func TestTrampoline(t *testing.T) {
	prog := openProgram(t, buildRun(t, "-O2"))
	planned := 0
	for _, name := range fixtureFuncs(t) {
		s := prog.sym(t, name)
		p, err := prog.plan(s, prog.read)
		if err != nil {
			continue
		}
		planned++
		t.Run(name, func(t *testing.T) {
			w := Word(p.Orig, 0)
			orig, err := DecodeWord(w)
			if err != nil && Unknown(w) == "" {
				t.Fatal(err)
			}
			for _, off := range []int64{0x10000, 0x200000, 100 << 20, -100 << 20, -0x10000 - 4} {
				at := p.Patch + uint64(off)
				code, err := Trampoline(&p, at)
				if err != nil {
					t.Fatalf("trampoline at %+#x: %v", off, err)
				}
				if len(code) > TrampolineMax || len(code)%4 != 0 {
					t.Fatalf("trampoline at %+#x: %d bytes, max %d", off, len(code), TrampolineMax)
				}
				if Word(code, 0) != NOP || Word(code, 4) != NOP {
					t.Fatalf("trampoline at %+#x: the site is % x, want two NOPs", off, code[:8])
				}
				var words []string
				for i := 0; i < len(code); i += 4 {
					words = append(words, Text(Word(code, uint64(i))))
				}
				for _, cond := range []bool{true, false} {
					got := runWords(t, code, at, at+TrampolineSite, orig, cond)
					if _, gpr := xreg(orig.Args[0]); orig.Op == arm64asm.LDR && !gpr {
						delete(got.regs, "X16") // IP0: the address of an FP/SIMD literal
					}
					if w := want(t, orig, w, p.Patch, cond); got.String() != w.String() {
						t.Errorf("trampoline at %+#x %q, condition %v: %v, want %v", off, words, cond, got, w)
					}
				}
				jump, err := PrologueJump(&p, at)
				if err != nil {
					t.Fatal(err)
				}
				if in, err := DecodeWord(Word(jump, 0)); err != nil || in.Op != arm64asm.B || p.Patch+uint64(in.Args[0].(arm64asm.PCRel)) != at {
					t.Errorf("jump to %#x: % x is %v", at, jump, in)
				}
			}
			for _, off := range []int64{130 << 20, -130 << 20} {
				if _, err := Trampoline(&p, p.Patch+uint64(off)); !errors.Is(err, nops.ErrRange) {
					t.Errorf("trampoline at %+#x: %v, want out of range", off, err)
				}
				if _, err := PrologueJump(&p, p.Patch+uint64(off)); !errors.Is(err, nops.ErrRange) {
					t.Errorf("jump to %+#x: %v, want out of range", off, err)
				}
			}
		})
	}
	if planned < 20 {
		t.Fatalf("%d functions of prologue.S planned", planned)
	}
}

// TestRelocateWords checks the rewritten words the fixtures cannot
// show: a literal load into xzr, an adr of xzr, a bl whose return
// address is more than 4 GiB from the trampoline.
func TestRelocateWords(t *testing.T) {
	const patch = 0x400000
	for _, c := range []struct {
		w    uint32
		at   uint64
		want []string // the trampoline after its site, objdump's syntax
		err  error
	}{
		{0x5800005f, patch + 0x10000, []string{"adrp x16, .+0xffffffffffff0000", "ldr xzr, [x16,#8]", "b .+0xfffffffffffefff4"}, nil}, // ldr xzr, .+8
		{0x1000005f, patch + 0x10000, []string{"nop", "b .+0xfffffffffffefff8"}, nil},                                                 // adr xzr, .+8
		{0x94000040, patch + 5<<30, nil, nops.ErrRange},                                                                               // bl .+0x100 from 5 GiB away
		{0x94000040, patch + 0x80000, []string{"adr x30, .+0xfffffffffff7fffc", "b .+0xfffffffffff800f4"}, nil},
		{0x94000040, patch + 0x200000, []string{"adrp x30, .+0xffffffffffe00000", "add x30, x30, #0x4", "b .+0xffffffffffe000f0"}, nil},
	} {
		p := move.Plan{Func: patch, Patch: patch, Len: 4, Orig: Bytes(c.w)}
		code, err := Trampoline(&p, c.at)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%08x at %#x: %v, want %v", c.w, c.at, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%08x at %#x: %v", c.w, c.at, err)
		}
		var got []string
		for i := TrampolineSite; i < len(code); i += 4 {
			got = append(got, Text(Word(code, uint64(i))))
		}
		if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("%08x at %#x: %q, want %q", c.w, c.at, got, c.want)
		}
	}
}

// patchAll gives every function of the program at path that a plan
// accepts a prologue site, its trampoline in the program's tramp_area
// (every other one more than 1 MiB from its function), writes the result
// to out and returns how many functions each reason refused ("" counts
// the planned).
func patchAll(t *testing.T, path, out string) map[string]int {
	t.Helper()
	prog := openProgram(t, path)
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fileOff := func(addr uint64, n int) []byte {
		for _, p := range prog.f.Progs {
			if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr+uint64(n) <= p.Vaddr+p.Filesz {
				return img[p.Off+addr-p.Vaddr:][:n]
			}
		}
		t.Fatalf("%#x: not in the file", addr)
		return nil
	}
	var area elf.Symbol
	syms, _ := prog.f.Symbols()
	for _, s := range syms {
		if s.Name == "tramp_area" {
			area = s
		}
	}
	if area.Size != 0x200000 {
		t.Fatalf("tramp_area: %+v", area)
	}
	counts := map[string]int{}
	near, far := area.Value, area.Value+area.Size/2+area.Size/4
	for i, s := range prog.funcs {
		p, err := prog.plan(s, prog.read)
		if err != nil {
			reason := "other: " + err.Error()
			for _, r := range move.Reasons {
				if errors.Is(err, r) {
					reason = r.Error()
				}
			}
			counts[reason]++
			continue
		}
		counts[""]++
		at := &near
		if i%2 == 1 {
			at = &far
		}
		code, err := Trampoline(&p, *at)
		if err != nil {
			t.Fatalf("%s: trampoline: %v", s.Name, err)
		}
		jump, err := PrologueJump(&p, *at)
		if err != nil {
			t.Fatalf("%s: jump: %v", s.Name, err)
		}
		copy(fileOff(*at, len(code)), code)
		copy(fileOff(p.Patch, 4), jump)
		*at += TrampolineMax
		if near > area.Value+area.Size/2 || far > area.Value+area.Size {
			t.Fatal("tramp_area full")
		}
	}
	if err := os.WriteFile(out, img, 0o755); err != nil {
		t.Fatal(err)
	}
	return counts
}

// TestPrologueRun patches every function of run.c's program (its own,
// prologue.S's and the C library's, linked statically) built at each
// optimisation level, and runs it under qemu-aarch64: the output and
// exit status must be the unpatched program's.
func TestPrologueRun(t *testing.T) {
	qemu, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		t.Fatal("qemu-aarch64 is not installed: run `make deps`")
	}
	for _, opt := range []string{"-O0", "-O1", "-O2", "-O3"} {
		t.Run(opt, func(t *testing.T) {
			orig := buildRun(t, opt)
			patched := orig + ".patched"
			counts := patchAll(t, orig, patched)
			t.Logf("planned %d; refused %v", counts[""], counts)
			n := 0
			for _, c := range counts {
				n += c
			}
			if counts[""] < n*95/100 {
				t.Errorf("%d of %d functions planned, want 95%%", counts[""], n)
			}
			for r := range counts {
				if strings.HasPrefix(r, "other") {
					t.Errorf("refused for no known reason: %s", r)
				}
			}
			run := func(path string) (string, int) {
				var out bytes.Buffer
				cmd := exec.Command(qemu, path)
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					t.Fatal(err)
				}
				return out.String(), cmd.ProcessState.ExitCode()
			}
			wantOut, wantCode := run(orig)
			gotOut, gotCode := run(patched)
			if gotOut != wantOut || gotCode != wantCode {
				t.Errorf("patched: exit %d, output\n%s\nwant exit %d, output\n%s", gotCode, gotOut, wantCode, wantOut)
			}
			if !strings.Contains(wantOut, "jt_rel: 32 33") || wantCode != 3 {
				t.Errorf("the program did not run as it should: exit %d\n%s", wantCode, wantOut)
			}
		})
	}
}

// coverage plans every function of the file at path and counts the
// outcomes: "planned", a refusal reason, or "sizeless" for a symbol of
// size 0 (crtstuff's and crti's, which say nothing of their length); it
// returns the counts and the number of functions with a size.
func coverage(t *testing.T, path string) (map[string]int, int) {
	t.Helper()
	prog := openProgram(t, path)
	counts := map[string]int{}
	n := 0
	for _, s := range prog.funcs {
		if s.Size == 0 {
			counts["sizeless"]++
			continue
		}
		n++
		_, err := prog.plan(s, prog.read)
		reason := "planned"
		if err != nil {
			reason = "other"
			for _, r := range move.Reasons {
				if errors.Is(err, r) {
					reason = r.Error()
				}
			}
			if reason == "other" {
				t.Errorf("%s: %s: %v", path, s.Name, err)
			}
		}
		counts[reason]++
	}
	return counts, n
}

// TestPrologueLibraries plans every function of the arm64 C library
// and its neighbours (.symtab where they have one, else .dynsym): every
// refusal has one of package move's reasons, and most functions get a
// site.
func TestPrologueLibraries(t *testing.T) {
	libs, _ := filepath.Glob("/usr/aarch64-linux-gnu/lib/lib*.so.*")
	if len(libs) == 0 {
		t.Fatal("no arm64 library under /usr/aarch64-linux-gnu/lib: run `make deps`")
	}
	total := map[string]int{}
	n := 0
	for _, lib := range libs {
		if fi, err := os.Lstat(lib); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		counts, funcs := coverage(t, lib)
		t.Logf("%s: %d functions: %v", filepath.Base(lib), funcs, counts)
		for r, c := range counts {
			total[r] += c
		}
		n += funcs
	}
	t.Logf("all: %d functions with a size: %v", n, total)
	if total["planned"] < n*98/100 {
		t.Errorf("%d of %d functions planned, want 98%%", total["planned"], n)
	}
}

// progs are programs of the end-to-end tests that build alone.
var progs = []string{"args", "backtrace", "contexts", "edge", "exits", "hostile", "shapes", "sigstress"}

// TestPrologueProgs plans every function of some of the end-to-end
// tests' programs, built with gcc at each optimisation level with
// -mbranch-protection=standard.
func TestPrologueProgs(t *testing.T) {
	cc, err := exec.LookPath("aarch64-linux-gnu-gcc")
	if err != nil {
		t.Fatal("aarch64-linux-gnu-gcc is not installed: run `make deps`")
	}
	dir := t.TempDir()
	for _, opt := range []string{"-O0", "-O1", "-O2", "-O3"} {
		total, n := map[string]int{}, 0
		for _, prog := range progs {
			out := filepath.Join(dir, prog+opt)
			cmd := exec.Command(cc, opt, "-mbranch-protection=standard", "-w", "-o", out, "../../tests/progs/"+prog+".c", "-lm", "-lpthread")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", cmd, err, b)
			}
			counts, funcs := coverage(t, out)
			for r, c := range counts {
				total[r] += c
			}
			n += funcs
		}
		t.Logf("%s: %d functions with a size: %v", opt, n, total)
		if total["planned"] < n*95/100 {
			t.Errorf("%s: %d of %d functions planned, want 95%%", opt, total["planned"], n)
		}
	}
}
