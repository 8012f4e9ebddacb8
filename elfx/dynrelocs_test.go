package elfx_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"ftpatch/elfx"
	"ftpatch/internal/fixture"
)

// TestDynRelocs: the symbolic dynamic relocations of every linked
// fixture are readelf's, with the same type and symbol; RELATIVE and
// NONE ones are left to Relatives.
func TestDynRelocs(t *testing.T) {
	seen := 0
	for _, o := range fixture.Linked(t, "..") {
		t.Run(o.Base, func(t *testing.T) {
			f, err := elfx.Open(o.Path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.DynRelocs()
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("readelf", "-rW", o.Path).Output()
			if err != nil {
				t.Fatalf("readelf -rW: %v", err)
			}
			want := 0
			for _, l := range strings.Split(string(out), "\n") {
				fs := strings.Fields(l)
				if len(fs) < 3 || !strings.HasPrefix(fs[2], "R_") || strings.HasSuffix(fs[2], "_RELATIVE") || strings.HasSuffix(fs[2], "_NONE") {
					continue
				}
				a, err := strconv.ParseUint(fs[0], 16, 64)
				if err != nil {
					continue
				}
				want++
				d, ok := got[a]
				if !ok {
					t.Errorf("%#x: readelf has %s, DynRelocs nothing", a, fs[2])
					continue
				}
				// Go spells x86-64's R_X86_64_JMP_SLOT, binutils JUMP_SLOT.
				if name := strings.Replace(f.RelocTypeString(d.Type), "_JMP_SLOT", "_JUMP_SLOT", 1); name != fs[2] {
					t.Errorf("%#x: type %s, readelf %s", a, name, fs[2])
				}
				if len(fs) >= 5 && !strings.HasSuffix(fs[2], "_IRELATIVE") {
					sym, _, _ := strings.Cut(fs[4], "@")
					if d.Sym.Name != sym {
						t.Errorf("%#x: symbol %q, readelf %q", a, d.Sym.Name, sym)
					}
				}
			}
			if len(got) != want {
				t.Errorf("%d relocations, readelf %d", len(got), want)
			}
			seen += want
		})
	}
	if seen == 0 {
		t.Error("no fixture has a symbolic dynamic relocation: the test checks nothing")
	}
}
