package elfx_test

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/elfx"
)

// extendSource prints the first 8 bytes after the program header table
// in its own last loadable segment (the first new section, once
// extended) and the segments' count, found as the loader left them.
const extendSource = `#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>
static int show(struct dl_phdr_info *info, size_t size, void *data) {
	const ElfW(Phdr) *last = 0;
	int loads = 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD) { last = &info->dlpi_phdr[i]; loads++; }
	char magic[9] = {0};
	size_t off = (info->dlpi_phnum * sizeof(ElfW(Phdr)) + 7) & ~(size_t)7;
	memcpy(magic, (const char *)(info->dlpi_addr + last->p_vaddr + off), 8);
	printf("loads %d phdr-in-last %d magic %s\n", loads,
	       (const char *)info->dlpi_phdr == (const char *)(info->dlpi_addr + last->p_vaddr), magic);
	return 1;
}
int main(void) { dl_iterate_phdr(show, 0); return 3; }
`

// TestExtend: a program given a segment with one section and a symbol
// runs as before, finds the section's bytes where its segment was
// loaded and the program header table moved into it, and readelf reads
// the copy without a complaint; PIE, not, static, and arm64 under qemu.
func TestExtend(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "ext.c", extendSource)
	cases := []struct {
		name, cc string
		args     []string
		run      []string
	}{
		{"pie", "gcc", []string{"-O2", "-g", src}, nil},
		{"nopie", "gcc", []string{"-O2", "-no-pie", "-fno-pie", src}, nil},
		{"static", "gcc", []string{"-O2", "-static", src}, nil},
		{"static-pie", "gcc", []string{"-O2", "-static-pie", src}, nil},
		{"stripped", "gcc", []string{"-O2", "-s", src}, nil},
		{"arm64", "aarch64-linux-gnu-gcc", []string{"-O2", src}, []string{"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := build(t, dir, c.cc, c.name, c.args...)
			f, err := elfx.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			x, err := f.Extend(elf.PF_R | elf.PF_X)
			if err != nil {
				t.Fatal(err)
			}
			a := x.AddSection(".ftrt.test", elf.SHT_PROGBITS, 0, 8, 8)
			if err := x.SetData(".ftrt.test", []byte("FTRTEXT1")); err != nil {
				t.Fatal(err)
			}
			x.AddFunc("ftrt_test_symbol", ".ftrt.test", a, 8)
			b, err := x.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			q := p + ".ext"
			if err := os.WriteFile(q, b, 0o755); err != nil {
				t.Fatal(err)
			}
			run := func(bin string) (string, int) {
				cmd := exec.Command(bin)
				if c.run != nil {
					cmd = exec.Command(c.run[0], append(c.run[1:], bin)...)
				}
				out, err := cmd.Output()
				code := 0
				if e, ok := err.(*exec.ExitError); ok {
					code = e.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return string(out), code
			}
			before, code0 := run(p)
			after, code1 := run(q)
			if code0 != 3 || code1 != 3 {
				t.Fatalf("exit %d before, %d after; want 3", code0, code1)
			}
			if !strings.Contains(after, "phdr-in-last 1 magic FTRTEXT1") || strings.Contains(before, "FTRTEXT1") {
				t.Errorf("before: %q\nafter: %q", before, after)
			}
			out, err := exec.Command("readelf", "-a", "-W", q).CombinedOutput()
			if err != nil || bytes.Contains(out, []byte("Warning")) || bytes.Contains(out, []byte("Error")) {
				t.Errorf("readelf -a %s: %v\n%s", filepath.Base(q), err, out)
			}
			if !bytes.Contains(out, []byte("ftrt_test_symbol")) || !bytes.Contains(out, []byte(".ftrt.test")) {
				t.Errorf("readelf shows no ftrt_test_symbol or .ftrt.test")
			}
			g, err := elfx.Open(q)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := g.ReadAt(a, 8); err != nil || string(got) != "FTRTEXT1" {
				t.Errorf("section at 0x%x reads %q, %v", uint64(a), got, err)
			}
			// Everything the input had is still there: each section's
			// contents, moved or not.
			for _, s := range f.Sections[1:] {
				gs := g.Sections[s.Index]
				if gs.Name != s.Name || gs.Addr != s.Addr || (s.Type != elf.SHT_SYMTAB && s.Type != elf.SHT_STRTAB && s.Index != f.Shstrndx && !bytes.Equal(f.SectionData(s), g.SectionData(gs))) {
					t.Errorf("%s changed: %s at 0x%x", s, gs, uint64(gs.Addr))
				}
			}
		})
	}
}
