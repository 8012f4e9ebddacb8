package elfx_test

import (
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ftpatch/elfx"
)

// TestFDERanges: every FDE's range, as readelf's frame dump gives it,
// for linked programs of each ISA and each kind (PIE, not, a shared
// object, C++ with personality and LSDA augmentations).
func TestFDERanges(t *testing.T) {
	dir := t.TempDir()
	c := writeFile(t, dir, "pie.c", pieSource)
	cc := writeFile(t, dir, "ex.cc", "#include <stdexcept>\nint f(int x){ if (x) throw std::runtime_error(\"x\"); return 1; }\nint main(int c, char**){ try { return f(c-1); } catch (...) { return 2; } }\n")
	cases := []struct {
		cc, name string
		args     []string
	}{
		{"gcc", "pie", []string{"-O2", c}},
		{"gcc", "nopie", []string{"-O2", "-no-pie", "-fno-pie", c}},
		{"gcc", "lib.so", []string{"-O2", "-fpic", "-shared", c}},
		{"g++", "cxx", []string{"-O2", cc}},
		{"aarch64-linux-gnu-gcc", "arm64", []string{"-O2", c}},
		{"aarch64-linux-gnu-g++", "arm64cxx", []string{"-O2", cc}},
	}
	fde := regexp.MustCompile(`FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)\n((?:  .*\n)*)`)
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			if _, err := exec.LookPath(k.cc); err != nil {
				t.Fatalf("%s is not installed: run `make deps`", k.cc)
			}
			p := build(t, dir, k.cc, k.name, k.args...)
			f, err := elfx.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.FDERanges()
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("readelf", "-wf", p).Output()
			if err != nil {
				t.Fatal(err)
			}
			var want []elfx.FDERange
			for _, m := range fde.FindAllStringSubmatch(string(out), -1) {
				s, _ := strconv.ParseUint(m[1], 16, 64)
				e, _ := strconv.ParseUint(m[2], 16, 64)
				// At an entry, the first instruction that is not a
				// DW_CFA_nop (if any) advances the location.
				entry := true
				for _, l := range strings.Split(m[3], "\n") {
					l = strings.TrimSpace(l)
					if l == "" || l == "DW_CFA_nop" || strings.HasPrefix(l, "Augmentation data") {
						continue
					}
					entry = strings.HasPrefix(l, "DW_CFA_advance_loc")
					break
				}
				if e > s {
					want = append(want, elfx.FDERange{Start: elfx.Addr(s), End: elfx.Addr(e), Entry: entry})
				}
			}
			slices.SortFunc(want, func(a, b elfx.FDERange) int { return int(a.Start) - int(b.Start) })
			mid := 0
			for _, r := range want {
				if !r.Entry {
					mid++
				}
			}
			if len(want) < 3 || mid == 0 && (k.name == "pie" || k.name == "cxx") || !slices.Equal(got, want) {
				t.Errorf("FDE ranges (%d not at an entry: want x86-64's PLT at least):\n got %+v\nwant %+v", mid, got, want)
			}
		})
	}
}
