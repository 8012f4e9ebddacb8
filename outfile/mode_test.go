package outfile

import (
	"os"
	"testing"
)

// TestModeBits: fileMode and unixMode are each other's inverse over every
// permission and special bit (setuid, setgid, sticky), and map each
// special bit to its own counterpart.
func TestModeBits(t *testing.T) {
	for m := uint32(0); m <= 0o7777; m++ {
		fm := fileMode(m)
		if fm&^modeBits != 0 || unixMode(fm) != m {
			t.Fatalf("st_mode %#o: FileMode %v, back %#o", m, fm, unixMode(fm))
		}
	}
	for _, c := range []struct {
		m  uint32
		fm os.FileMode
	}{{0o4755, os.ModeSetuid | 0o755}, {0o2750, os.ModeSetgid | 0o750}, {0o1777, os.ModeSticky | 0o777}} {
		if got := fileMode(c.m); got != c.fm {
			t.Errorf("fileMode(%#o) = %v, want %v", c.m, got, c.fm)
		}
	}
}
