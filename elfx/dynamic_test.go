package elfx_test

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"ftpatch/elfx"
	"ftpatch/internal/minielf"
)

// TestDynamicLinked: Dynamic reads what debug/elf reads from the dynamic
// sections of files gcc and ld link with each kind of search path, a
// soname and DF_1_NODEFLIB.
func TestDynamicLinked(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc is not installed: run `make deps` or `apt-get install gcc`")
	}
	dir := t.TempDir()
	src := writeFile(t, dir, "p.c", "int main(void) { return 0; }\n")
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"pie", []string{"-fpie", "-pie"}},
		{"rpath", []string{"-Wl,--disable-new-dtags,-rpath,$ORIGIN/lib:/opt/x"}},
		{"runpath", []string{"-Wl,--enable-new-dtags,-rpath,/opt/y", "-Wl,-z,nodeflib"}},
		{"lib.so", []string{"-fpic", "-shared", "-Wl,-soname,libp.so.1", "-Wl,--no-as-needed", "-lm"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := build(t, dir, "gcc", c.name, append([]string{"-O2", src}, c.flags...)...)
			f, d := open(t, p)
			got, err := f.Dynamic()
			if err != nil {
				t.Fatal(err)
			}
			str := func(tag elf.DynTag) (string, bool) {
				s, err := d.DynString(tag)
				if err != nil {
					t.Fatal(err)
				}
				if len(s) == 0 {
					return "", false
				}
				return s[len(s)-1], true
			}
			want := &elfx.Dynamic{}
			want.Needed, _ = d.DynString(elf.DT_NEEDED)
			want.Soname, _ = str(elf.DT_SONAME)
			want.Rpath, want.HasRpath = str(elf.DT_RPATH)
			want.Runpath, want.HasRunpath = str(elf.DT_RUNPATH)
			if v, err := d.DynValue(elf.DT_FLAGS_1); err == nil && len(v) > 0 {
				want.Flags1 = elf.DynFlag1(v[0])
			}
			for _, p := range d.Progs {
				if p.Type == elf.PT_INTERP {
					b := make([]byte, p.Filesz)
					p.ReadAt(b, 0)
					want.Interp = strings.TrimRight(string(b), "\x00")
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Dynamic:\n got %+v\nwant %+v", got, want)
			}
			if len(got.Needed) == 0 {
				t.Errorf("no DT_NEEDED read")
			}
		})
	}
}

// TestDynamicRoundTrip: what minielf writes, Dynamic reads back.
func TestDynamicRoundTrip(t *testing.T) {
	for _, m := range []minielf.File{
		{},
		{Needed: []string{"liba.so.1", "libc.so.6"}, Soname: "libb.so.2", Rpath: "$ORIGIN/../lib", Interp: "/lib64/ld-linux-x86-64.so.2"},
		{Machine: elf.EM_AARCH64, Type: elf.ET_EXEC, Runpath: "/x:/y", Flags1: elf.DF_1_NODEFLIB},
	} {
		f, err := elfx.Parse("mini", m.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Dynamic()
		if err != nil {
			t.Fatal(err)
		}
		want := &elfx.Dynamic{Needed: m.Needed, Soname: m.Soname, Rpath: m.Rpath, HasRpath: m.Rpath != "",
			Runpath: m.Runpath, HasRunpath: m.Runpath != "", Flags1: m.Flags1, Interp: m.Interp}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v:\n got %+v\nwant %+v", m, got, want)
		}
	}
}

// TestDynamicErrors: a dynamic section the loader could not read is an
// error naming what is wrong, never a panic or a made-up name.
func TestDynamicErrors(t *testing.T) {
	good := minielf.File{Needed: []string{"liba.so"}, Interp: "/lib/ld.so"}.Bytes()
	// Offsets in minielf's layout: program headers at 64 (PT_LOAD,
	// PT_DYNAMIC, PT_INTERP), 56 bytes each.
	const dynPh, interpPh = 64 + 56, 64 + 2*56
	dynOff := binary.LittleEndian.Uint64(good[dynPh+8:])
	entry := func(tag elf.DynTag) int { // the offset of the first entry with tag
		for off := int(dynOff); ; off += 16 {
			if elf.DynTag(binary.LittleEndian.Uint64(good[off:])) == tag {
				return off
			}
		}
	}
	set := func(off int, v uint64) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint64(b[off:], v)
		return b
	}
	for _, c := range []struct {
		name, message string
		data          []byte
	}{
		{"dynamic-past-end", "PT_DYNAMIC (", set(dynPh+32, 1<<20)},
		{"needed-offset", "not a string in the", set(entry(elf.DT_NEEDED)+8, 1000)},
		{"needed-offset-huge", "past the", set(entry(elf.DT_NEEDED)+8, 1<<40)},
		{"strtab-unmapped", "DT_STRTAB: address 0x100000", set(entry(elf.DT_STRTAB)+8, 1<<20)},
		{"strsz-past-segment", "DT_STRTAB: address", set(entry(elf.DT_STRSZ)+8, 1<<20)},
		{"no-strtab", "no DT_STRTAB", set(entry(elf.DT_STRTAB), uint64(elf.DT_DEBUG))},
		{"interp-past-end", "PT_INTERP (", set(interpPh+32, 1<<20)},
		{"interp-unterminated", "NUL-terminated", set(interpPh+32, 3)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := elfx.Parse(c.name, c.data)
			if err != nil {
				t.Fatal(err)
			}
			d, err := f.Dynamic()
			if err == nil || !strings.Contains(err.Error(), c.message) {
				t.Fatalf("Dynamic = %+v, %v; want an error with %q", d, err, c.message)
			}
			var fe *elfx.FormatError
			if !strings.HasPrefix(c.name, "strtab-") && !strings.HasPrefix(c.name, "strsz-") && !errors.As(err, &fe) {
				t.Errorf("%v: not a *FormatError", err)
			}
		})
	}
}
