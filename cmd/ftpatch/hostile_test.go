package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/elfx"
	"ftpatch/internal/fixture"
	"ftpatch/internal/sitetest"
)

// TestSitesHostile runs `ftpatch sites` on linked fixtures broken in one
// place each: every one is an error that names the file and the problem,
// and the file is byte-identical afterwards. (Except where the file is
// still valid: a zstd line table is a note, a call through a slot in bss
// a target only the run time knows.)
func TestSitesHostile(t *testing.T) {
	dir := filepath.Join("..", "..", fixture.LinkedDir)
	const (
		nopie  = "prog-x86_64-gcc-O2-g-pg-mfentry-nopie-rec" // absolute table words
		gz     = "prog-x86_64-gcc-O2-g-gz-pg-mfentry-nopie-rec"
		calls  = "callsx86-x86_64-gcc-shared"
		dwarf5 = "prog-x86_64-gcc-O2-g-pg-mfentry-rec"
		shared = "prog-x86_64-gcc-O2-g-pg-mfentry-shared-rec"
	)
	tests := []struct {
		name, base string
		edit       func(t *testing.T, f *elfx.File, b []byte) []byte
		want       string // in the error; or, when listed is set, in the output
		listed     bool   // the file is valid, with something the listing must show
	}{
		{"truncated", nopie, func(t *testing.T, f *elfx.File, b []byte) []byte { return b[:len(b)/2] },
			"past the end of the", false},
		{"table entry outside every segment", nopie, func(t *testing.T, f *elfx.File, b []byte) []byte {
			putWord(t, f, b, "__mcount_loc", 0, 0x7fff00000000)
			return b
		}, `section "__mcount_loc": entry 0x7fff00000000 is not in any loaded segment`, false},
		{"table entry in data", nopie, func(t *testing.T, f *elfx.File, b []byte) []byte {
			putWord(t, f, b, "__mcount_loc", 8, uint64(f.Section("__mcount_loc").Addr))
			return b
		}, `is in section "__mcount_loc", which holds no code`, false},
		{"table entry in bss", nopie, func(t *testing.T, f *elfx.File, b []byte) []byte {
			putWord(t, f, b, "__mcount_loc", 8, uint64(f.Section(".bss").Addr))
			return b
		}, `is in section ".bss", which holds no code`, false},
		{"table size not whole words", nopie, func(t *testing.T, f *elfx.File, b []byte) []byte {
			putShdr(t, f, b, "__mcount_loc", 32, 12)
			return b
		}, `"__mcount_loc": size 12 is not a multiple of 8`, false},
		{"symbol name out of range", nopie, func(t *testing.T, f *elfx.File, b []byte) []byte {
			s, _, err := f.Symtab()
			if err != nil {
				t.Fatal(err)
			}
			binary.LittleEndian.PutUint32(b[s.Off+24:], 0xffffff) // symbol 1's st_name
			return b
		}, "symbol 1: name offset 16777215 is outside", false},
		{"huge section size", nopie, func(t *testing.T, f *elfx.File, b []byte) []byte {
			putShdr(t, f, b, ".debug_info", 32, 1<<62)
			return b
		}, "run past the end of the", false},
		{"call through a slot outside every segment", calls, func(t *testing.T, f *elfx.File, b []byte) []byte {
			off := symOff(t, f, "hook_got")
			if b[off] != 0xff || b[off+1] != 0x15 {
				t.Fatalf("hook_got starts % x, want ff 15", b[off:off+2])
			}
			binary.LittleEndian.PutUint32(b[off+2:], 0x40000000)
			return b
		}, "in hook_got: pointer slot: address 0x40000466 is not in any loaded segment", false},
		{"call through a slot in bss", shared, func(t *testing.T, f *elfx.File, b []byte) []byte {
			off := symOff(t, f, "bump")
			if b[off] != 0xff || b[off+1] != 0x15 {
				t.Fatalf("bump starts % x, want ff 15", b[off:off+2])
			}
			site := sitetest.Symbol(t, f, "bump")
			binary.LittleEndian.PutUint32(b[off+2:], uint32(uint64(f.Section(".bss").Addr)-(site+6)))
			return b
		}, "bump      fentry  6    direct  ?@got", true},
		{"line table garbage", dwarf5, func(t *testing.T, f *elfx.File, b []byte) []byte {
			s := f.Section(".debug_line")
			copy(b[s.Off:], bytes.Repeat([]byte{0xff}, 4))
			return b
		}, `source lines: section ".debug_line": unit at 0x0: 64-bit unit length runs past the end of the section`, false},
		{"line table unit too long", dwarf5, func(t *testing.T, f *elfx.File, b []byte) []byte {
			s := f.Section(".debug_line")
			binary.LittleEndian.PutUint32(b[s.Off:], uint32(s.Size))
			return b
		}, `unit at 0x0: unit length`, false},
		{"compressed line table claims too much", gz, func(t *testing.T, f *elfx.File, b []byte) []byte {
			s := f.Section(".debug_line")
			binary.LittleEndian.PutUint64(b[s.Off+8:], 1<<40)
			return b
		}, `section ".debug_line": compressed contents claim 1099511627776 bytes`, false},
		{"compressed line table corrupt", gz, func(t *testing.T, f *elfx.File, b []byte) []byte {
			s := f.Section(".debug_line")
			copy(b[s.Off+24:], []byte{0, 0, 0, 0})
			return b
		}, `section ".debug_line": zlib: invalid header`, false},
		{"zstd line table", gz, func(t *testing.T, f *elfx.File, b []byte) []byte {
			s := f.Section(".debug_line")
			binary.LittleEndian.PutUint32(b[s.Off:], 2) // ELFCOMPRESS_ZSTD
			return b
		}, `note: section ".debug_line" is compressed with zstd`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join(dir, tt.base))
			if err != nil {
				t.Fatal(err)
			}
			f, err := elfx.Parse(tt.base, bytes.Clone(orig))
			if err != nil {
				t.Fatal(err)
			}
			bad := tt.edit(t, f, bytes.Clone(orig))
			path := filepath.Join(t.TempDir(), tt.base)
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := ftpatch("sites", path)
			t.Logf("%s%v", out, err)
			switch {
			case tt.listed && err != nil:
				t.Errorf("error %v, want %q in the listing", err, tt.want)
			case tt.listed && !strings.Contains(out, tt.want):
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			case !tt.listed && err == nil:
				t.Errorf("no error, want one with %q; output:\n%s", tt.want, out)
			case !tt.listed && (!strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %q, want the path and %q", err, tt.want)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, bad) {
				t.Errorf("%s changed", path)
			}
		})
	}
}

// putWord stores v at byte off of section name's contents.
func putWord(t *testing.T, f *elfx.File, b []byte, name string, off uint64, v uint64) {
	t.Helper()
	s := f.Section(name)
	if s == nil || off+8 > s.Size {
		t.Fatalf("no 8 bytes at +%d in section %q", off, name)
	}
	binary.LittleEndian.PutUint64(b[uint64(s.Off)+off:], v)
}

// putShdr stores v at byte field of section name's header.
func putShdr(t *testing.T, f *elfx.File, b []byte, name string, field int, v uint64) {
	t.Helper()
	s := f.Section(name)
	if s == nil {
		t.Fatalf("no section %q", name)
	}
	shoff := binary.LittleEndian.Uint64(b[40:])
	binary.LittleEndian.PutUint64(b[shoff+uint64(s.Index)*64+uint64(field):], v)
}

// symOff returns the file offset of function name's first byte.
func symOff(t *testing.T, f *elfx.File, name string) uint64 {
	t.Helper()
	off, err := f.AddrToOff(elfx.Addr(sitetest.Symbol(t, f, name)), 1)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(off)
}
