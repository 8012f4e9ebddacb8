package nops

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
	"ftpatch/internal/isa"
)

const insnsFile = "testdata/insns.txt"

// An insnLine is one line of testdata/insns.txt: one instruction.
type insnLine struct {
	pos  string // file:line, for messages
	b    []byte
	arch arch.Arch
	asm  string // objdump's text, whitespace normalised
}

func (l insnLine) name() string { return fmt.Sprintf("%v/%x", l.arch, l.b) }

// readInsns parses testdata/insns.txt; a malformed line or an empty file
// fails the test.
func readInsns(t testing.TB) []insnLine {
	t.Helper()
	f, err := os.Open(insnsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []insnLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		pos := fmt.Sprintf("%s:%d", insnsFile, n)
		fields := strings.Split(text, "\t")
		if len(fields) != 3 {
			t.Fatalf("%s: want hex<TAB>arch<TAB>asm, got %d fields", pos, len(fields))
		}
		b, err := hex.DecodeString(fields[0])
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: bad hex %q: %v", pos, fields[0], err)
		}
		a, err := arch.Parse(fields[1])
		if err != nil {
			t.Fatalf("%s: %v", pos, err)
		}
		lines = append(lines, insnLine{pos: pos, b: b, arch: a, asm: normAsm(fields[2])})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Fatalf("%s: no instructions", insnsFile)
	}
	return lines
}

func normAsm(s string) string { return strings.Join(strings.Fields(s), " ") }

// decodeLen decodes the first instruction of b with x/arch and returns its
// length in bytes.
func decodeLen(a arch.Arch, b []byte) (int, error) {
	switch a {
	case arch.X86_64:
		inst, err := x86asm.Decode(b, 64)
		return inst.Len, err
	case arch.ARM64:
		if _, err := isa.DecodeARM64(b); err != nil {
			return 0, err
		}
		return 4, nil
	}
	return 0, fmt.Errorf("no decoder for %v", a)
}

// TestInsnsDecode checks that every line is exactly one instruction to the
// x/arch decoders.
func TestInsnsDecode(t *testing.T) {
	for _, l := range readInsns(t) {
		t.Run(l.name(), func(t *testing.T) {
			n, err := decodeLen(l.arch, l.b)
			if err != nil {
				t.Fatalf("%s: decode: %v", l.pos, err)
			}
			if n != len(l.b) {
				t.Errorf("%s: decoded %d of %d bytes as the first instruction", l.pos, n, len(l.b))
			}
		})
	}
}

// An encoding is one output of this package, named after the constant or
// call that produced it.
type encoding struct {
	name string
	arch arch.Arch
	b    []byte
}

// encodings returns every constant and a set of encoder outputs, from
// address 0 so that objdump's text for them is the data file's. Each must
// have a line in testdata/insns.txt.
func encodings(t testing.TB) []encoding {
	t.Helper()
	var out []encoding
	add := func(name string, a arch.Arch, b []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, encoding{name, a, b})
	}
	add("X86NOP5", arch.X86_64, X86NOP5, nil)
	add("X86NOP6", arch.X86_64, X86NOP6, nil)
	add("X86PushR10", arch.X86_64, X86PushR10, nil)
	add("X86PopR10", arch.X86_64, X86PopR10, nil)
	for _, style := range []X86NopStyle{X86P6, X86K8} {
		for n := 1; n <= x86MaxNop; n++ {
			b, err := X86Nop(n, style)
			add(fmt.Sprintf("X86Nop(%d, %v)", n, style), arch.X86_64, b, err)
		}
	}
	// X86JmpPad: the jump only; the padding is all 0x90 (a line above).
	for _, n := range []int{1, 2, 5, 6, x86JmpMaxNop} {
		b, err := X86Nop(n, X86JmpPad)
		add(fmt.Sprintf("X86Nop(%d, jmp) jump", n), arch.X86_64, b[:min(n, 2)], err)
	}
	call := func(name string, f func(site, target uint64) ([]byte, error), target uint64) {
		b, err := f(0, target)
		add(fmt.Sprintf("%s(0, %#x)", name, target), arch.X86_64, b, err)
	}
	call("X86Call", X86Call, 0x1000)
	call("X86Call", X86Call, 5+math.MaxInt32)
	call("X86Call", X86Call, (5-1<<31)&math.MaxUint64)
	call("X86Jmp", X86Jmp, 0x1000)
	call("X86Jmp", X86Jmp, -0x100&math.MaxUint64)
	call("X86Call6", X86Call6, 0x1000)
	call("X86Call6", X86Call6, 6+math.MaxInt32)

	for _, c := range []struct {
		name string
		w    uint32
	}{{"ARM64NOP", ARM64NOP}, {"ARM64MovX9X30", ARM64MovX9X30}, {"ARM64MovX0X30", ARM64MovX0X30}, {"ARM64BTIC", ARM64BTIC}} {
		add(c.name, arch.ARM64, ARM64Bytes(c.w), nil)
	}
	branch := func(name string, f func(pc, target uint64) (uint32, error), target uint64) {
		w, err := f(0, target)
		add(fmt.Sprintf("%s(0, %#x)", name, target), arch.ARM64, ARM64Bytes(w), err)
	}
	for _, target := range []uint64{0x1000, 1<<27 - 4, -1 << 27 & math.MaxUint64} {
		branch("ARM64BL", ARM64BL, target)
		branch("ARM64B", ARM64B, target)
	}
	branch("ARM64BL", ARM64BL, -4&math.MaxUint64)
	branch("ARM64B", ARM64B, -8&math.MaxUint64)
	return out
}

// TestInsnsCoverEncodings checks that every constant and encoder output
// named in encodings has its line in the data file, so that it is decoded
// by TestInsnsDecode and compared with objdump by TestInsnsObjdump.
func TestInsnsCoverEncodings(t *testing.T) {
	have := map[string]bool{}
	for _, l := range readInsns(t) {
		have[l.name()] = true
	}
	for _, e := range encodings(t) {
		t.Run(e.name, func(t *testing.T) {
			if l := (insnLine{b: e.b, arch: e.arch}); !have[l.name()] {
				t.Errorf("%s = % x (%v) has no line in %s", e.name, e.b, e.arch, insnsFile)
			}
		})
	}
}

// objdumps says which GNU objdump disassembles each architecture's raw
// bytes, and which Debian package provides it.
var objdumps = map[arch.Arch]struct {
	cmds    []string // tried in order
	machine string   // -m argument
	pkg     string
}{
	arch.X86_64: {[]string{"x86_64-linux-gnu-objdump", "objdump"}, "i386:x86-64", "binutils"},
	arch.ARM64:  {[]string{"aarch64-linux-gnu-objdump"}, "aarch64", "binutils-aarch64-linux-gnu"},
}

// TestInsnsObjdump is the differential test: GNU objdump must print each
// line's bytes as exactly one instruction with the line's text. A missing
// objdump fails the test (naming the package to install) rather than
// skipping it, so the check cannot silently stop running.
func TestInsnsObjdump(t *testing.T) {
	lines := readInsns(t)
	for _, a := range []arch.Arch{arch.X86_64, arch.ARM64} {
		t.Run(a.String(), func(t *testing.T) {
			od := objdumps[a]
			var cmd string
			for _, c := range od.cmds {
				if p, err := exec.LookPath(c); err == nil {
					cmd = p
					break
				}
			}
			if cmd == "" {
				t.Fatalf("%s not found: install the %s package", strings.Join(od.cmds, " or "), od.pkg)
			}
			dir := t.TempDir()
			for i, l := range lines {
				if l.arch != a {
					continue
				}
				t.Run(fmt.Sprintf("%x", l.b), func(t *testing.T) {
					file := filepath.Join(dir, fmt.Sprintf("%d.bin", i))
					if err := os.WriteFile(file, l.b, 0o644); err != nil {
						t.Fatal(err)
					}
					out, err := exec.Command(cmd, "-D", "-b", "binary", "-m", od.machine, "--insn-width=16", file).CombinedOutput()
					if err != nil {
						t.Fatalf("%s: %v\n%s", cmd, err, out)
					}
					insns := objdumpInsns(string(out))
					if len(insns) != 1 {
						t.Fatalf("%s: objdump printed %d instructions, want 1:\n%s", l.pos, len(insns), out)
					}
					if insns[0] != l.asm {
						t.Errorf("%s: objdump says %q, file says %q", l.pos, insns[0], l.asm)
					}
				})
			}
		})
	}
}

// objdumpInsns returns the instruction text of each line of objdump -D
// output, whitespace normalised. An instruction line is
// "   <addr>:\t<bytes>\t<asm>"; a line without the asm field is the
// continuation of a long instruction's bytes and counts as one more
// instruction, so that a wrapped line is noticed.
func objdumpInsns(out string) []string {
	var insns []string
	for _, line := range strings.Split(out, "\n") {
		addr, rest, ok := strings.Cut(line, ":\t")
		if !ok || strings.TrimLeft(strings.TrimSpace(addr), "0123456789abcdef") != "" {
			continue
		}
		_, asm, _ := strings.Cut(rest, "\t")
		insns = append(insns, normAsm(asm))
	}
	return insns
}
