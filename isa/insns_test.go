package isa

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
	"ftpatch/isa/arm64"
	"ftpatch/isa/internal/insns"
	"ftpatch/isa/x86"
)

const insnsFile = "testdata/insns.txt"

// readInsns reads the data file.
func readInsns(t testing.TB) []insns.Line { return insns.Read(t, insnsFile) }

// decodeLen decodes the first instruction of b with x/arch and returns its
// length in bytes.
func decodeLen(a arch.Arch, b []byte) (int, error) {
	switch a {
	case arch.X86_64:
		inst, err := x86asm.Decode(b, 64)
		return inst.Len, err
	case arch.ARM64:
		if _, err := arm64.Decode(b); err != nil {
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
		t.Run(l.Name(), func(t *testing.T) {
			n, err := decodeLen(l.Arch, l.B)
			if err != nil {
				t.Fatalf("%s: decode: %v", l.Pos, err)
			}
			if n != len(l.B) {
				t.Errorf("%s: decoded %d of %d bytes as the first instruction", l.Pos, n, len(l.B))
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
	add("X86NOP5", arch.X86_64, x86.NOP5, nil)
	add("X86NOP6", arch.X86_64, x86.NOP6, nil)
	add("X86PushR10", arch.X86_64, x86.PushR10, nil)
	add("X86PopR10", arch.X86_64, x86.PopR10, nil)
	for _, style := range []x86.NopStyle{x86.P6, x86.K8} {
		for n := 1; n <= x86.MaxNop; n++ {
			b, err := x86.Nop(n, style)
			add(fmt.Sprintf("X86Nop(%d, %v)", n, style), arch.X86_64, b, err)
		}
	}
	// x86.JmpPad: the jump only; the padding is all 0x90 (a line above).
	for _, n := range []int{1, 2, 5, 6, x86.MaxJmpNop} {
		b, err := x86.Nop(n, x86.JmpPad)
		add(fmt.Sprintf("X86Nop(%d, jmp) jump", n), arch.X86_64, b[:min(n, 2)], err)
	}
	call := func(name string, f func(site, target uint64) ([]byte, error), target uint64) {
		b, err := f(0, target)
		add(fmt.Sprintf("%s(0, %#x)", name, target), arch.X86_64, b, err)
	}
	call("X86Call", x86.Call, 0x1000)
	call("X86Call", x86.Call, 5+math.MaxInt32)
	call("X86Call", x86.Call, (5-1<<31)&math.MaxUint64)
	call("X86Jmp", x86.Jmp, 0x1000)
	call("X86Jmp", x86.Jmp, -0x100&math.MaxUint64)
	call("X86Call6", x86.Call6, 0x1000)
	call("X86Call6", x86.Call6, 6+math.MaxInt32)

	for _, c := range []struct {
		name string
		w    uint32
	}{{"ARM64NOP", arm64.NOP}, {"ARM64MovX9X30", arm64.MovX9X30}, {"ARM64MovX0X30", arm64.MovX0X30}, {"ARM64BTIC", arm64.BTIC}} {
		add(c.name, arch.ARM64, arm64.Bytes(c.w), nil)
	}
	branch := func(name string, f func(pc, target uint64) (uint32, error), target uint64) {
		w, err := f(0, target)
		add(fmt.Sprintf("%s(0, %#x)", name, target), arch.ARM64, arm64.Bytes(w), err)
	}
	for _, target := range []uint64{0x1000, 1<<27 - 4, -1 << 27 & math.MaxUint64} {
		branch("ARM64BL", arm64.BL, target)
		branch("ARM64B", arm64.B, target)
	}
	branch("ARM64BL", arm64.BL, -4&math.MaxUint64)
	branch("ARM64B", arm64.B, -8&math.MaxUint64)
	return out
}

// TestInsnsCoverEncodings checks that every constant and encoder output
// named in encodings has its line in the data file, so that it is decoded
// by TestInsnsDecode and compared with objdump by TestInsnsObjdump.
func TestInsnsCoverEncodings(t *testing.T) {
	have := map[string]bool{}
	for _, l := range readInsns(t) {
		have[l.Name()] = true
	}
	for _, e := range encodings(t) {
		t.Run(e.name, func(t *testing.T) {
			if l := (insns.Line{B: e.b, Arch: e.arch}); !have[l.Name()] {
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
				if l.Arch != a {
					continue
				}
				t.Run(fmt.Sprintf("%x", l.B), func(t *testing.T) {
					file := filepath.Join(dir, fmt.Sprintf("%d.bin", i))
					if err := os.WriteFile(file, l.B, 0o644); err != nil {
						t.Fatal(err)
					}
					out, err := exec.Command(cmd, "-D", "-b", "binary", "-m", od.machine, "--insn-width=16", file).CombinedOutput()
					if err != nil {
						t.Fatalf("%s: %v\n%s", cmd, err, out)
					}
					asms := objdumpInsns(string(out))
					if len(asms) != 1 {
						t.Fatalf("%s: objdump printed %d instructions, want 1:\n%s", l.Pos, len(asms), out)
					}
					if asms[0] != l.Asm {
						t.Errorf("%s: objdump says %q, file says %q", l.Pos, asms[0], l.Asm)
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
	var asms []string
	for _, line := range strings.Split(out, "\n") {
		addr, rest, ok := strings.Cut(line, ":\t")
		if !ok || strings.TrimLeft(strings.TrimSpace(addr), "0123456789abcdef") != "" {
			continue
		}
		_, asm, _ := strings.Cut(rest, "\t")
		asms = append(asms, insns.NormAsm(asm))
	}
	return asms
}
