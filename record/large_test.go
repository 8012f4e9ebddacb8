package record_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"ftpatch/record"
)

// largeObject assembles an object of n functions, each starting with
// `call __fentry__@PLT` (the -pg -mfentry -fno-pie form), with the GNU
// assembler: a quick way to a large input.
func largeObject(t *testing.T, dir string, n int) string {
	t.Helper()
	src := filepath.Join(dir, "large.s")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "\t.text")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "\t.globl f%d\n\t.type f%d, @function\nf%d:\n\tcall __fentry__@PLT\n\tleal %d(%%rdi), %%eax\n\tret\n\t.size f%d, .-f%d\n", i, i, i, i, i, i)
	}
	fmt.Fprintln(w, "\t.section .note.GNU-stack,\"\",@progbits")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	obj := filepath.Join(dir, "large.o")
	if out, err := exec.Command("as", "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	return obj
}

// TestFileLarge covers the path where File starts writing a large object
// before its sites are known: the file written must equal Rewrite's image
// byte for byte, with and without --nop, and no temporary may remain.
func TestFileLarge(t *testing.T) {
	dir := t.TempDir()
	obj := largeObject(t, dir, 20000)
	orig, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(orig) < 1<<20 {
		t.Fatalf("object is %d bytes; the test needs one over 1 MiB", len(orig))
	}
	for _, opts := range []record.Options{{}, {Nop: true}} {
		t.Run(fmt.Sprintf("nop=%v", opts.Nop), func(t *testing.T) {
			want, _, err := record.Rewrite(obj, orig, opts)
			if err != nil || want == nil {
				t.Fatalf("Rewrite: %v (image nil: %v)", err, want == nil)
			}
			p := filepath.Join(t.TempDir(), "large.o")
			if err := os.WriteFile(p, orig, 0o640); err != nil {
				t.Fatal(err)
			}
			res := record.File(p, "", opts)
			if res.Err != nil || res.Tabled != 20000 {
				t.Fatalf("File: %v, %d sites recorded", res.Err, res.Tabled)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("File wrote %d bytes that differ from Rewrite's %d", len(got), len(want))
			}
			st, _ := os.Stat(p)
			if st.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640", st.Mode().Perm())
			}
			ents, _ := os.ReadDir(filepath.Dir(p))
			if len(ents) != 1 {
				t.Errorf("directory holds %d entries, want only the object", len(ents))
			}
			// A second run on the output changes nothing and writes nothing.
			res = record.File(p, "", opts)
			if res.Err != nil || res.Changed {
				t.Errorf("second run: changed %v, %v", res.Changed, res.Err)
			}
			if again, _ := os.ReadFile(p); !bytes.Equal(again, got) {
				t.Error("second run changed the file")
			}
		})
	}
}

// TestFileLargeBad: when the object fails after File started writing its
// output, the input stays byte-identical and no temporary remains.
func TestFileLargeBad(t *testing.T) {
	dir := t.TempDir()
	obj := largeObject(t, dir, 20000)
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	// Turn the last `call __fentry__` (e8 00 00 00 00) into something else.
	i := bytes.LastIndex(data, []byte{0xe8, 0, 0, 0, 0, 0x8d})
	if i < 0 {
		t.Fatal("no call found in the assembled object")
	}
	data[i] = 0xe9 // jmp rel32: not a call
	p := filepath.Join(t.TempDir(), "bad.o")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res := record.File(p, "", record.Options{})
	if res.Err == nil {
		t.Fatal("a site holding a jmp was accepted")
	}
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, data) {
		t.Error("the input changed")
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("directory holds %d entries after the failure, want only the input", len(ents))
	}
}
