package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"ftpatch/runtime/abi"
)

// A PrologueSite is a site the runtime made at load from a function's
// prologue (record -P): its address, in a trampoline no symbol covers,
// which records hold, and its function's, which names it.
type PrologueSite struct {
	Site, Func uint64
}

// MovedTo returns the function whose trampoline's site is at addr, from
// ps (sorted by site); false for any other address.
func MovedTo(ps []PrologueSite, addr uint64) (uint64, bool) {
	i, ok := slices.BinarySearchFunc(ps, addr, func(p PrologueSite, a uint64) int {
		switch {
		case p.Site < a:
			return -1
		case p.Site > a:
			return 1
		}
		return 0
	})
	if !ok {
		return 0, false
	}
	return ps[i].Func, true
}

// readPrologues reads "<pid>.prologue" of dir (abi.PrologueSuffix): nil
// when there is none; an error naming it when it is not what the
// runtime writes.
func readPrologues(dir string, pid int) ([]PrologueSite, error) {
	path := filepath.Join(dir, strconv.Itoa(pid)+abi.PrologueSuffix)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) < abi.PrologueHeader || string(b[:8]) != abi.PrologueMagic || (len(b)-abi.PrologueHeader)%16 != 0 {
		return nil, fmt.Errorf("%s: %w: not a file of prologue sites (%d bytes)", path, ErrFormat, len(b))
	}
	b = b[abi.PrologueHeader:]
	out := make([]PrologueSite, 0, len(b)/16)
	for i := 0; i < len(b); i += 16 {
		out = append(out, PrologueSite{binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint64(b[i+8:])})
	}
	slices.SortFunc(out, func(a, b PrologueSite) int {
		switch {
		case a.Site < b.Site:
			return -1
		case a.Site > b.Site:
			return 1
		}
		return 0
	})
	return out, nil
}
