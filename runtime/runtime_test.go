package runtime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
	"ftpatch/runtime/abi"
)

// TestNopBytes: the NOPs the C runtime writes are the ones package isa/x86
// defines, whose encodings its tests check with golang.org/x/arch; and
// the endbr64 it looks for before a site is the one isa/x86 knows.
func TestNopBytes(t *testing.T) {
	src, err := sources.ReadFile("src/arch/x86_64/site.c")
	if err != nil {
		t.Fatal(err)
	}
	style := func(n int, st x86.NopStyle) []byte {
		b, err := x86.Nop(n, st)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name string
		want []byte
	}{
		{"nop5", x86.NOP5}, {"nop6", x86.NOP6},
		{"k8nop5", style(5, x86.K8)}, {"k8nop6", style(6, x86.K8)},
		{"jmpnop5", style(5, x86.JmpPad)}, {"jmpnop6", style(6, x86.JmpPad)},
		{"endbr64", x86.Endbr64},
	} {
		m := regexp.MustCompile(`static const unsigned char ` + c.name + `\[\d+\] = \{([^}]*)\}`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("site.c defines no %s", c.name)
		}
		var got []byte
		for _, f := range strings.Split(string(m[1]), ",") {
			v, err := strconv.ParseUint(strings.TrimSpace(f), 0, 8)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got = append(got, byte(v))
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("site.c %s = % x, package isa/x86 has % x", c.name, got, c.want)
		}
	}
}

// TestBuild builds the archive and checks it holds the hooks and the
// load-time pass; a compiler that fails gives an error naming the
// command and its output.
func TestBuild(t *testing.T) {
	// The names package abi gives (and its test checks against the
	// header) are the symbols the runtime and the module stub define.
	var x86 []string
	for i := range abi.NumTargets {
		x86 = append(x86, i.String())
	}
	arm64 := []string{abi.ARM64Mcount, abi.ARM64Caller, abi.ARM64McountCaller, abi.Stub}
	dir := t.TempDir()
	for _, a := range []struct {
		arch    arch.Arch
		targets []string
	}{{arch.X86_64, x86}, {arch.ARM64, arm64}} {
		lib, err := Build(context.Background(), Options{Dir: filepath.Join(dir, a.arch.String()), Arch: a.arch})
		if err != nil {
			t.Fatalf("%v: %v", a.arch, err)
		}
		b, err := os.ReadFile(lib)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(abi.ConfigSection+"\x00")) {
			t.Errorf("%s has no config record (section %s)", lib, abi.ConfigSection)
		}
		rt := append([]string{abi.Init, abi.ModuleRegister, abi.ModuleUnregister}, a.targets...)
		if a.arch == arch.X86_64 {
			rt = append(rt, abi.GraphEnter, abi.GraphLeave, abi.PrologueGraphEnter, abi.PrologueGraphLeave) // x86-64's per-site graph trampolines
		} else {
			rt = append(rt, abi.PrologueCaller, abi.PrologueStub) // arm64's prologue sites' entries
		}
		for _, c := range []struct {
			lib  string
			syms []string
		}{
			{lib, rt},
			{ModulePath(lib), append([]string{abi.ModuleInit, abi.ModuleSlots}, a.targets...)},
		} {
			out, err := exec.Command("nm", "--defined-only", c.lib).Output()
			if err != nil {
				t.Fatalf("nm %s (binutils: scripts/deps.sh installs it): %v", c.lib, err)
			}
			defined := map[string]bool{}
			for line := range strings.Lines(string(out)) {
				if f := strings.Fields(line); len(f) == 3 && (f[1] == "T" || f[1] == "t" || f[1] == "D" || f[1] == "d") {
					defined[f[2]] = true
				}
			}
			for _, sym := range c.syms {
				if !defined[sym] {
					t.Errorf("%v: %s does not define %s", a.arch, c.lib, sym)
				}
			}
		}
	}
	_, err := Build(context.Background(), Options{Dir: dir, CC: []string{"false"}})
	if err == nil || !strings.Contains(err.Error(), "compiling the runtime (false ") {
		t.Errorf("a failing compiler gave %v", err)
	}
	if _, err := Build(context.Background(), Options{Dir: dir, Arch: arch.Unknown + 99}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an architecture without a port gave %v, want ErrUnsupported", err)
	}
	if Version() != Version() || len(Version()) != 16 {
		t.Errorf("Version() = %q, want a stable 16-digit hash", Version())
	}
}

// TestArm64Words: the arm64 instructions the C runtime reads and writes
// (arch/arm64/insn.h) are the ones package isa/arm64 defines, decoded back
// with golang.org/x/arch as what their names say; and the bl the runtime
// encodes is the one package isa/arm64 encodes.
func TestArm64Words(t *testing.T) {
	src, err := sources.ReadFile("src/arch/arm64/insn.h")
	if err != nil {
		t.Fatal(err)
	}
	bl, err := arm64.BL(0x1000, 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want uint32
		asm  string // as arm64asm prints it (the BTI hints by number)
	}{
		{"ARM64_NOP", arm64.NOP, "NOP "},
		{"ARM64_MOV_X9_X30", arm64.MovX9X30, "MOV X9, X30"},
		{"ARM64_MOV_X17_X30", arm64.MovX17X30, "MOV X17, X30"},
		{"ARM64_MOV_X0_X30", arm64.MovX0X30, "MOV X0, X30"},
		{"ARM64_BTI_C", arm64.BTIC, "HINT #0x22"},   // bti c: x/arch prints the hint's number
		{"ARM64_BTI_JC", arm64.BTIJC, "HINT #0x26"}, // bti jc
		{"ARM64_BL_OP", bl, "BL .+0x0"},
		{"ARM64_LDR_X16_8", arm64.LdrX16Lit8, "LDR X16, .+0x8"}, // a veneer's (veneer.c)
		{"ARM64_BR_X16", arm64.BrX16, "BR X16"},
	} {
		m := regexp.MustCompile(`#define ` + c.name + ` (0x[0-9a-f]+)u`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("arch/arm64/insn.h defines no %s", c.name)
		}
		got, err := strconv.ParseUint(string(m[1]), 0, 32)
		if err != nil {
			t.Fatal(err)
		}
		if uint32(got) != c.want {
			t.Errorf("arch/arm64/insn.h %s = %#x, package isa/arm64 has %#x", c.name, got, c.want)
		}
		in, err := arm64.DecodeWord(uint32(got))
		if err != nil || in.String() != c.asm {
			t.Errorf("%s = %#x decodes as %q (%v), want %q", c.name, got, in.String(), err, c.asm)
		}
	}
}
