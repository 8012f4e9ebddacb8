// Package insns reads isa/testdata/insns.txt, the list of every
// instruction the ISA packages write or recognise with the text GNU
// objdump prints for it, for the tests of isa, isa/x86 and isa/arm64.
package insns

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"ftpatch/arch"
)

// A Line is one line of the data file: one instruction.
type Line struct {
	Pos  string // file:line, for messages
	B    []byte
	Arch arch.Arch
	Asm  string // objdump's text, whitespace normalised
}

// Name is the line's architecture and bytes, which identify it.
func (l Line) Name() string { return fmt.Sprintf("%v/%x", l.Arch, l.B) }

// Read parses the data file at path; a malformed line or an empty file
// fails the test.
func Read(t testing.TB, path string) []Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []Line
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		pos := fmt.Sprintf("%s:%d", path, n)
		fields := strings.Split(text, "\t")
		if len(fields) != 3 {
			t.Fatalf("%s: want hex<TAB>arch<TAB>asm, got %d fields", pos, len(fields))
		}
		b, err := hex.DecodeString(fields[0])
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: bad hex %q: %v", pos, fields[0], err)
		}
		a, err := arch.Parse(fields[1])
		if err != nil {
			t.Fatalf("%s: %v", pos, err)
		}
		lines = append(lines, Line{Pos: pos, B: b, Arch: a, Asm: NormAsm(fields[2])})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Fatalf("%s: no instructions", path)
	}
	return lines
}

// NormAsm normalises objdump's whitespace.
func NormAsm(s string) string { return strings.Join(strings.Fields(s), " ") }
