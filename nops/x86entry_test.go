package nops

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
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

// checkEntryNop: what X86EntryNop accepts decodes with x/arch as one NOP
// of exactly that length.
func checkEntryNop(t *testing.T, b []byte) int {
	t.Helper()
	n := X86EntryNop(b)
	if n == 0 {
		return 0
	}
	if n > len(b) {
		t.Fatalf("X86EntryNop(% x) = %d, past the bytes", b, n)
	}
	in, err := x86asm.Decode(b[:n], 64)
	if err != nil || in.Op != x86asm.NOP || in.Len != n {
		t.Fatalf("X86EntryNop(% x) = %d, but x/arch decodes %v (%d bytes), %v", b, n, in, in.Len, err)
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
	for _, l := range readInsns(t) {
		if in, err := x86asm.Decode(l.b, 64); l.arch == arch.X86_64 && err == nil && in.Op == x86asm.NOP {
			yes = append(yes, hex.EncodeToString(l.b))
		}
	}
	for _, s := range yes {
		b := unhex(t, s)
		for _, tail := range [][]byte{nil, {0xe8, 0, 0, 0, 0}, {0x90}} {
			if n := checkEntryNop(t, append(bytes.Clone(b), tail...)); n != len(b) {
				t.Errorf("X86EntryNop(% x + % x) = %d, want %d", b, tail, n, len(b))
			}
		}
	}
	for _, s := range []string{
		"",
		"f3 0f 1e fa",       // endbr64: not a NOP (X86SiteLead takes it apart)
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
		if n := X86EntryNop(unhex(t, s)); n != 0 {
			t.Errorf("X86EntryNop(%s) = %d, want 0", s, n)
		}
	}
}

// FuzzX86EntryNop: whatever X86EntryNop accepts is one NOP of that length
// to x/arch.
func FuzzX86EntryNop(f *testing.F) {
	for _, l := range readInsns(f) {
		if l.arch == arch.X86_64 {
			f.Add(l.b)
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
		want X86Lead
	}{
		{"fentry", "", call6, "8d 04 3f", X86LeadEntry},
		{"fentry endbr", "f3 0f 1e fa", call6, "", X86LeadEntry},
		{"gcc pfe5", "90 90 90 90 90", call6, "", X86LeadEntry},
		{"gcc pfe5 endbr", "f3 0f 1e fa 90 90 90 90 90", call5, "", X86LeadEntry},
		{"gcc pfe5,2", "90 90 90", call5, "", X86LeadEntry},
		{"clang pfe5", "0f 1f 44 00 08", call5, "", X86LeadEntry},
		{"clang pfe5 endbr", "f3 0f 1e fa 0f 1f 44 00 08", call5, "", X86LeadEntry},
		{"clang pfe5,2", "0f 1f 00", call5, "", X86LeadEntry},
		{"nested", "41 52", call6, pop, X86LeadChain},
		{"nested nopie", "41 52", call5, pop + " 41 8b 02", X86LeadChain},
		{"nested gcc12 cet", "41 52 f3 0f 1e fa", call6, pop, X86LeadChain},
		{"nested cet", "f3 0f 1e fa 41 52", call6, pop, X86LeadChain},
		{"nested pfe5", "41 52 90 90 90 90 90", call6, pop, X86LeadChain},
		{"nested pfe5 cet", "41 52 f3 0f 1e fa 90 90 90 90 90", call6, pop, X86LeadChain},
		{"nested nop6", "41 52", "66 0f 1f 44 00 00", pop, X86LeadChain},
		{"mcount", "55 48 89 e5", call5, "", X86LeadNone},
		{"mcount nested", "55 48 89 e5 41 52", call6, pop, X86LeadNone},
		{"push without pop", "41 52", call6, "5d", X86LeadNone},
		{"pop cut short", "41 52", call6, "41", X86LeadNone},
		{"push r10 after NOPs", "90 41 52", call6, pop, X86LeadNone},
		{"push r11", "41 53", call6, "41 5b", X86LeadNone},
		{"long NOP in a chain", "41 52 0f 1f 00", call6, pop, X86LeadNone},
		{"endbr after NOPs", "90 f3 0f 1e fa", call6, "", X86LeadNone},
		{"a NOP over the site", "0f 1f 44", call6, "", X86LeadNone},
		{"a push", "53", call5, "", X86LeadNone},
	} {
		t.Run(c.name, func(t *testing.T) {
			lead, site := unhex(t, c.lead), unhex(t, c.site)
			fn := append(append(append([]byte{}, lead...), site...), unhex(t, c.tail)...)
			if got := X86SiteLead(fn, uint64(len(lead)), len(site)); got != c.want {
				t.Errorf("X86SiteLead(% x, %d, %d) = %v, want %v", fn, len(lead), len(site), got, c.want)
			}
			// Seen from the site back, with the bytes of the function
			// before it (padding) in front: a chain site is one, and
			// its push is where the function starts.
			pad := unhex(t, "c3 66 2e 0f 1f 84 00 00 00 00 00")
			code := append(append([]byte{}, pad...), fn...)
			push := X86ChainPush(code, uint64(len(pad)+len(lead)), len(site))
			if c.want == X86LeadChain {
				if want := len(pad) + bytes.Index(lead, X86PushR10); push != want {
					t.Errorf("X86ChainPush = %d, want %d", push, want)
				}
			} else if c.want == X86LeadEntry && push != -1 {
				t.Errorf("X86ChainPush = %d for an entry site, want -1", push)
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
		if got := X86ChainPush(c.code, c.off, c.n); got != c.want {
			t.Errorf("%s: X86ChainPush(% x, %d, %d) = %d, want %d", c.name, c.code, c.off, c.n, got, c.want)
		}
	}
	if got := X86SiteLead(code, 20, 6); got != X86LeadNone {
		t.Errorf("X86SiteLead past the function = %v", got)
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
		if got := X86AreaStart(fn, uint64(len(lead))); got != c.want {
			t.Errorf("X86AreaStart(% x, %d) = %v, want %v", fn, len(lead), got, c.want)
		}
	}
	if X86AreaStart([]byte{0x90}, 2) {
		t.Error("X86AreaStart past the function: true")
	}
}
