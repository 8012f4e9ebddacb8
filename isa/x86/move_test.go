package x86

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"ftpatch/isa/move"
	"ftpatch/nops"

	"golang.org/x/arch/x86/x86asm"
)

// A fixtureFunc is one function of a linked fixture: its bytes up to the
// next function (its padding included), and its symbol's size.
type fixtureFunc struct {
	addr uint64
	size int
	code []byte
}

// An elfImage is a linked file's functions and a reader of its memory.
type elfImage struct {
	funcs map[string]fixtureFunc
	names []string // in address order
	read  func(addr uint64, n int) []byte
}

// loadImage reads the function symbols of the linked ELF file at path,
// each with its bytes up to the next function's start (or its section's
// end), and a reader of the file's allocated sections.
func loadImage(path string) (*elfImage, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if len(syms) == 0 {
		syms, err = f.DynamicSymbols() // a stripped library: its exports
	}
	if err != nil {
		return nil, err
	}
	type sec struct {
		addr uint64
		data []byte
	}
	var secs []sec
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		d, err := s.Data()
		if err != nil {
			return nil, err
		}
		secs = append(secs, sec{s.Addr, d})
	}
	at := func(addr uint64) []byte {
		for _, s := range secs {
			if addr >= s.addr && addr < s.addr+uint64(len(s.data)) {
				return s.data[addr-s.addr:]
			}
		}
		return nil
	}
	img := &elfImage{funcs: map[string]fixtureFunc{}}
	img.read = func(addr uint64, n int) []byte {
		b := at(addr)
		return b[:min(n, len(b))]
	}
	// Every function's start, to end each one's bytes at the next.
	var starts []uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			starts = append(starts, s.Value)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Size == 0 {
			continue
		}
		b := at(s.Value)
		if uint64(len(b)) < s.Size {
			continue
		}
		i := sort.Search(len(starts), func(i int) bool { return starts[i] > s.Value })
		if i < len(starts) && starts[i]-s.Value < uint64(len(b)) {
			b = b[:starts[i]-s.Value]
		}
		if _, dup := img.funcs[s.Name]; dup {
			continue
		}
		img.funcs[s.Name] = fixtureFunc{s.Value, int(s.Size), b}
		img.names = append(img.names, s.Name)
	}
	sort.Slice(img.names, func(i, j int) bool { return img.funcs[img.names[i]].addr < img.funcs[img.names[j]].addr })
	return img, nil
}

// buildMoveFixture assembles and links testdata/move.S.
func buildMoveFixture(t *testing.T) *elfImage {
	t.Helper()
	dir := t.TempDir()
	obj, exe := filepath.Join(dir, "move.o"), filepath.Join(dir, "move")
	for _, c := range [][]string{
		{"gcc", "-c", "testdata/move.S", "-o", obj},
		{"ld", "-o", exe, obj, "-Ttext=0x401000", "-e", "0"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	img, err := loadImage(exe)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestPlanPrologue plans every function of testdata/move.S: each is
// planned with the moves listed, or refused for its reason. Every plan's
// trampoline, at a near and a far address, and its jump are decoded
// back and checked (checkTrampoline).
func TestPlanPrologue(t *testing.T) {
	C, R, B, J := move.Copy, move.PCRel, move.Branch, move.CondJump
	cases := map[string]struct {
		err  error
		hows []move.How
		len  int // the plan's Len, when not the moved instructions' bytes
		nil  bool
	}{
		"copy":            {hows: []move.How{C, C, C}},
		"endbr":           {hows: []move.How{C, C, C}},
		"rip_lea":         {hows: []move.How{R}},
		"rip_mov":         {hows: []move.How{R}},
		"rip_back":        {hows: []move.How{R}},
		"rip_imm":         {hows: []move.How{R}},
		"rip_imm8":        {hows: []move.How{R}},
		"rip_jmp":         {hows: []move.How{R}},
		"jmp8":            {hows: []move.How{C, C, B}},
		"jmp32":           {hows: []move.How{C, B}},
		"call_rel":        {hows: []move.How{C, B}},
		"call_reg":        {hows: []move.How{C, C, B}},
		"call_rip":        {hows: []move.How{B}},
		"call_not_last":   {err: move.ErrUnmovable},
		"call_rsp":        {err: move.ErrUnmovable},
		"jcc8":            {hows: []move.How{C, J, C}},
		"jcc32":           {hows: []move.How{C, J}},
		"recurse":         {hows: []move.How{C, C, C}},
		"short_pad":       {hows: []move.How{C, C}, len: 5},
		"short_endbr_pad": {hows: []move.How{C}, len: 5},
		"short_jmp_int3":  {hows: []move.How{B}, len: 5},
		"short_nopad":     {err: move.ErrTooShort},
		"short_next":      {hows: []move.How{C, C, C}},
		"short_falls":     {err: move.ErrTooShort},
		"branch_into":     {err: move.ErrBranchInto},
		"loop_start":      {err: move.ErrBranchInto},
		"call_into":       {err: move.ErrBranchInto},
		"jt_pic_into":     {err: move.ErrJumpTable},
		"jt_pic_ok":       {hows: []move.How{C, C}},
		"jt_o0_into":      {err: move.ErrJumpTable},
		"jt_abs_into":     {err: move.ErrJumpTable},
		"jt_abs_ok":       {hows: []move.How{C, C, C}},
		"jt_saved_ok":     {hows: []move.How{C, C, R}},
		"jt_goto_into":    {err: move.ErrJumpTable},
		"tail_reg":        {hows: []move.How{C, C, C}},
		"unmov_loop":      {err: move.ErrUnmovable},
		"unmov_jrcxz":     {err: move.ErrUnmovable},
		"unmov_syscall":   {err: move.ErrUnmovable},
		"unmov_xbegin":    {err: move.ErrUnmovable},
		"unmov_avx":       {err: move.ErrUnmovable},
		"unmov_rdpkru":    {err: move.ErrUnmovable},
		"undecodable":     {err: move.ErrUndecodable},
		"avx":             {hows: []move.How{C, C, C}},
		"callee":          {err: move.ErrTooShort}, // the last function: no padding after it
	}
	img := buildMoveFixture(t)
	if len(img.names) == 0 {
		t.Fatal("testdata/move.S: no function")
	}
	for _, name := range img.names {
		if _, ok := cases[name]; !ok {
			t.Errorf("testdata/move.S: function %s has no case", name)
		}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f, ok := img.funcs[name]
			if !ok {
				t.Fatalf("no function %s in testdata/move.S", name)
			}
			p, err := PlanPrologue(f.code, f.addr, f.size, img.read)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("PlanPrologue = %+v, %v; want %v", p, err, c.err)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var hows []move.How
			moved := 0
			for _, in := range p.Insns {
				hows = append(hows, in.How)
				moved += in.Len
			}
			if !equalHows(hows, c.hows) {
				t.Errorf("moves %v, want %v (%+v)", hows, c.hows, p.Insns)
			}
			wantLen := moved
			if c.len != 0 {
				wantLen = c.len
			}
			if p.Len != wantLen || p.Len < JumpLen {
				t.Errorf("Len %d, want %d", p.Len, wantLen)
			}
			wantPatch := f.addr
			if IsEndbr64(f.code) {
				wantPatch += 4
			}
			if p.Func != f.addr || p.Patch != wantPatch || !bytes.Equal(p.Orig, f.code[p.Patch-f.addr:][:p.Len]) {
				t.Errorf("plan %+v: want Func 0x%x, Patch 0x%x, Orig the bytes there", p, f.addr, wantPatch)
			}
			// A trampoline close below and far above the function.
			for _, tr := range []uint64{f.addr - 0x10000, f.addr + 0x7fff0000} {
				checkTrampoline(t, &p, tr)
			}
		})
	}
	// A plan refuses a jump table it cannot read.
	f := img.funcs["jt_pic_ok"]
	if _, err := PlanPrologue(f.code, f.addr, f.size, nil); !errors.Is(err, move.ErrJumpTable) {
		t.Errorf("jt_pic_ok without read: %v, want %v", err, move.ErrJumpTable)
	}
}

func equalHows(a, b []move.How) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkTrampoline builds p's trampoline at tr and its jump, decodes them
// with x/arch and checks them: the site NOP first; each moved
// instruction the same operation with the same target or RIP-relative
// address at its new place (a call, its emulation with the function's own
// return address); the jump back to Resume; the jump at Patch to tr,
// then int3s.
func checkTrampoline(t *testing.T, p *move.Plan, tr uint64) {
	t.Helper()
	b, err := Trampoline(p, tr)
	if err != nil {
		t.Fatalf("Trampoline(0x%x): %v", tr, err)
	}
	if len(b) > TrampolineMax {
		t.Errorf("trampoline of %d bytes, over TrampolineMax %d", len(b), TrampolineMax)
	}
	if !bytes.Equal(b[:TrampolineSite], NOP5) {
		t.Fatalf("trampoline starts % x, want the site NOP5", b[:TrampolineSite])
	}
	pos := TrampolineSite
	next := func() (x86asm.Inst, uint64) {
		t.Helper()
		in, err := x86asm.Decode(b[pos:], 64)
		if err != nil && !IsEndbr64(b[pos:]) {
			t.Fatalf("trampoline +%d (% x): %v", pos, b[pos:], err)
		}
		if IsEndbr64(b[pos:]) {
			in.Len = 4
		}
		pc := tr + uint64(pos)
		pos += in.Len
		return in, pc
	}
	for _, mi := range p.Insns {
		orig := p.Orig[mi.Off : mi.Off+mi.Len]
		opc := p.Patch + uint64(mi.Off)
		want, err := Decode(orig)
		if err != nil {
			t.Fatal(err)
		}
		if mi.How == move.Branch && want.Op == x86asm.CALL {
			checkCallEmulation(t, b, &pos, tr, want, opc, p.Resume())
			continue
		}
		got, pc := next()
		switch mi.How {
		case move.Copy:
			if !bytes.Equal(b[pc-tr:pos], orig) {
				t.Errorf("copied % x, want % x", b[pc-tr:pos], orig)
			}
		case move.PCRel:
			if got.Op != want.Op || got.Len != want.Len || ripAddr(got, pc) != ripAddr(want, opc) {
				t.Errorf("%v at 0x%x names 0x%x; want %v naming 0x%x", got, pc, ripAddr(got, pc), want, ripAddr(want, opc))
			}
			for i, a := range want.Args {
				if _, mem := a.(x86asm.Mem); !mem && got.Args[i] != a {
					t.Errorf("%v: operand %d differs from %v", got, i, want)
				}
			}
		case move.Branch, move.CondJump:
			if got.Op != want.Op || relTarget(got, pc) != relTarget(want, opc) {
				t.Errorf("%v at 0x%x targets 0x%x; want %v to 0x%x", got, pc, relTarget(got, pc), want, relTarget(want, opc))
			}
		}
	}
	in, pc := next()
	if in.Op != x86asm.JMP || relTarget(in, pc) != p.Resume() || pos != len(b) {
		t.Errorf("trampoline ends %v at 0x%x (to 0x%x, %d bytes left), want jmp to Resume 0x%x", in, pc, relTarget(in, pc), len(b)-pos, p.Resume())
	}
	j, err := PrologueJump(p, tr)
	if err != nil {
		t.Fatal(err)
	}
	jin, err := x86asm.Decode(j, 64)
	if err != nil || len(j) != p.Len || jin.Op != x86asm.JMP || jin.Len != JumpLen || relTarget(jin, p.Patch) != tr ||
		!bytes.Equal(j[JumpLen:], bytes.Repeat([]byte{0xcc}, p.Len-JumpLen)) {
		t.Errorf("PrologueJump = % x (%v), want jmp 0x%x and int3 to %d bytes", j, jin, tr, p.Len)
	}
}

// checkCallEmulation decodes a call's emulation at b[*pos:] and checks
// it pushes the function's own return address and jumps where the call
// went.
func checkCallEmulation(t *testing.T, b []byte, pos *int, tr uint64, call x86asm.Inst, opc, resume uint64) {
	t.Helper()
	var ins []x86asm.Inst
	var pcs []uint64
	for range 6 {
		in, err := x86asm.Decode(b[*pos:], 64)
		if err != nil {
			t.Fatalf("call emulation +%d: %v", *pos, err)
		}
		ins, pcs = append(ins, in), append(pcs, tr+uint64(*pos))
		*pos += in.Len
	}
	want := []string{"push %rax", "push %rax", "", "mov %rax,0x8(%rsp)", "pop %rax", ""}
	for i, w := range want {
		if w != "" && x86asm.GNUSyntax(ins[i], pcs[i], nil) != w {
			t.Errorf("emulation %d: %v, want %s", i, ins[i], w)
		}
	}
	if ins[2].Op != x86asm.LEA || ins[2].Args[0] != x86asm.RAX || ripAddr(ins[2], pcs[2]) != resume {
		t.Errorf("emulation: %v loads 0x%x, want lea of the return address 0x%x", ins[2], ripAddr(ins[2], pcs[2]), resume)
	}
	j := ins[5]
	if j.Op != x86asm.JMP {
		t.Fatalf("emulation ends %v, want jmp", j)
	}
	switch a := call.Args[0].(type) {
	case x86asm.Rel:
		if relTarget(j, pcs[5]) != relTarget(call, opc) {
			t.Errorf("emulation jumps to 0x%x, the call went to 0x%x", relTarget(j, pcs[5]), relTarget(call, opc))
		}
	case x86asm.Mem:
		if a.Base == x86asm.RIP {
			if ripAddr(j, pcs[5]) != ripAddr(call, opc) {
				t.Errorf("emulation jumps through 0x%x, the call through 0x%x", ripAddr(j, pcs[5]), ripAddr(call, opc))
			}
		} else if j.Args[0] != a {
			t.Errorf("emulation %v, the call %v", j, call)
		}
	default:
		if j.Args[0] != a {
			t.Errorf("emulation %v, the call %v", j, call)
		}
	}
}

// relTarget is where the relative branch in at pc goes.
func relTarget(in x86asm.Inst, pc uint64) uint64 {
	r, ok := in.Args[0].(x86asm.Rel)
	if !ok {
		return 0
	}
	return pc + uint64(in.Len) + uint64(int64(r))
}

// ripAddr is the address in's RIP-relative operand names at pc.
func ripAddr(in x86asm.Inst, pc uint64) uint64 {
	m, ok := ripMem(in)
	if !ok {
		return 0
	}
	return pc + uint64(in.Len) + uint64(int64(int32(m.Disp))) // x/arch zero-extends a disp32
}

// TestTrampolineRange: a RIP-relative operand, a branch or the jump back
// beyond ±2 GiB of the trampoline is a *nops.RangeError.
func TestTrampolineRange(t *testing.T) {
	img := buildMoveFixture(t)
	for _, name := range []string{"rip_lea", "jmp8", "jcc8", "call_rel", "call_rip", "copy"} {
		f := img.funcs[name]
		p, err := PlanPrologue(f.code, f.addr, f.size, img.read)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Trampoline(&p, f.addr+0x90000000)
		var re *nops.RangeError
		if !errors.As(err, &re) {
			t.Errorf("%s: Trampoline 2 GiB away: %v, want a *nops.RangeError", name, err)
		}
		if _, err := PrologueJump(&p, f.addr+0x90000000); !errors.As(err, &re) {
			t.Errorf("%s: PrologueJump 2 GiB away: %v, want a *nops.RangeError", name, err)
		}
	}
}

// TestVexLen: the lengths of VEX and EVEX instructions, by hand, and
// what is no VEX instruction.
func TestVexLen(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want int
	}{
		{[]byte{0xc5, 0xf8, 0x77, 0xc3}, 3},                                   // vzeroupper
		{[]byte{0xc5, 0xfc, 0x77}, 3},                                         // vzeroall
		{[]byte{0xc5, 0xfe, 0x6f, 0x0f}, 4},                                   // vmovdqu (%rdi),%ymm1
		{[]byte{0xc5, 0xf9, 0x70, 0xd1, 0x1b}, 5},                             // vpshufd $0x1b,%xmm1,%xmm2
		{[]byte{0xc4, 0xe3, 0x6d, 0x0f, 0x5c, 0x4f, 0x40, 0x04}, 8},           // vpalignr $4,0x40(%rdi,%rcx,2),%ymm2,%ymm3
		{[]byte{0x62, 0xf3, 0x7d, 0x40, 0x3f, 0x8f, 0, 0x10, 0, 0, 0}, 11},    // vpcmpb $0,0x1000(%rdi),%zmm16,%k1
		{[]byte{0xc5, 0xfe, 0x6f, 0x05, 1, 2, 3, 4}, 8},                       // vmovdqu disp32(%rip),%ymm0
		{[]byte{0x67, 0xc5, 0xfe, 0x6f, 0x0f}, 5},                             // addr32 vmovdqu (%edi),%ymm1
		{[]byte{0x62, 0xf1, 0x7d, 0x48, 0x72, 0xe0, 0x05}, 7},                 // vpsrad $5,%zmm0,%zmm0
		{[]byte{0xc5, 0xfe}, -1},                                              // cut short
		{[]byte{0xc4, 0xe4, 0x7d, 0x6f, 0x0f}, -1},                            // map 4: none
		{[]byte{0x48, 0x89, 0xe5}, 0},                                         // mov %rsp,%rbp
		{[]byte{0x66, 0xc5, 0xfe, 0x6f, 0x0f}, 0},                             // 66 before VEX: not VEX (undefined)
		{[]byte{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x44, 0x24, 0x01}, 8},           // vmovups 0x40(%rsp),%zmm0 (disp8*N)
		{[]byte{0xc4, 0xe2, 0xf9, 0xf7, 0xc2}, 5},                             // shlx %rax,%rdx,%rax
		{[]byte{0xc4, 0xe3, 0xfb, 0xf0, 0xc7, 0x10}, 6},                       // rorx $0x10,%rdi,%rax
		{[]byte{0x62, 0xe1, 0xfe, 0x28, 0x6f, 0x04, 0x25, 0, 0, 0, 0}, 11},    // vmovdqu64 0x0,%ymm16 (SIB, no base)
		{[]byte{0x62, 0xf5, 0x7c, 0x48, 0x58, 0xc1}, 6},                       // vaddph %zmm1,%zmm0,%zmm0 (map 5)
		{[]byte{0x62, 0xf2, 0x7d, 0x48, 0x7c, 0xc7}, 6},                       // vpbroadcastd %edi,%zmm0
		{[]byte{0xc4, 0xe1, 0xf9, 0x7e, 0xc0, 0x90}, 5},                       // vmovq %xmm0,%rax
		{[]byte{0x62, 0xf1, 0xfd, 0x48, 0x7f, 0x84, 0x24, 0, 1, 0, 0, 0}, 11}, // vmovdqa64 %zmm0,0x100(%rsp)
	} {
		if got := vexLen(c.b); got != c.want {
			t.Errorf("vexLen(% x) = %d, want %d", c.b, got, c.want)
		}
		if c.want > 0 {
			// objdump agrees: the same length.
			if n, ok := objdumpLen(t, c.b); ok && n != c.want {
				t.Errorf("% x: objdump says %d bytes, vexLen %d", c.b, n, c.want)
			}
		}
	}
}

// objdumpLen returns objdump's length of the first instruction of b.
func objdumpLen(t *testing.T, b []byte) (int, bool) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "b.bin")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := exec.Command("objdump", "-D", "-b", "binary", "-m", "i386:x86-64", p).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump: %v\n%s", err, o)
	}
	out := string(o)
	// "   0:	c4 e3 6d 0f 5c 4f 40 	vpalignr ...", its bytes going on
	// 7 a line on lines of their own ("   7:	04 ").
	n, in := 0, false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 2 || !strings.HasSuffix(strings.TrimSpace(f[0]), ":") {
			continue
		}
		if strings.TrimSpace(f[0]) == "0:" {
			in = true
		} else if len(f) > 2 && in {
			break // the next instruction
		}
		if in {
			n += len(strings.Fields(f[1]))
		}
	}
	if n > 0 {
		return n, true
	}
	t.Fatalf("objdump of % x: no instruction at 0 in\n%s", b, out)
	return 0, false
}

// TestScanLengthsObjdump decodes every instruction objdump finds in
// glibc's .text (its AVX2 and EVEX string functions among them) as the
// function scan does and checks each length against objdump's: a
// length wrong by one byte would have the scan read the rest of a
// function out of step. Each instruction fastStep measures is read the
// same by x/arch (length, branch and its displacement, lea's register).
func TestScanLengthsObjdump(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	f, err := elf.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("objdump", "-d", "-j", ".text", "--no-show-raw-insn", libc).Output()
	if err != nil {
		t.Fatalf("objdump -d %s: %v", libc, err)
	}
	// Each instruction starts a line "  addr:\tmnemonic ..."; its length
	// is the distance to the next (within a function).
	type insn struct {
		addr uint64
		bad  bool
	}
	var ins []insn
	for _, l := range strings.Split(string(out), "\n") {
		if l == "" || l[0] != ' ' {
			ins = append(ins, insn{}) // a function's label or a blank: a break
			continue
		}
		a, rest, ok := strings.Cut(l, ":\t")
		if !ok {
			continue
		}
		addr, err := strconv.ParseUint(strings.TrimSpace(a), 16, 64)
		if err != nil {
			continue
		}
		ins = append(ins, insn{addr, strings.Contains(rest, "(bad)")})
	}
	var checked, vexes, undecoded, fast int
	for i := 0; i+1 < len(ins); i++ {
		cur, next := ins[i], ins[i+1]
		if cur.addr == 0 || next.addr == 0 || cur.bad {
			continue
		}
		want := int(next.addr - cur.addr)
		b := data[cur.addr-text.Addr:]
		s, err := scanStep(b)
		if err != nil {
			undecoded++ // the scan refuses such a function as undecodable
			continue
		}
		if s.n != want {
			t.Errorf("0x%x: % x: scan takes %d bytes, objdump %d", cur.addr, b[:want], s.n, want)
		}
		checked++
		if s.kind == stepVEX {
			vexes++
		}
		// The fast path reads what x/arch reads.
		if f, ok := fastStep(b); ok {
			fast++
			in, err := Decode(b)
			if err != nil {
				t.Errorf("0x%x: % x: fastStep reads %+v, x/arch fails: %v", cur.addr, b[:want], f, err)
			} else if x := stepOf(in); f != x {
				t.Errorf("0x%x: % x (%v): fastStep reads %+v, x/arch %+v", cur.addr, b[:want], in, f, x)
			}
		}
	}
	t.Logf("%s: %d instructions checked, %d of them VEX or EVEX, %d by the fast path, %d not decoded", libc, checked, vexes, fast, undecoded)
	if vexes < 1000 {
		t.Errorf("only %d VEX or EVEX instructions in %s: the test checks too little", vexes, libc)
	}
	if undecoded > checked/1000 {
		t.Errorf("%d instructions not decoded of %d", undecoded, checked)
	}
}

// BenchmarkPlanPrologue plans every exported function of glibc: ns/op
// is the time per function, the whole function's decoding included.
func BenchmarkPlanPrologue(b *testing.B) {
	img, err := loadImage("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Fatal(err)
	}
	fns := make([]fixtureFunc, 0, len(img.names))
	for _, n := range img.names {
		fns = append(fns, img.funcs[n])
	}
	b.ResetTimer()
	planned := 0
	for i := 0; i < b.N; i++ {
		f := fns[i%len(fns)]
		if _, err := PlanPrologue(f.code, f.addr, f.size, img.read); err == nil {
			planned++
		}
	}
	b.ReportMetric(float64(planned)/float64(b.N), "planned/op")
}

// TestMovedCodeRuns builds testdata/moverun.c (gcc -O0 and -O2, with
// -fcf-protection, PIE), plans every function of its .text, and has the
// program map the trampolines and write the jumps into itself
// (moverun.c says how) before it computes: its output must be the
// untouched run's, with every planned function patched. Planned
// functions run their moved code on each call (the trampoline's site is
// a NOP).
func TestMovedCodeRuns(t *testing.T) {
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "moverun")
			if out, err := exec.Command("gcc", opt, "-fcf-protection", "-fpie", "-pie", "-o", exe, "testdata/moverun.c").CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v\n%s", err, out)
			}
			img, err := loadImage(exe)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			text := f.Section(".text")
			var end uint64
			for _, p := range f.Progs {
				end = max(end, p.Vaddr+p.Memsz)
			}
			f.Close()
			base := (end + 2<<20) &^ (1<<20 - 1) // past the file's segments
			var plan strings.Builder
			var lines []string
			planned := map[string]bool{}
			tr := base
			for _, name := range img.names {
				fn := img.funcs[name]
				if fn.addr < text.Addr || fn.addr >= text.Addr+text.Size {
					continue
				}
				p, err := PlanPrologue(fn.code, fn.addr, fn.size, img.read)
				if err != nil {
					t.Logf("%s: %v", name, err)
					continue
				}
				tb, err := Trampoline(&p, tr)
				if err != nil {
					t.Fatal(err)
				}
				j, err := PrologueJump(&p, tr)
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, fmt.Sprintf("%x %x %x %x", p.Patch, j, tr, tb))
				planned[name] = true
				tr += TrampolineMax
			}
			fmt.Fprintf(&plan, "%x %x %x\n", img.funcs["main"].addr, base, (tr-base+4095)&^4095)
			plan.WriteString(strings.Join(lines, "\n") + "\n")
			for _, want := range []string{"add", "cond", "useglobal", "callfirst", "fact", "square", "fp", "name", "sw", "loopsum", "tail", "cmp", "callwrap", "retcheck", "main"} {
				if !planned[want] {
					t.Errorf("%s not planned", want)
				}
			}
			planFile := filepath.Join(dir, "plan")
			if err := os.WriteFile(planFile, []byte(plan.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			plain, err := exec.Command(exe).Output()
			if err != nil {
				t.Fatalf("%s: %v", exe, err)
			}
			cmd := exec.Command(exe, planFile)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			moved, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s with its prologues moved: %v\n%s", exe, err, stderr.String())
			}
			if !bytes.Equal(moved, plain) {
				t.Errorf("output with prologues moved:\n%s\nwant:\n%s", moved, plain)
			}
			if want := fmt.Sprintf("patched %d\n", len(lines)); stderr.String() != want {
				t.Errorf("stderr %q, want %q", stderr.String(), want)
			}
			t.Logf("%d functions moved", len(lines))
		})
	}
}
