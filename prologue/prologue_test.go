package prologue_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/elfx"
	"ftpatch/isa/move"
	"ftpatch/prologue"
)

// src has a function split by gcc into a hot part and a cold one
// (f.cold), a too-short one at -Os (tiny: imul; ret), and calls through
// the PLT.
const src = `#include <stdio.h>
__attribute__((cold, noinline)) void oops(const char *m, int x) { fprintf(stderr, "%s %d\n", m, x); }
__attribute__((noinline)) int f(int x) { int r = x * 2; if (__builtin_expect(x > 100, 0)) { oops("big", x); oops("bigger", x + 1); r = -r; for (int i = 0; i < x; i++) r += i * i; } return r; }
__attribute__((noinline)) int tiny(int x) { return x * 100; }
int main(int c, char **v) { printf("%d %d\n", f(c), tiny(c)); return 0; }
`

func build(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	c := filepath.Join(dir, "p.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", append(args, c, "-o", p)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return p
}

func find(t *testing.T, p string) *prologue.Table {
	t.Helper()
	f, err := elfx.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := prologue.Find(f)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// byName indexes a table's functions by name.
func byName(tab *prologue.Table) map[string]*prologue.Func {
	m := map[string]*prologue.Func{}
	for i := range tab.Funcs {
		m[tab.Funcs[i].Name] = &tab.Funcs[i]
	}
	return m
}

// TestFind: the functions of a program come from its symbol table, or,
// stripped, from its debug file by build-id, or else from .eh_frame;
// each gets a prologue site or the reason it gets none: the entry point,
// gcc's cold part (by name, or from .eh_frame as a range starting
// mid-frame), a function too short for the jump.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	full := build(t, dir, "full", "-O2", "-g", "-Wl,--build-id")
	short := build(t, dir, "short", "-Os", "-fno-asynchronous-unwind-tables")
	stripped := filepath.Join(dir, "stripped")
	if out, err := exec.Command("strip", "-o", stripped, full).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, out)
	}

	tab := find(t, full)
	fs := byName(tab)
	if tab.From != prologue.FromSymtab || tab.BuildID == "" {
		t.Errorf("from %q, build-id %q", tab.From, tab.BuildID)
	}
	for name, want := range map[string]error{"main": nil, "f": nil, "oops": nil, "_start": prologue.ErrEntryPoint, "f.cold": prologue.ErrNotEntry} {
		fn := fs[name]
		switch {
		case fn == nil:
			t.Errorf("%s not found", name)
		case want == nil && fn.What != prologue.Made:
			t.Errorf("%s: %v (%v), want a prologue site", name, fn.What, fn.Why)
		case want != nil && !errors.Is(fn.Why, want):
			t.Errorf("%s: %v (%v), want %v", name, fn.What, fn.Why, want)
		}
	}
	if fn := fs["main"]; fn != nil && (fn.Plan.Func != fn.Addr || fn.Plan.Len < 5 || len(fn.Plan.Insns) == 0) {
		t.Errorf("main's plan: %+v", fn.Plan)
	}
	if s := prologue.Summary(tab); !strings.Contains(s, "(from the symbol table; and 1 cold parts or stubs, not counted)") || !strings.Contains(s, "1 the entry point") {
		t.Errorf("summary: %s", s)
	}

	// Stripped: from the debug file where the distribution puts it...
	was := elfx.DebugRoot
	defer func() { elfx.DebugRoot = was }()
	elfx.DebugRoot = filepath.Join(dir, "debug")
	dbg := elfx.DebugPath(tab.BuildID)
	if err := os.MkdirAll(filepath.Dir(dbg), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("objcopy", "--only-keep-debug", full, dbg).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	tab = find(t, stripped)
	if tab.From != prologue.FromDebug || tab.Debug != dbg || byName(tab)["f"] == nil {
		t.Errorf("stripped with a debug file: from %q (%s), %d functions", tab.From, tab.Debug, len(tab.Funcs))
	}
	// ...else from .eh_frame: f.cold is a range starting mid-frame or
	// entered as f left it, the PLT's stubs are not functions.
	elfx.DebugRoot = filepath.Join(dir, "none")
	tab = find(t, stripped)
	if tab.From != prologue.FromEHFrame {
		t.Errorf("stripped: from %q", tab.From)
	}
	made, stubs := 0, tab.NotFunctions()
	for _, fn := range tab.Funcs {
		if fn.What == prologue.Made {
			made++
		}
		if !strings.HasPrefix(fn.Name, "sub_") && fn.Name != "main" {
			t.Errorf("%s: a stripped file's function named other than sub_ADDRESS", fn.Name)
		}
	}
	if made < 4 || stubs == 0 {
		t.Errorf("stripped: %d prologue sites, %d stubs; want 4 functions at least and the PLT", made, stubs)
	}

	// -Os: tiny is `imul; ret`, 4 bytes, with no padding after it.
	if fn := byName(find(t, short))["tiny"]; fn == nil || !errors.Is(fn.Why, move.ErrTooShort) {
		t.Errorf("-Os tiny: %+v", fn)
	}
}

// TestLandingPad: in an arm64 file marked for BTI, a function that
// starts with paciasp (clang's form: it is the landing pad) gets no
// site, since indirect calls would land on the jump; unmarked, it does.
func TestLandingPad(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join(dir, "l.c")
	if err := os.WriteFile(c, []byte("int g(int);\nint f(int x) { return g(x) + 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name  string
		flags []string
		want  error
	}{
		{"bti", []string{"-mbranch-protection=standard"}, prologue.ErrLandingPad},
		{"pac-ret", []string{"-mbranch-protection=pac-ret"}, nil},
	} {
		so := filepath.Join(dir, k.name+".so")
		argv := append([]string{"--target=aarch64-linux-gnu", "-O2", "-fpic", "-shared", "-nostdlib", "-fuse-ld=lld", "-Wl,--unresolved-symbols=ignore-all", c, "-o", so}, k.flags...)
		if out, err := exec.Command("clang", argv...).CombinedOutput(); err != nil {
			t.Fatalf("clang: %v\n%s", err, out)
		}
		fn := byName(find(t, so))["f"]
		switch {
		case fn == nil:
			t.Errorf("%s: f not found", k.name)
		case k.want == nil && fn.What != prologue.Made:
			t.Errorf("%s: f gets %v (%v), want a prologue site", k.name, fn.What, fn.Why)
		case k.want != nil && !errors.Is(fn.Why, k.want):
			t.Errorf("%s: f gets %v (%v), want %v", k.name, fn.What, fn.Why, k.want)
		}
	}
}
