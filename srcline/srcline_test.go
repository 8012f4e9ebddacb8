package srcline_test

import (
	"debug/elf"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/internal/fixture"
	"ftpatch/srcline"
)

// An objdumpRow is one row of `objdump --dwarf=decodedline`.
type objdumpRow struct {
	file string
	line int // -1 ends a sequence
	addr uint64
}

// decodedLines returns binutils' decoding of the file's line table, as
// sequences of rows (each ended by its end_sequence row).
func decodedLines(t *testing.T, tool, p string) [][]objdumpRow {
	t.Helper()
	out, err := exec.Command(tool, "--dwarf=decodedline", p).Output()
	if err != nil {
		t.Fatalf("%s --dwarf=decodedline %s: %v", tool, p, err)
	}
	re := regexp.MustCompile(`^(\S+)\s+(\d+|-)\s+0x([0-9a-f]+)`)
	var seqs [][]objdumpRow
	var cur []objdumpRow
	for _, l := range strings.Split(string(out), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a, _ := strconv.ParseUint(m[3], 16, 64)
		r := objdumpRow{file: m[1], line: -1, addr: a}
		if m[2] != "-" {
			r.line, _ = strconv.Atoi(m[2])
		}
		cur = append(cur, r)
		if r.line < 0 {
			seqs = append(seqs, cur)
			cur = nil
		}
	}
	return seqs
}

// TestLookupObjdump compares every lookup in the code of each linked
// fixture with debug info against binutils' own decoding of its line
// table: at each address, the first row at the greatest row address not
// above it, within its sequence (objdump lists every row, in order).
// File names are compared by their last element: objdump shortens them.
func TestLookupObjdump(t *testing.T) {
	tools := map[arch.Arch]string{arch.X86_64: "objdump", arch.ARM64: "aarch64-linux-gnu-objdump"}
	pkgs := map[arch.Arch]string{arch.X86_64: "binutils", arch.ARM64: "binutils-aarch64-linux-gnu"}
	probed := 0
	for _, o := range fixture.Linked(t, "..") {
		if !o.Has("g") && !o.Has("dwarf4") {
			continue
		}
		if _, err := exec.LookPath(tools[o.Arch]); err != nil {
			t.Fatalf("%s is not installed: run `make deps` or `apt-get install %s`", tools[o.Arch], pkgs[o.Arch])
		}
		t.Run(o.Base, func(t *testing.T) {
			f, err := elfx.Open(o.Path)
			if err != nil {
				t.Fatal(err)
			}
			tab, err := srcline.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(tab.Notes) != 0 {
				t.Errorf("notes: %q", tab.Notes)
			}
			step := uint64(1)
			if o.Arch == arch.ARM64 {
				step = 4
			}
			seqs := decodedLines(t, tools[o.Arch], o.Path)
			if len(seqs) == 0 {
				t.Fatal("objdump decodes no line sequences")
			}
			for _, s := range f.Sections {
				if s.Flags&elf.SHF_EXECINSTR == 0 {
					continue
				}
				for a := uint64(s.Addr); a < uint64(s.Addr)+s.Size; a += step {
					want := ""
					for _, seq := range seqs {
						if a < seq[0].addr || a >= seq[len(seq)-1].addr {
							continue
						}
						i := 0
						for j, r := range seq {
							if r.addr <= a && r.addr > seq[i].addr {
								i = j
							}
						}
						if seq[i].line > 0 {
							want = seq[i].file + ":" + strconv.Itoa(seq[i].line)
						}
					}
					p, ok := tab.Lookup(a)
					got := ""
					if ok {
						got = path.Base(p.File) + ":" + strconv.Itoa(p.Line)
					}
					if want != "" {
						want = path.Base(strings.TrimSuffix(want[:strings.LastIndex(want, ":")], ":")) + want[strings.LastIndex(want, ":"):]
					}
					if got != want {
						t.Errorf("Lookup(0x%x) = %q (%v), objdump says %q", a, got, p, want)
					}
					probed++
				}
			}
		})
	}
	if probed < 1000 {
		t.Errorf("only %d addresses compared", probed)
	}
}

// TestNoDWARF: a file without debug information has an empty table and
// no error or note.
func TestNoDWARF(t *testing.T) {
	for _, o := range fixture.Linked(t, "..") {
		if o.Has("g") || o.Has("dwarf4") {
			continue
		}
		f, err := elfx.Open(o.Path)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := srcline.Read(f)
		if err != nil || tab.Rows() != 0 || len(tab.Notes) != 0 {
			t.Errorf("%s: %d rows, notes %q, %v; want none", o.Base, tab.Rows(), tab.Notes, err)
		}
	}
}
