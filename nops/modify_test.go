package nops_test

import (
	"bytes"
	"errors"
	"fmt"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
	"ftpatch/nops"
	"math"
	"testing"
)

var errFake = errors.New("fake fault")

// failingText wraps nops.Bytes and fails or ignores chosen accesses, counting
// writes so tests can check that a refused site was never written.
type failingText struct {
	nops.Bytes
	failReads  int  // fail ReadAt calls after this many have succeeded; <0: never
	failWrites bool // WriteAt returns an error
	dropWrites bool // WriteAt reports success but stores nothing
	reads      int
	writes     int
}

func (f *failingText) ReadAt(p []byte, addr uint64) error {
	f.reads++
	if f.failReads >= 0 && f.reads > f.failReads {
		return errFake
	}
	return f.Bytes.ReadAt(p, addr)
}

func (f *failingText) WriteAt(p []byte, addr uint64) error {
	f.writes++
	switch {
	case f.failWrites:
		return errFake
	case f.dropWrites:
		return nil
	}
	return f.Bytes.WriteAt(p, addr)
}

const siteAddr = 0x401000

var (
	siteCall  = []byte{0xe8, 0x12, 0x34, 0x56, 0x78} // call .+0x78563417
	siteNop5  = x86.NOP5
	siteARM64 = arm64.Bytes(arm64.NOP, arm64.NOP)
)

// newText returns a text of 16 0xcc bytes at siteAddr-4 with code at siteAddr.
func newText(code []byte) *failingText {
	b := bytes.Repeat([]byte{0xcc}, 16) // int3
	copy(b[4:], code)
	return &failingText{Bytes: nops.Bytes{Base: siteAddr - 4, B: b}, failReads: -1}
}

func TestModify(t *testing.T) {
	bl, err := arm64.BL(siteAddr+4, siteAddr+0x1000)
	if err != nil {
		t.Fatal(err)
	}
	siteBL := arm64.Bytes(arm64.MovX9X30, bl)

	tests := []struct {
		name     string
		text     *failingText
		addr     uint64
		old, new []byte
		want     error // sentinel matched, nil for success; errBadArgs for a caller bug
		after    []byte
		written  bool // whether WriteAt may have been called
	}{
		{"x86 enable", newText(siteNop5), siteAddr, siteNop5, siteCall, nil, siteCall, true},
		{"x86 disable", newText(siteCall), siteAddr, siteCall, siteNop5, nil, siteNop5, true},
		{"arm64 enable", newText(siteARM64), siteAddr, siteARM64, siteBL, nil, siteBL, true},
		{"mismatch", newText(siteCall), siteAddr, siteNop5, siteCall, nops.ErrUnexpected, siteCall, false},
		{"already enabled", newText(siteCall), siteAddr, siteNop5, siteCall, nops.ErrUnexpected, siteCall, false},
		{"read fails", func() *failingText { f := newText(siteNop5); f.failReads = 0; return f }(),
			siteAddr, siteNop5, siteCall, nops.ErrRead, siteNop5, false},
		{"before text", newText(siteNop5), siteAddr - 5, siteNop5, siteCall, nops.ErrRead, siteNop5, false},
		{"past text", newText(siteNop5), siteAddr + 12, siteNop5, siteCall, nops.ErrRead, siteNop5, false},
		{"straddles end", newText(siteNop5), siteAddr + 8, siteNop5, siteCall, nops.ErrRead, siteNop5, false},
		{"address wraps", newText(siteNop5), math.MaxUint64 - 1, siteNop5, siteCall, nops.ErrRead, siteNop5, false},
		{"write fails", func() *failingText { f := newText(siteNop5); f.failWrites = true; return f }(),
			siteAddr, siteNop5, siteCall, nops.ErrWrite, siteNop5, true},
		{"write does not stick", func() *failingText { f := newText(siteNop5); f.dropWrites = true; return f }(),
			siteAddr, siteNop5, siteCall, nops.ErrWrite, siteNop5, true},
		{"read back fails", func() *failingText { f := newText(siteNop5); f.failReads = 1; return f }(),
			siteAddr, siteNop5, siteCall, nops.ErrWrite, siteCall, true},
		{"lengths differ", newText(siteNop5), siteAddr, siteNop5, x86.NOP6, errBadArgs, siteNop5, false},
		{"empty", newText(siteNop5), siteAddr, nil, nil, errBadArgs, siteNop5, false},
	}
	sentinels := []error{nops.ErrRead, nops.ErrUnexpected, nops.ErrWrite, nops.ErrRange, nops.ErrAlign}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := bytes.Clone(tt.text.B)
			err := nops.Modify(tt.text, tt.addr, tt.old, tt.new)
			switch tt.want {
			case nil:
				if err != nil {
					t.Fatalf("Modify: %v", err)
				}
			case errBadArgs:
				if err == nil {
					t.Fatal("Modify succeeded, want an error")
				}
			default:
				if !errors.Is(err, tt.want) {
					t.Fatalf("Modify: %v, want errors.Is %v", err, tt.want)
				}
			}
			for _, s := range sentinels {
				if s != tt.want && errors.Is(err, s) {
					t.Errorf("Modify: %v also matches %v", err, s)
				}
			}
			if tt.want == nops.ErrRead && tt.text.failReads == 0 && !errors.Is(err, errFake) {
				t.Errorf("Modify: %v does not wrap the nops.Text's error", err)
			}
			if got := tt.text.B[4 : 4+len(tt.after)]; !bytes.Equal(got, tt.after) {
				t.Errorf("site holds % x, want % x", got, tt.after)
			}
			if !tt.written && tt.text.writes != 0 {
				t.Errorf("WriteAt called %d times, want none", tt.text.writes)
			}
			// Nothing outside the site may change.
			changed := bytes.Clone(tt.text.B)
			copy(changed[4:], before[4:4+len(tt.after)])
			if !bytes.Equal(changed, before) {
				t.Errorf("bytes outside the site changed: % x, was % x", tt.text.B, before)
			}
		})
	}
}

// errBadArgs marks cases where nops.Modify must fail without any sentinel.
var errBadArgs = errors.New("bad arguments")

// TestMismatchError checks the structured error: its text, its fields,
// and that errors.As finds it through wrapping.
func TestMismatchError(t *testing.T) {
	text := newText(siteCall)
	err := nops.Modify(text, siteAddr, siteNop5, siteCall)
	const want = "site 0x401000: want 0f 1f 44 00 00, found e8 12 34 56 78"
	if err == nil || err.Error() != want {
		t.Fatalf("Modify: %v, want %q", err, want)
	}
	wrapped := fmt.Errorf("function f: %w", err)
	var me *nops.MismatchError
	if !errors.As(wrapped, &me) {
		t.Fatalf("errors.As(%v, *nops.MismatchError) = false", wrapped)
	}
	if me.Addr != siteAddr || !bytes.Equal(me.Want, siteNop5) || !bytes.Equal(me.Got, siteCall) {
		t.Errorf("MismatchError = %+v", *me)
	}
	if !errors.Is(wrapped, nops.ErrUnexpected) {
		t.Errorf("errors.Is(%v, nops.ErrUnexpected) = false", wrapped)
	}
	// The error owns its bytes: later changes to the text or the caller's
	// slices do not rewrite the report.
	text.B[4] = 0x90
	if me.Got[0] != 0xe8 || !bytes.Equal(me.Want, x86.NOP5) {
		t.Errorf("MismatchError changed with the text: %v", me)
	}
}

// TestBytes checks the bounds of the slice-backed nops.Text, and that a nops.Bytes
// value (not a pointer) writes through to its slice.
func TestBytes(t *testing.T) {
	buf := []byte{0, 1, 2, 3, 4, 5, 6, 7}
	var text nops.Text = nops.Bytes{Base: 0x1000, B: buf}
	tests := []struct {
		addr uint64
		n    int
		ok   bool
	}{
		{0x1000, 8, true},
		{0x1003, 2, true},
		{0x1008, 0, true},
		{0x1007, 1, true},
		{0x1007, 2, false},
		{0x1008, 1, false},
		{0xfff, 1, false},
		{0xfff, 0, false},
		{0x1009, 0, false},
		{0, 1, false},
		{math.MaxUint64, 1, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%#x+%d", tt.addr, tt.n), func(t *testing.T) {
			p := make([]byte, tt.n)
			if err := text.ReadAt(p, tt.addr); (err == nil) != tt.ok {
				t.Fatalf("ReadAt: %v, want ok %v", err, tt.ok)
			}
			if !tt.ok {
				if err := text.WriteAt(p, tt.addr); err == nil {
					t.Fatal("WriteAt succeeded out of range")
				}
				return
			}
			off := tt.addr - 0x1000
			if !bytes.Equal(p, buf[off:off+uint64(tt.n)]) {
				t.Errorf("ReadAt got % x", p)
			}
			w := bytes.Repeat([]byte{0xaa}, tt.n)
			if err := text.WriteAt(w, tt.addr); err != nil {
				t.Fatalf("WriteAt: %v", err)
			}
			if !bytes.Equal(buf[off:off+uint64(tt.n)], w) {
				t.Errorf("WriteAt did not reach the slice: % x", buf)
			}
		})
	}
}
