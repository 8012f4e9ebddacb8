package patch

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/internal/sitetest"
	"ftpatch/internal/untouched"
	"ftpatch/isa/x86"
	"ftpatch/outfile"
	"ftpatch/runtime/abi"
	"ftpatch/sites"
)

func list(t testing.TB, text string) *funclist.List {
	t.Helper()
	l, err := funclist.Parse("list", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func load(t testing.TB, path string) *Binary {
	t.Helper()
	f, err := elfx.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// symbols maps the names of defined symbols of the file at path to their
// addresses, read with debug/elf: an independent account of where the
// trampolines are.
func symbols(t testing.TB, path string) map[string]uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && s.Value != 0 {
			out[s.Name] = s.Value
		}
	}
	return out
}

// siteBytes reads the sites of the linked file at path, the bytes each
// holds, by site, and its symbols' addresses (debug/elf's: an account
// independent of the patcher's).
func siteBytes(t *testing.T, path string) (*sites.Linked, [][]byte, map[string]uint64) {
	t.Helper()
	f, l := sitetest.Linked(t, path)
	codes := make([][]byte, len(l.Sites))
	for i, s := range l.Sites {
		code, err := f.ReadAt(elfx.Addr(s.Off), uint64(s.Len))
		if err != nil {
			t.Fatal(err)
		}
		codes[i] = code
	}
	return l, codes, symbols(t, path)
}

// checkSites decodes every table entry of the file at path with x/arch:
// the sites of the functions in calls must be one call to the trampoline
// named by want(kind, len), every other one a single P6 NOP of its
// length. It returns the number of calls.
func checkSites(t *testing.T, path string, calls map[string]bool, want func(sites.Kind, int) string) int {
	t.Helper()
	l, codes, syms := siteBytes(t, path)
	n := 0
	for i, s := range l.Sites {
		code := codes[i]
		in, err := x86asm.Decode(code, 64)
		if err != nil || in.Len != s.Len {
			t.Errorf("%s: site 0x%x (%s): % x decodes as %v (%d bytes), want one %d-byte instruction", path, s.Off, s.Func, code, in, in.Len, s.Len)
			continue
		}
		if !calls[s.Func] {
			if in.Op != x86asm.NOP || !(bytes.Equal(code, x86.NOP5) || bytes.Equal(code, x86.NOP6)) {
				t.Errorf("%s: site 0x%x (%s): %v (% x), want the P6 NOP", path, s.Off, s.Func, in, code)
			}
			continue
		}
		rel, ok := in.Args[0].(x86asm.Rel)
		name := want(s.Kind, s.Len)
		if in.Op != x86asm.CALL || !ok || s.Off+uint64(in.Len)+uint64(int64(rel)) != syms[name] {
			t.Errorf("%s: site 0x%x (%s): %v (% x), want a call to %s at 0x%x", path, s.Off, s.Func, in, code, name, syms[name])
		}
		n++
	}
	return n
}

// trampName is what an enabled site calls, from the runtime's own
// description (entry.S): entry sites ftrace_callerN, -pg sites
// ftrace_mcount_callerN, N the site's length; the empty tracer's
// ftrace_stub.
func trampName(tr Tracer) func(sites.Kind, int) string {
	return func(k sites.Kind, n int) string {
		switch {
		case tr == TracerNop:
			return "ftrace_stub"
		case k == sites.X86Mcount:
			return fmt.Sprintf("ftrace_mcount_caller%d", n)
		}
		return fmt.Sprintf("ftrace_caller%d", n)
	}
}

// TestEnable: for every build and tracer, enable writes exactly the
// listed functions' sites as calls to their trampolines and every other
// site as a NOP (decoded with x/arch), records it, passes Verify; doing it
// again changes nothing; disable returns every site, or the listed ones,
// to NOPs, and Verify still passes.
func TestEnable(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			prog := b.make(t, dir)
			in := untouched.Take(t, prog)
			bin := load(t, prog)
			if r := bin.Verify(); !r.OK() || r.Config.Patched() || r.Sites != len(bin.Slots) {
				t.Errorf("as linked: %+v", r)
			}
			chosen := map[string]bool{"fib": true, "helper": true, "make_pair": true}
			for _, tr := range []Tracer{TracerFunction, TracerGraph, TracerNop} {
				out := filepath.Join(dir, "out-"+tr.String())
				res, err := Run(Options{Path: prog, Out: out, Request: Request{Op: Enable, Tracer: tr, List: list(t, "fib\nhelper\nmake_*\n!main\n"), Inputs: "list"}})
				if err != nil {
					t.Fatal(err)
				}
				in.Check(t, "the patcher")
				if res.Written != out || len(res.Plan.Unmatched) != 0 || res.Plan.Funcs != 3 {
					t.Errorf("%v: result %+v, plan %+v", tr, res, res.Plan)
				}
				if n := checkSites(t, out, chosen, trampName(tr)); n != 3 {
					t.Errorf("%v: %d sites call the runtime, want 3", tr, n)
				}
				ob := load(t, out)
				c := ob.Config
				if c.Tracer != tr || !c.Patched() || c.Enabled != 3 || c.Sites != uint64(len(ob.Slots)) || c.ListHash == 0 || c.TextHash != bin.textHash() {
					t.Errorf("%v: config %+v; %d slots, text hash of the input %x", tr, c, len(ob.Slots), bin.textHash())
				}
				if r := ob.Verify(); !r.OK() || r.Enabled != 3 {
					t.Errorf("%v: verify: %+v", tr, r)
				}
				// The same list again, in place: nothing to write, and
				// nothing written.
				same := untouched.Take(t, out)
				res, err = Run(Options{Path: out, Request: Request{Op: Enable, Tracer: tr, List: list(t, "!main\nmake_*\nhelper\nfib\n"), Inputs: "list"}})
				if err != nil || res.Written != "" || !res.Plan.Unchanged {
					t.Errorf("%v: enabling again: %v, %+v", tr, err, res)
				}
				same.Check(t, "the patcher")
			}

			// Disable one function, then everything.
			out := filepath.Join(dir, "out-function")
			part := filepath.Join(dir, "part")
			if _, err := Run(Options{Path: out, Out: part, Request: Request{Op: Disable, List: list(t, "fib\n"), Inputs: "list"}}); err != nil {
				t.Fatal(err)
			}
			delete(chosen, "fib")
			if n := checkSites(t, part, chosen, trampName(TracerFunction)); n != 2 {
				t.Errorf("after disabling fib, %d sites call the runtime, want 2", n)
			}
			if pb := load(t, part); !pb.Verify().OK() || pb.Config.Tracer != TracerFunction || pb.Config.Enabled != 2 {
				t.Errorf("after disabling fib: config %+v, %v", pb.Config, pb.Verify().Problems)
			}
			none := filepath.Join(dir, "none")
			if _, err := Run(Options{Path: part, Out: none, Request: Request{Op: Disable}}); err != nil {
				t.Fatal(err)
			}
			if n := checkSites(t, none, nil, nil); n != 0 {
				t.Errorf("after disable, %d sites call the runtime", n)
			}
			nb := load(t, none)
			if r := nb.Verify(); !r.OK() || nb.Config.Tracer != TracerNone || nb.Config.Enabled != 0 || !nb.Config.Patched() {
				t.Errorf("after disable: config %+v, %v", nb.Config, r.Problems)
			}
			// Dead entries (the weak function other.c overrides) are NOPs
			// too: the runtime must find nothing unexpected in the table.
			for _, s := range nb.Slots {
				if s.State != sites.StateNop {
					t.Errorf("after disable, slot 0x%x (%q) holds a %v", s.Addr, s.Func, s.State)
				}
			}
		})
	}
}

// TestTraceDir: enable records the trace location asked for in the
// config record, and enabling again with another one rewrites the
// record; disable keeps it while some site calls the runtime, and drops
// it with the last. CheckTraceDir takes only clean absolute paths that
// fit the record.
func TestTraceDir(t *testing.T) {
	dir := t.TempDir()
	prog := builds[0].make(t, dir)
	enabled := filepath.Join(dir, "enabled")
	req := Request{Op: Enable, Tracer: TracerGraph, List: list(t, "fib\nhelper\n"), Inputs: "list", TraceDir: "/var/trace/prog"}
	for i, want := range []struct {
		dir     string
		written bool
	}{{"/var/trace/prog", true}, {"/var/trace/prog", false}, {"/srv/t", true}} {
		req.TraceDir = want.dir
		path, out := prog, enabled
		if i > 0 {
			path, out = enabled, ""
		}
		res, err := Run(Options{Path: path, Out: out, Request: req})
		if err != nil || (res.Written != "") != want.written {
			t.Fatalf("enable --trace-dir %s: %v, written %q", want.dir, err, res.Written)
		}
		if b := load(t, enabled); b.Config.TraceDir != want.dir || !b.Verify().OK() {
			t.Errorf("enable --trace-dir %s: config %+v, %v", want.dir, b.Config, b.Verify().Problems)
		}
	}
	part, none := filepath.Join(dir, "part"), filepath.Join(dir, "none")
	for _, c := range []struct {
		in, out, list, want string
	}{{enabled, part, "fib\n", "/srv/t"}, {part, none, "helper\n", ""}} {
		if _, err := Run(Options{Path: c.in, Out: c.out, Request: Request{Op: Disable, List: list(t, c.list), Inputs: "list"}}); err != nil {
			t.Fatal(err)
		}
		if b := load(t, c.out); b.Config.TraceDir != c.want {
			t.Errorf("disable %q: trace location %q, want %q", c.list, b.Config.TraceDir, c.want)
		}
	}
	for dir, ok := range map[string]bool{
		"/var/trace/prog": true, "/t": true, "/": false, "var/trace": false, "/var//trace": false, "/var/trace/": false,
		"/var/../trace": false, "/var/./trace": false, "/" + strings.Repeat("x", TraceDirMax-2): true,
		"/" + strings.Repeat("x", TraceDirMax-1): false, "/a\x00b": false,
	} {
		if err := CheckTraceDir(dir); (err == nil) != ok || (err != nil && !errors.Is(err, ErrTraceDir)) {
			t.Errorf("CheckTraceDir(%.40q) = %v, want ok %v", dir, err, ok)
		}
	}
}

// TestConfigLayout: the record Go writes is the C struct the runtime
// reads, field by field, at the offsets and sizes package abi gives
// (whose TestHeader checks them against the C compiler's layout).
func TestConfigLayout(t *testing.T) {
	want := map[string][2]int{
		"magic": {abi.CfgMagicOff, 8}, "size": {abi.CfgSizeOff, 4}, "tracer": {abi.CfgTracerOff, 4},
		"flags": {abi.CfgFlagsOff, 4}, "reserved": {abi.CfgReservedOff, 4}, "sites": {abi.CfgSitesOff, 8},
		"enabled": {abi.CfgEnabledOff, 8}, "list_hash": {abi.CfgListHashOff, 8}, "text_hash": {abi.CfgTextHashOff, 8},
		"trace_dir": {abi.CfgTraceDirOff, abi.TraceDirMax}, "total": {abi.ConfigSize, 0},
	}
	// Where Go puts each field: marshal a record whose every field holds
	// a distinct value, and find it.
	cfg := Config{Tracer: 0x11111111, Flags: 0x22222222, Reserved: 0x33333333, Sites: 0x4444444444444444,
		Enabled: 0x5555555555555555, ListHash: 0x6666666666666666, TextHash: 0x7777777777777777, TraceDir: "/var/trace/" + strings.Repeat("x", TraceDirMax-12)}
	img := cfg.marshal()
	find := func(v uint64, n int) int {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, v)
		return bytes.Index(img, b[:n])
	}
	goAt := map[string][2]int{
		"magic": {bytes.Index(img, configMagic[:]), 8}, "size": {find(configSize, 4), 4},
		"tracer": {find(0x11111111, 4), 4}, "flags": {find(0x22222222, 4), 4}, "reserved": {find(0x33333333, 4), 4},
		"sites": {find(0x4444444444444444, 8), 8}, "enabled": {find(0x5555555555555555, 8), 8},
		"list_hash": {find(0x6666666666666666, 8), 8}, "text_hash": {find(0x7777777777777777, 8), 8},
		"trace_dir": {bytes.Index(img, []byte(cfg.TraceDir)), TraceDirMax}, "total": {len(img), 0},
	}
	for name, w := range want {
		if g := goAt[name]; g != w {
			t.Errorf("%s: C has offset %d size %d, Go %d %d", name, w[0], w[1], g[0], g[1])
		}
	}
	// And the record as linked parses as "not patched".
	if got, err := parseConfig(append(append([]byte{}, configMagic[:]...), binary.LittleEndian.AppendUint32(make([]byte, 0, 48), configSize)...)); err == nil {
		t.Errorf("a short record parsed: %+v", got)
	}
	back, err := parseConfig(img)
	if err != nil || back != cfg {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

// TestVerifyProblems: a patched file changed behind ftpatch's back gets
// one problem naming each change.
func TestVerifyProblems(t *testing.T) {
	dir := t.TempDir()
	prog := builds[0].make(t, dir)
	out := filepath.Join(dir, "enabled")
	if _, err := Run(Options{Path: prog, Out: out, Request: Request{Op: Enable, List: list(t, "fib\nhelper\n"), Inputs: "list"}}); err != nil {
		t.Fatal(err)
	}
	good := load(t, out)
	syms := symbols(t, out)
	slot := func(fn string) *Slot {
		for i := range good.Slots {
			if good.Slots[i].Func == fn {
				return &good.Slots[i]
			}
		}
		t.Fatalf("no site in %s", fn)
		return nil
	}
	fib, mainSite := slot("fib"), slot("main")
	call6 := func(s *Slot, target string) []byte {
		b, err := x86.Call6(s.Addr, syms[target])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cfg := func(edit func(*Config)) func([]byte) {
		return func(img []byte) {
			c := good.Config
			edit(&c)
			copy(img[good.configOff:], c.marshal())
		}
	}
	for _, c := range []struct {
		name   string
		tamper func(img []byte)
		want   []string // one problem each
	}{
		{"a byte of code", func(img []byte) { img[uint64(mainSite.Off)+uint64(mainSite.Len)+12] ^= 0xff }, []string{"executable code outside the sites changed"}},
		{"wrong trampoline", func(img []byte) { copy(img[fib.Off:], call6(fib, "ftrace_mcount_caller6")) },
			[]string{"in fib: calls ftrace_mcount_caller6; a 6-byte fentry site traced by function calls ftrace_caller6"}},
		{"hook call left", func(img []byte) { copy(img[mainSite.Off:], call6(mainSite, "__fentry__")) },
			[]string{"in main: holds the compiler's call to __fentry__"}},
		{"K8 NOP", func(img []byte) { copy(img[mainSite.Off:], []byte{0x66, 0x66, 0x66, 0x66, 0x66, 0x90}) },
			[]string{"in main: holds the NOP 66 66 66 66 66 90, ftpatch writes 66 0f 1f 44 00 00"}},
		{"enabled count", cfg(func(c *Config) { c.Enabled = 5 }), []string{"records 5 enabled sites, 2 call the runtime"}},
		{"site count", cfg(func(c *Config) { c.Sites++ }), []string{"the table lists"}},
		{"not marked patched", cfg(func(c *Config) { c.Flags = 0 }), []string{"calls ftrace_caller6, but the config record says the file is not patched", "calls ftrace_caller6, but", "not marked patched, yet holds tracer function"}},
		{"unknown flag", cfg(func(c *Config) { c.Flags |= 8 }), []string{"unknown flags 0x9"}},
		{"tracer without sites", cfg(func(c *Config) { c.Tracer = TracerNone }), []string{"tracer none with 2 enabled sites"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := bytes.Clone(good.File.Data)
			c.tamper(img)
			f, err := elfx.Parse("tampered", img)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Load(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := b.Verify()
			var got []string
			for _, p := range r.Problems {
				got = append(got, p.String())
			}
			if len(got) != len(c.want) {
				t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d: %q, want %q", i, got[i], w)
				}
			}
		})
	}
}

// TestErrors: each bad input gets an error that says what is wrong (and
// how to fix it), and leaves every file as it was: no byte, no mtime
// changed, no temporary left behind.
func TestErrors(t *testing.T) {
	need(t, "gcc")
	base := t.TempDir()
	good := builds[0].make(t, filepath.Join(base))
	goodData, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	enable := func(globs string) Request {
		return Request{Op: Enable, List: list(t, globs), Inputs: "list"}
	}
	type input func(t *testing.T, dir string) string // makes the input file
	copyOf := func(edit func(t *testing.T, img []byte) []byte) input {
		return func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "prog")
			img := edit(t, bytes.Clone(goodData))
			if err := os.WriteFile(p, img, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	built := func(b build) input {
		return func(t *testing.T, dir string) string { return b.make(t, dir) }
	}
	for _, c := range []struct {
		name string
		in   input
		req  Request
		is   error  // errors.Is
		want string // in the message
	}{
		{"no runtime linked", built(build{cc: "gcc", flags: "-pg -mfentry", link: "-pie", record: true, noRT: true}), enable("fib"),
			ErrNoRuntime, "link the runtime: cc ... $(ftpatch flags --libs)"},
		{"no site table", built(build{cc: "gcc", link: "-pie"}), enable("fib"), sites.ErrNoTable, "run recordmcount"},
		{"stripped", func(t *testing.T, dir string) string {
			p := built(builds[0])(t, dir)
			sh(t, dir, "strip", p)
			return p
		}, enable("fib"), ErrStripped, "patch before stripping"},
		{"no function matched", copyOf(func(t *testing.T, b []byte) []byte { return b }), enable("hlper\nfbi*\n"),
			ErrNoMatch, `list:1: 0 functions matched "hlper" — did you mean helper?; list:2: 0 functions matched "fbi*" — did you mean fib*?`},
		{"all excluded", copyOf(func(t *testing.T, b []byte) []byte { return b }), enable("fib\n!f*\n"), ErrNoMatch, "every function it matches is also excluded"},
		{"only excludes", copyOf(func(t *testing.T, b []byte) []byte { return b }), enable("!fib\n"), funclist.ErrOnlyExcludes, "add a line `*`"},
		{"not ELF", copyOf(func(t *testing.T, b []byte) []byte { return []byte("#!/bin/sh\necho hi\n") }), enable("fib"), elfx.ErrNotELF, "not an ELF file"},
		{"truncated", copyOf(func(t *testing.T, b []byte) []byte { return b[:200] }), enable("fib"), nil, "past the end of the 200-byte file"},
		{"garbage after the header", copyOf(func(t *testing.T, b []byte) []byte {
			for i := 64; i < len(b); i++ {
				b[i] = byte(i * 7)
			}
			return b
		}), enable("fib"), nil, "malformed ELF"},
		{"unexpected call at a site", copyOf(func(t *testing.T, img []byte) []byte {
			f, _ := elfx.Parse("p", img)
			b, err := Load(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range b.Slots {
				if s.Func == "fib" {
					call, _ := x86.Call6(s.Addr, s.Addr+0x40) // into fib's own body
					copy(img[s.Off:], call)
				}
			}
			return img
		}), enable("fib"), ErrSite, "in fib: a call to 0x"},
		{"garbage at a dead entry", copyOf(func(t *testing.T, img []byte) []byte {
			return overwriteDead(t, img, func(s Slot) []byte { return bytes.Repeat([]byte{0xcc}, int(s.Len)) })
		}), enable("fib"), ErrSite, "outside every function holds cc cc cc cc cc"},
		{"a dead entry calling elsewhere", copyOf(func(t *testing.T, img []byte) []byte {
			return overwriteDead(t, img, func(s Slot) []byte { call, _ := x86.Call(s.Addr, s.Addr+0x40); return call })
		}), enable("fib"), ErrSite, "a call to 0x"},
		{"trace location not absolute", copyOf(func(t *testing.T, b []byte) []byte { return b }),
			Request{Op: Enable, List: list(t, "fib"), Inputs: "list", TraceDir: "traces/prog"}, ErrTraceDir, `"traces/prog" is not an absolute path`},
		{"relocatable object", func(t *testing.T, dir string) string {
			o := filepath.Join(dir, "o.o")
			src, _ := filepath.Abs(filepath.Join("..", "tests", "progs", "other.c"))
			sh(t, dir, "gcc", "-c", "-pg", "-mfentry", src, "-o", o)
			return o
		}, enable("fib"), nil, "a relocatable object: link it first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := c.in(t, dir)
			before := untouched.Take(t, p)
			ents, _ := os.ReadDir(dir)
			for _, out := range []string{"", filepath.Join(dir, "out")} {
				_, err := Run(Options{Path: p, Out: out, Request: c.req})
				if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p) {
					t.Errorf("-o %q: error %v\nwant one starting with the path, matching %v, containing %q", out, err, c.is, c.want)
				}
				before.Check(t, "the patcher")
				if after, _ := os.ReadDir(dir); len(after) != len(ents) {
					t.Errorf("the directory held %d entries, now %d", len(ents), len(after))
				}
			}
		})
	}
}

// TestArm64: on every arm64 build, enable writes exactly the listed
// functions' sites as calls of their trampolines, decoded back with
// x/arch: a patchable entry `mov x9, x30; bl ftrace_caller`, a -pg site
// `bl ftrace_mcount_caller`; every other site holds its NOPs. The file
// passes Verify; enabling again changes nothing; disable leaves every
// site NOPs and Verify passes.
func TestArm64(t *testing.T) {
	for _, b := range arm64Builds {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			prog := b.make(t, dir)
			enabled := filepath.Join(dir, "enabled")
			req := Request{Op: Enable, List: list(t, "fib\nhelper\n"), Inputs: "list"}
			if _, err := Run(Options{Path: prog, Out: enabled, Request: req}); err != nil {
				t.Fatal(err)
			}
			chosen := map[string]bool{"fib": true, "helper": true}
			if n := checkArm64Sites(t, enabled, chosen); n < 2 {
				t.Errorf("%d sites call the runtime, want fib's and helper's", n)
			}
			eb := load(t, enabled)
			if r := eb.Verify(); !r.OK() || eb.Config.Tracer != TracerFunction {
				t.Errorf("after enable: config %+v, %v", eb.Config, r.Problems)
			}
			if res, err := Run(Options{Path: enabled, Request: req}); err != nil || res.Written != "" {
				t.Errorf("enable again: %v, wrote %q", err, res.Written)
			}
			none := filepath.Join(dir, "none")
			if _, err := Run(Options{Path: enabled, Out: none, Request: Request{Op: Disable}}); err != nil {
				t.Fatal(err)
			}
			if n := checkArm64Sites(t, none, nil); n != 0 {
				t.Errorf("after disable, %d sites call the runtime", n)
			}
			if nb := load(t, none); !nb.Verify().OK() || nb.Config.Enabled != 0 {
				t.Errorf("after disable: config %+v, %v", nb.Config, nb.Verify().Problems)
			}
		})
	}
}

// checkArm64Sites decodes every site of the arm64 file at path with
// x/arch: those of the functions in calls must call their trampoline
// (an entry site `mov x9, x30; bl ftrace_caller`, a -pg site `bl
// ftrace_mcount_caller`), every other one hold NOPs. It returns the
// number of calls.
func checkArm64Sites(t *testing.T, path string, calls map[string]bool) int {
	t.Helper()
	l, codes, syms := siteBytes(t, path)
	n := 0
	for i, s := range l.Sites {
		code := codes[i]
		var words []string
		for i := 0; i < len(code); i += 4 {
			in, err := arm64asm.Decode(code[i:])
			if err != nil {
				t.Fatalf("%s: site 0x%x (%s): % x: %v", path, s.Off, s.Func, code, err)
			}
			words = append(words, in.String())
		}
		got := strings.Join(words, "; ")
		want := strings.TrimSuffix(strings.Repeat("NOP ; ", s.Len/4), "; ")
		if calls[s.Func] {
			name, bl := abi.ARM64Caller, s.Off+4
			if s.Kind == sites.ARM64Mcount {
				name, bl = abi.ARM64McountCaller, s.Off
			}
			want = fmt.Sprintf("BL .%+#x", int64(syms[name]-bl))
			if s.Len == 8 {
				want = "MOV X9, X30; " + want
			}
			n++
		}
		if got != want {
			t.Errorf("%s: site 0x%x (%s, %v): %s, want %s", path, s.Off, s.Func, s.Kind, got, want)
		}
	}
	return n
}

// TestChangedUnderUs: a file written by someone else while ftpatch
// worked is left as they made it, and the error says so.
func TestChangedUnderUs(t *testing.T) {
	dir := t.TempDir()
	prog := builds[0].make(t, dir)
	for _, out := range []string{"", filepath.Join(dir, "out")} {
		var theirs []byte
		_, err := Run(Options{Path: prog, Out: out, Request: Request{Op: Enable, List: list(t, "fib"), Inputs: "list"},
			beforeCommit: func() {
				b, _ := os.ReadFile(prog)
				theirs = append(b, "their change"...)
				if err := os.WriteFile(prog, theirs, 0o755); err != nil {
					t.Fatal(err)
				}
			}})
		if !errors.Is(err, outfile.ErrChanged) || !strings.Contains(err.Error(), "nothing written") {
			t.Errorf("-o %q: %v, want ErrChanged", out, err)
		}
		if b, _ := os.ReadFile(prog); !bytes.Equal(b, theirs) {
			t.Error("the other writer's file was replaced")
		}
		if out != "" {
			if _, err := os.Stat(out); err == nil {
				t.Error("the output was written from a file that changed")
			}
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("temporary %s left behind", e.Name())
			}
		}
	}
}

// TestFiles: in place keeps the mode and goes through a symbolic link to
// the file; -o leaves the input as it was; a file already as asked is not
// rewritten (same inode, same mtime).
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	prog := builds[1].make(t, dir)
	if err := os.Chmod(prog, 0o750); err != nil {
		t.Fatal(err)
	}
	in := untouched.Take(t, prog)
	req := Request{Op: Enable, Tracer: TracerGraph, List: list(t, "fib"), Inputs: "list"}
	out := filepath.Join(dir, "out")
	if _, err := Run(Options{Path: prog, Out: out, Request: req}); err != nil {
		t.Fatal(err)
	}
	in.Check(t, "the patcher")
	link := filepath.Join(dir, "link")
	if err := os.Symlink("prog", link); err != nil {
		t.Fatal(err)
	}
	res, err := Run(Options{Path: link, Request: req})
	if err != nil || res.Written != prog {
		t.Fatalf("through a link: %v, wrote %q", err, res.Written)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symbolic link was replaced by a file")
	}
	a, _ := os.ReadFile(prog)
	b, _ := os.ReadFile(out)
	if !bytes.Equal(a, b) {
		t.Error("in place and -o wrote different files")
	}
	fi, err := os.Stat(prog)
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("mode %v, want 0750", fi.Mode())
	}
	again := untouched.Take(t, prog)
	if res, err := Run(Options{Path: prog, Request: req}); err != nil || res.Written != "" {
		t.Errorf("again: %v, wrote %q", err, res.Written)
	}
	again.Check(t, "the patcher")
	// With -o, the output is written even when nothing changes.
	out2 := filepath.Join(dir, "out2")
	if res, err := Run(Options{Path: prog, Out: out2, Request: req}); err != nil || res.Written != out2 {
		t.Errorf("-o of an unchanged file: %v, wrote %q", err, res.Written)
	}
	if c, _ := os.ReadFile(out2); !bytes.Equal(c, a) {
		t.Error("-o of an unchanged file is not a copy")
	}
}

// TestOutOfRange: a site the list chooses whose call cannot reach the
// trampoline is left a NOP and named (OutOfReach), never a truncated
// call, and counts neither as enabled nor as a function traced.
func TestOutOfRange(t *testing.T) {
	dir := t.TempDir()
	b := load(t, builds[0].make(t, dir))
	for tr := range b.tramps {
		b.tramps[tr] += 1 << 40
	}
	p, err := b.Plan(Request{Op: Enable, List: list(t, "fib"), Inputs: "list"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.OutOfReach) == 0 || slices.ContainsFunc(p.OutOfReach, func(f string) bool { return f != "fib" }) || p.Config.Enabled != 0 || p.Funcs != 0 {
		t.Errorf("out of reach %v, %d sites enabled in %d functions; want fib's sites alone out of reach, none enabled", p.OutOfReach, p.Config.Enabled, p.Funcs)
	}
	for _, w := range p.Writes {
		nop, err := b.isa.SiteNop(int(w.Slot.Len))
		if err != nil {
			t.Fatal(err)
		}
		if got := w.New[:w.Slot.Len]; !bytes.Equal(got, nop) {
			t.Errorf("site %#x (%s) written % x, want a NOP", w.Slot.Addr, w.Slot.Func, got)
		}
	}
}

// TestTracerNames: the tracers print and parse as FTRACE spells them.
func TestTracerNames(t *testing.T) {
	for _, tr := range []Tracer{TracerFunction, TracerGraph, TracerNop} {
		if got, err := ParseTracer(tr.String()); err != nil || got != tr {
			t.Errorf("%v: %v, %v", tr, got, err)
		}
	}
	for _, bad := range []string{"", "none", "graph", "Function"} {
		if _, err := ParseTracer(bad); err == nil {
			t.Errorf("ParseTracer(%q) succeeded", bad)
		}
	}
	if !slices.Contains(tracerNames[:], "function_graph") {
		t.Error("no function_graph")
	}
}

// overwriteDead writes what with returns over every dead slot of the
// program image img (the weak function the fixture's linker discards),
// failing t when there is none.
func overwriteDead(t *testing.T, img []byte, with func(Slot) []byte) []byte {
	f, _ := elfx.Parse("p", img)
	b, err := Load(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range b.Slots {
		if s.Dead() {
			copy(img[s.Off:], with(s))
			n++
		}
	}
	if n == 0 {
		t.Fatal("no dead slot in the fixture")
	}
	return img
}
