package x86

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
	"ftpatch/isa/internal/insns"
)

// unhex reads bytes written as hex with spaces.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b
}

// checkEntryNop: what EntryNop accepts decodes with x/arch as one NOP
// of exactly that length.
func checkEntryNop(t *testing.T, b []byte) int {
	t.Helper()
	n := EntryNop(b)
	if n == 0 {
		return 0
	}
	if n > len(b) {
		t.Fatalf("EntryNop(% x) = %d, past the bytes", b, n)
	}
	in, err := x86asm.Decode(b[:n], 64)
	if err != nil || in.Op != x86asm.NOP || in.Len != n {
		t.Fatalf("EntryNop(% x) = %d, but x/arch decodes %v (%d bytes), %v", b, n, in, in.Len, err)
	}
	return n
}

// TestX86EntryNop: the NOPs compilers put in patchable areas and
// alignment padding, and the ones ftpatch writes, are entry NOPs of their
// decoded length, followed by anything; other bytes, and a NOP cut short,
// are not.
func TestX86EntryNop(t *testing.T) {
	yes := []string{
		"90",                            // gcc's patchable NOPs
		"0f 1f 44 00 08",                // clang's -fpatchable-function-entry=5
		"0f 1f 00",                      // clang's 3-byte one
		"66 2e 0f 1f 84 00 00 00 00 00", // gcc's padding: cs nopw
		"66 66 2e 0f 1f 84 00 00 00 00 00",
		"0f 1f 04 25 00 00 00 00", // nopl 0x0 (SIB, no base)
		"0f 1f 05 00 00 00 00",    // nopl 0x0(%rip)
		"0f 1f c0",                // nop %eax
		"2e 90",
	}
	for _, l := range insns.Read(t, insnsFile) {
		if in, err := x86asm.Decode(l.B, 64); l.Arch == arch.X86_64 && err == nil && in.Op == x86asm.NOP {
			yes = append(yes, hex.EncodeToString(l.B))
		}
	}
	for _, s := range yes {
		b := unhex(t, s)
		for _, tail := range [][]byte{nil, {0xe8, 0, 0, 0, 0}, {0x90}} {
			if n := checkEntryNop(t, append(bytes.Clone(b), tail...)); n != len(b) {
				t.Errorf("EntryNop(% x + % x) = %d, want %d", b, tail, n, len(b))
			}
		}
	}
	for _, s := range []string{
		"",
		"f3 0f 1e fa",       // endbr64: not a NOP (SiteLead takes it apart)
		"f3 90",             // pause
		"0f 1f c8",          // nop /1: not a form compilers emit
		"0f 1f 44 00",       // cut short
		"0f 1f 80 00 00 00", // cut short
		"0f 1f 04",          // SIB missing
		"66 66",             // prefixes of nothing
		"eb 03 90 90 90",    // a jump over padding: ours, but not an entry NOP
		"e8 00 00 00 00",
		"41 52",
		"cc",
		"66 66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", // 16 bytes: longer than any instruction
	} {
		if n := EntryNop(unhex(t, s)); n != 0 {
			t.Errorf("EntryNop(%s) = %d, want 0", s, n)
		}
	}
}

// FuzzX86EntryNop: whatever EntryNop accepts is one NOP of that length
// to x/arch.
func FuzzX86EntryNop(f *testing.F) {
	for _, l := range insns.Read(f, insnsFile) {
		if l.Arch == arch.X86_64 {
			f.Add(l.B)
		}
	}
	f.Add([]byte{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) { checkEntryNop(t, b) })
}

// TestX86SiteLead: the bytes compilers put before a call of __fentry__,
// as gcc 12 and clang 14 emit them (objdump of their -O2 output, call
// and what follows written out), each with the lead it is; then bytes
// that must not be taken for an entry.
func TestX86SiteLead(t *testing.T) {
	const (
		call5 = "e8 00 00 00 00"    // call __fentry__ (-fno-pie)
		call6 = "ff 15 00 00 00 00" // call *__fentry__@GOTPCREL(%rip)
		pop   = "41 5a"             // pop %r10
	)
	for _, c := range []struct {
		name string
		lead string // the bytes before the site
		site string
		tail string // the bytes after it
		want Lead
	}{
		{"fentry", "", call6, "8d 04 3f", LeadEntry},
		{"fentry endbr", "f3 0f 1e fa", call6, "", LeadEntry},
		{"gcc pfe5", "90 90 90 90 90", call6, "", LeadEntry},
		{"gcc pfe5 endbr", "f3 0f 1e fa 90 90 90 90 90", call5, "", LeadEntry},
		{"gcc pfe5,2", "90 90 90", call5, "", LeadEntry},
		{"clang pfe5", "0f 1f 44 00 08", call5, "", LeadEntry},
		{"clang pfe5 endbr", "f3 0f 1e fa 0f 1f 44 00 08", call5, "", LeadEntry},
		{"clang pfe5,2", "0f 1f 00", call5, "", LeadEntry},
		{"nested", "41 52", call6, pop, LeadChain},
		{"nested nopie", "41 52", call5, pop + " 41 8b 02", LeadChain},
		{"nested gcc12 cet", "41 52 f3 0f 1e fa", call6, pop, LeadChain},
		{"nested cet", "f3 0f 1e fa 41 52", call6, pop, LeadChain},
		{"nested pfe5", "41 52 90 90 90 90 90", call6, pop, LeadChain},
		{"nested pfe5 cet", "41 52 f3 0f 1e fa 90 90 90 90 90", call6, pop, LeadChain},
		{"nested nop6", "41 52", "66 0f 1f 44 00 00", pop, LeadChain},
		{"mcount", "55 48 89 e5", call5, "", LeadNone},
		{"mcount nested", "55 48 89 e5 41 52", call6, pop, LeadNone},
		{"push without pop", "41 52", call6, "5d", LeadNone},
		{"pop cut short", "41 52", call6, "41", LeadNone},
		{"push r10 after NOPs", "90 41 52", call6, pop, LeadNone},
		{"push r11", "41 53", call6, "41 5b", LeadNone},
		{"long NOP in a chain", "41 52 0f 1f 00", call6, pop, LeadNone},
		{"endbr after NOPs", "90 f3 0f 1e fa", call6, "", LeadNone},
		{"a NOP over the site", "0f 1f 44", call6, "", LeadNone},
		{"a push", "53", call5, "", LeadNone},
	} {
		t.Run(c.name, func(t *testing.T) {
			lead, site := unhex(t, c.lead), unhex(t, c.site)
			fn := append(append(append([]byte{}, lead...), site...), unhex(t, c.tail)...)
			if got := SiteLead(fn, uint64(len(lead)), len(site)); got != c.want {
				t.Errorf("SiteLead(% x, %d, %d) = %v, want %v", fn, len(lead), len(site), got, c.want)
			}
			// Seen from the site back, with the bytes of the function
			// before it (padding) in front: a chain site is one, and
			// its push is where the function starts.
			pad := unhex(t, "c3 66 2e 0f 1f 84 00 00 00 00 00")
			code := append(append([]byte{}, pad...), fn...)
			push := ChainPush(code, uint64(len(pad)+len(lead)), len(site))
			if c.want == LeadChain {
				if want := len(pad) + bytes.Index(lead, PushR10); push != want {
					t.Errorf("ChainPush = %d, want %d", push, want)
				}
			} else if c.want == LeadEntry && push != -1 {
				t.Errorf("ChainPush = %d for an entry site, want -1", push)
			}
		})
	}
}

// TestX86ChainPushBounds: the push is looked for only within the bytes
// given, and the pop only after the site's own n bytes.
func TestX86ChainPushBounds(t *testing.T) {
	code := unhex(t, "41 52 ff 15 00 00 00 00 41 5a")
	for _, c := range []struct {
		name string
		code []byte
		off  uint64
		n    int
		want int
	}{
		{"whole", code, 2, 6, 0},
		{"push cut off", code[1:], 1, 6, -1},
		{"pop cut off", code[:9], 2, 6, -1},
		{"wrong length", code, 2, 5, -1},
		{"past the end", code, 20, 6, -1},
	} {
		if got := ChainPush(c.code, c.off, c.n); got != c.want {
			t.Errorf("%s: ChainPush(% x, %d, %d) = %d, want %d", c.name, c.code, c.off, c.n, got, c.want)
		}
	}
	if got := SiteLead(code, 20, 6); got != LeadNone {
		t.Errorf("SiteLead past the function = %v", got)
	}
}

// TestX86AreaStart: where gcc and clang start a patchable area in a
// function, and places that are not its entry.
func TestX86AreaStart(t *testing.T) {
	for _, c := range []struct {
		lead string
		want bool
	}{
		{"", true},
		{"f3 0f 1e fa", true},
		{"41 52", true},
		{"41 52 f3 0f 1e fa", true},
		{"f3 0f 1e fa 41 52", true},
		{"55", false},
		{"41 52 55", false},
		{"90", false},
		{"f3 0f 1e fa f3 0f 1e fa", false},
		{"41 52 41 52", false},
	} {
		lead := unhex(t, c.lead)
		fn := append(bytes.Clone(lead), 0x90, 0x90, 0x90, 0x90, 0x90)
		if got := AreaStart(fn, uint64(len(lead))); got != c.want {
			t.Errorf("AreaStart(% x, %d) = %v, want %v", fn, len(lead), got, c.want)
		}
	}
	if AreaStart([]byte{0x90}, 2) {
		t.Error("AreaStart past the function: true")
	}
}
