package infile_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"ftpatch/infile"
)

// TestMap: a small file is read and a large one mapped, each giving the
// file's bytes until Close; a FIFO or a directory is refused as Open
// refuses it, without blocking.
func TestMap(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 100, 1<<20 - 1, 1 << 20, 3<<20 + 7} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i*7 + i>>12)
		}
		path := filepath.Join(dir, "file")
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := infile.Map(path)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if !bytes.Equal(m.Data, want) {
			t.Errorf("%d bytes: Map gave %d bytes, not the file's", size, len(m.Data))
		}
		if err := m.Close(); err != nil {
			t.Errorf("%d bytes: Close: %v", size, err)
		}
		if err := m.Close(); err != nil {
			t.Errorf("%d bytes: a second Close: %v", size, err)
		}
	}
	for _, p := range []string{fifo, dir} {
		if _, err := infile.Map(p); !errors.Is(err, infile.ErrNotRegular) {
			t.Errorf("Map(%s): %v, want ErrNotRegular", p, err)
		}
	}
}
