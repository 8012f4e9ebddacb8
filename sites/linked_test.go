package sites_test

import (
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/internal/fixture"
	"ftpatch/sites"
)

// linked lists the linked fixtures (sites/testdata/linked).
func linked(t *testing.T) []fixture.Object { return fixture.Linked(t, "..") }

// findLinked reads a linked fixture's sites; the stripped one is
// skipped by the callers, which want sites.
func findLinked(t *testing.T, o fixture.Object) (*elfx.File, *sites.Linked) {
	t.Helper()
	f := open(t, o.Path)
	l, err := sites.FindLinked(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, l
}

// wantStatus is the state each function of the hand-written fixtures
// (callsx86.S, callsarm64.S) is built to have, by name prefix.
var wantStatus = []struct {
	prefix string
	state  sites.State
}{
	{"nop", sites.StateNop},
	{"mcount_nop", sites.StateNop},
	{"hook", sites.StateHook},
	{"mcount_plt", sites.StateHook},
	{"traced", sites.StateTraced},
	{"callops", sites.StateTraced},
	{"direct", sites.StateDirect},
}

// TestLinkedStatus checks every site's status against how its fixture
// was built: the compiled programs hold their compiler's hook calls (or
// NOPs, from -fpatchable-function-entry alone: with -pg, the hook's call
// is the site and the areas are no sites), the hand-written ones what
// each function's name says. Every table entry is a site.
func TestLinkedStatus(t *testing.T) {
	hooks := map[arch.Arch]map[string]string{
		arch.X86_64: {"mfentry": "__fentry__", "pg": "mcount"},
		arch.ARM64:  {"pg": "_mcount"},
	}
	for _, o := range linked(t) {
		if o.Has("strip") {
			continue
		}
		t.Run(o.Base, func(t *testing.T) {
			f, l := findLinked(t, o)
			words, err := f.Words(f.Section(sites.TableName), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Sites) == 0 || len(l.Sites)+len(l.Dead)+l.Zero+l.Dups != len(words) {
				t.Errorf("%d sites, %d dead, %d zero, %d duplicates from %d table entries", len(l.Sites), len(l.Dead), l.Zero, l.Dups, len(words))
			}
			for _, s := range l.Sites {
				want, hook := sites.StateUnknown, ""
				switch {
				case strings.HasPrefix(o.Case, "calls"):
					for _, w := range wantStatus {
						if strings.HasPrefix(s.Func, w.prefix) {
							want = w.state
							break
						}
					}
				case !o.Has("pg") && (o.Has("pfe5") || o.Has("pfe2") || o.Has("pfe4_2")):
					want = sites.StateNop
				default:
					want = sites.StateHook
					hook = hooks[o.Arch]["pg"]
					if o.Has("mfentry") {
						hook = hooks[o.Arch]["mfentry"]
					}
				}
				if got := s.State; got != want && !(want == sites.StateNop && got == sites.StateNops) {
					t.Errorf("%s at 0x%x: status %v, want %v", s.Func, s.Off, got, want)
				}
				if (s.Call != nil) != s.State.IsCall() {
					t.Errorf("%s at 0x%x: state %v with call %+v", s.Func, s.Off, s.State, s.Call)
				}
				if hook != "" && s.Hook() != hook {
					t.Errorf("%s at 0x%x: hook %q, want %q", s.Func, s.Off, s.Hook(), hook)
				}
			}
		})
	}
}

// TestLinkedCallsObjdump checks every call target against binutils:
// objdump's disassembly names the target of `e8`/`67 e8`/`bl` (or its
// PLT stub) and the slot of `ff 15`, and readelf's relocation list says
// what fills the slot.
func TestLinkedCallsObjdump(t *testing.T) {
	tools := map[arch.Arch]string{arch.X86_64: "objdump", arch.ARM64: "aarch64-linux-gnu-objdump"}
	pkgs := map[string]string{"objdump": "binutils", "aarch64-linux-gnu-objdump": "binutils-aarch64-linux-gnu", "readelf": "binutils"}
	for _, tool := range []string{tools[arch.X86_64], tools[arch.ARM64], "readelf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: run `make deps` or `apt-get install %s`", tool, pkgs[tool])
		}
	}
	direct := regexp.MustCompile(`\b(?:call|bl)\s+([0-9a-f]+) <([^>]+)>`)
	slot := regexp.MustCompile(`\bcall\s+\*0x[0-9a-f]+\(%rip\)\s+# ([0-9a-f]+)`)
	calls := 0
	for _, o := range linked(t) {
		if o.Has("strip") {
			continue
		}
		t.Run(o.Base, func(t *testing.T) {
			_, l := findLinked(t, o)
			insns := disassemble(t, tools[o.Arch], o.Path)
			relocs := dynRelocs(t, o.Path)
			for _, s := range l.Sites {
				if s.Call == nil {
					continue
				}
				calls++
				at := s.Off
				if s.Kind == sites.ARM64Patchable || s.Kind == sites.ARM64CallOps {
					at += 4 // mov x9, x30; bl
				}
				in, ok := insns[at]
				if !ok {
					t.Fatalf("%s: objdump has no instruction at 0x%x", s.Func, at)
				}
				got := s.Call.String()
				if m := direct.FindStringSubmatch(in); m != nil {
					addr, _ := strconv.ParseUint(m[1], 16, 64)
					want := m[2]
					if name, ok := strings.CutSuffix(want, "@plt"); ok {
						// Through the stub: the slot's symbol.
						if s.Call.Via != sites.ViaPLT || s.Call.Name != name {
							t.Errorf("%s at 0x%x: %q calls %s, want %s through the PLT", s.Func, s.Off, in, got, name)
						}
						continue
					}
					if s.Call.Addr != addr || got != want {
						t.Errorf("%s at 0x%x: %q calls %s (0x%x), want %s (0x%x)", s.Func, s.Off, in, got, s.Call.Addr, want, addr)
					}
					continue
				}
				m := slot.FindStringSubmatch(in)
				if m == nil {
					t.Errorf("%s at 0x%x: %q is no call objdump names a target of", s.Func, s.Off, in)
					continue
				}
				a, _ := strconv.ParseUint(m[1], 16, 64)
				r, ok := relocs[a]
				switch {
				case !ok:
					t.Errorf("%s at 0x%x: no dynamic relocation fills the slot 0x%x", s.Func, s.Off, a)
				case strings.HasSuffix(r.typ, "_RELATIVE"):
					if s.Call.Via != sites.ViaGOT || s.Call.Addr != r.addend {
						t.Errorf("%s at 0x%x: calls %s (0x%x), want 0x%x through the GOT", s.Func, s.Off, got, s.Call.Addr, r.addend)
					}
				default:
					if s.Call.Via != sites.ViaGOT || s.Call.Name != r.sym {
						t.Errorf("%s at 0x%x: calls %s, want %s through the GOT", s.Func, s.Off, got, r.sym)
					}
				}
			}
		})
	}
	if calls < 20 {
		t.Errorf("only %d call sites checked", calls)
	}
}

// disassemble returns objdump's text of each instruction, by address.
func disassemble(t *testing.T, tool, path string) map[uint64]string {
	t.Helper()
	out, err := exec.Command(tool, "-d", "--no-show-raw-insn", path).Output()
	if err != nil {
		t.Fatalf("%s -d %s: %v", tool, path, err)
	}
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*)$`)
	insns := map[uint64]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			insns[a] = m[2]
		}
	}
	return insns
}

type dynReloc struct {
	typ, sym string
	addend   uint64
}

// dynRelocs returns readelf's dynamic relocations, by the address they
// fill.
func dynRelocs(t *testing.T, path string) map[uint64]dynReloc {
	t.Helper()
	out, err := exec.Command("readelf", "-rW", path).Output()
	if err != nil {
		t.Fatalf("readelf -rW %s: %v", path, err)
	}
	rs := map[uint64]dynReloc{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasPrefix(f[2], "R_") {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		r := dynReloc{typ: f[2]}
		if strings.HasSuffix(r.typ, "_RELATIVE") {
			r.addend, _ = strconv.ParseUint(f[3], 16, 64)
		} else if len(f) >= 5 {
			r.sym = f[4]
		}
		rs[a] = r
	}
	return rs
}

// TestLinkedStripped: a file without .symtab is ErrStripped, with what
// to do instead.
func TestLinkedStripped(t *testing.T) {
	for _, o := range linked(t) {
		if !o.Has("strip") {
			continue
		}
		_, err := sites.FindLinked(open(t, o.Path))
		if !errors.Is(err, sites.ErrStripped) || !strings.Contains(err.Error(), "unstripped file") {
			t.Errorf("%s: %v, want ErrStripped with a hint", o.Base, err)
		}
		return
	}
	t.Fatal("no stripped fixture")
}

// TestCallString covers how call targets print.
func TestCallString(t *testing.T) {
	tests := []struct {
		c    sites.Call
		want string
	}{
		{sites.Call{Addr: 0x10, Name: "f"}, "f"},
		{sites.Call{Addr: 0x14, Name: "f", Off: 4}, "f+0x4"},
		{sites.Call{Addr: 0x14}, "0x14"},
		{sites.Call{Name: "ext", Via: sites.ViaGOT}, "ext@got"},
		{sites.Call{Via: sites.ViaGOT}, "?@got"},
		{sites.Call{Addr: 0x20, Name: "t", Via: sites.ViaPLT}, "t@plt"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.c, got, tt.want)
		}
	}
}
