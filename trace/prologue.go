package trace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// readPrologues reads "<pid>.prologue" of dir (abi.PrologueSuffix),
// streamed, as openFile opens trace files (no symbolic link, a regular
// file): nil when there is none; an error naming it when it is not what
// the runtime writes. Its sites are kept, 16 bytes each: what the
// symbols of the trampolines they stand for would take.
func readPrologues(dir string, pid int) ([]PrologueSite, error) {
	path := filepath.Join(dir, strconv.Itoa(pid)+abi.PrologueSuffix)
	f, size, err := openFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size < abi.PrologueHeader || (size-abi.PrologueHeader)%16 != 0 {
		return nil, fmt.Errorf("%s: %w: not a file of prologue sites (%d bytes)", path, ErrFormat, size)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var hdr [abi.PrologueHeader]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil || string(hdr[:8]) != abi.PrologueMagic {
		return nil, fmt.Errorf("%s: %w: not a file of prologue sites", path, ErrFormat)
	}
	n := (size - abi.PrologueHeader) / 16
	out := make([]PrologueSite, 0, n)
	var pair [16]byte
	for range n {
		if _, err := io.ReadFull(br, pair[:]); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, PrologueSite{binary.LittleEndian.Uint64(pair[:]), binary.LittleEndian.Uint64(pair[8:])})
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
