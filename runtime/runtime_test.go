package runtime

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/isa/x86"
	"ftpatch/runtime/abi"
)

// TestNopBytes: the NOPs the C runtime writes are the ones package isa/x86
// defines, whose encodings its tests check with golang.org/x/arch; and
// the endbr64 it looks for before a site is the one isa/x86 knows.
func TestNopBytes(t *testing.T) {
	src, err := sources.ReadFile("src/x86_64/site.c")
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
	dir := t.TempDir()
	lib, err := Build(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(abi.ConfigSection+"\x00")) {
		t.Errorf("%s has no config record (section %s)", lib, abi.ConfigSection)
	}
	// The names package abi gives (and its test checks against the
	// header) are the symbols the runtime and the module stub define.
	var targets []string
	for i := range abi.NumTargets {
		targets = append(targets, i.String())
	}
	for _, c := range []struct {
		lib  string
		syms []string
	}{
		{lib, append([]string{abi.Init, abi.ModuleRegister, abi.ModuleUnregister, abi.GraphEnter, abi.GraphLeave}, targets...)},
		{ModulePath(lib), append([]string{abi.ModuleInit, abi.ModuleSlots}, targets...)},
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
				t.Errorf("%s does not define %s", c.lib, sym)
			}
		}
	}
	_, err = Build(context.Background(), Options{Dir: dir, CC: []string{"false"}})
	if err == nil || !strings.Contains(err.Error(), "compiling the runtime (false ") {
		t.Errorf("a failing compiler gave %v", err)
	}
	if _, err := Build(context.Background(), Options{Dir: dir, Arch: arch.ARM64}); err == nil {
		t.Error("arm64 built, but the runtime has no arm64 port yet: the error should say so")
	}
	if Version() != Version() || len(Version()) != 16 {
		t.Errorf("Version() = %q, want a stable 16-digit hash", Version())
	}
}
