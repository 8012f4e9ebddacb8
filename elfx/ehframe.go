package elfx

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// An FDERange is the code one frame description entry of .eh_frame
// covers, [Start, End): in a file without a symbol table (stripped),
// what the unwinder knows of a function's extent.
type FDERange struct {
	Start, End Addr
	// Entry says the frame at Start is the CIE's own (no CFA
	// instruction before the first advance): a function's entry, where
	// the return address is where a call leaves it. A range starting
	// mid-frame is code jumped to, not called: a PLT's stubs, or the
	// cold part a compiler split from its function.
	Entry bool
}

// The DW_EH_PE pointer encodings .eh_frame's entries use (LSB DWARF
// extensions, "Linux Standard Base Core Specification", 10.5).
const (
	pePtr     = 0x00 // absolute, the address size
	peULEB    = 0x01
	peU2      = 0x02
	peU4      = 0x03
	peU8      = 0x04
	peSLEB    = 0x09
	peS2      = 0x0a
	peS4      = 0x0b
	peS8      = 0x0c
	pePCRel   = 0x10 // relative to the encoded field's own address
	peOmit    = 0xff
	peFormat  = 0x0f
	peApplied = 0x70
)

// FDERanges reads the .eh_frame section of a linked file and returns
// the range each FDE covers, sorted by start, empty ranges left out.
// A file without .eh_frame has none (and no error).
func (f *File) FDERanges() ([]FDERange, error) {
	s := f.Section(".eh_frame")
	if s == nil {
		return nil, nil
	}
	d := f.SectionData(s)
	type cieInfo struct {
		enc byte // its FDEs' pointer encoding
		z   bool // its FDEs have augmentation data ('z')
	}
	cies := map[int]cieInfo{}
	var out []FDERange
	bad := func(off int, format string, args ...any) error {
		return fmt.Errorf("%s at offset 0x%x: %s", s, off, fmt.Sprintf(format, args...))
	}
	for off := 0; off+4 <= len(d); {
		length := uint64(binary.LittleEndian.Uint32(d[off:]))
		hdr := 4
		if length == 0 {
			break // the terminator
		}
		if length == 0xffffffff {
			if off+12 > len(d) {
				return nil, bad(off, "truncated 64-bit length")
			}
			length, hdr = binary.LittleEndian.Uint64(d[off+4:]), 12
		}
		end := off + hdr + int(length)
		if length > uint64(len(d)) || end > len(d) || end < off+hdr+4 {
			return nil, bad(off, "entry of %d bytes runs past the section's end", length)
		}
		idOff := off + hdr
		id := binary.LittleEndian.Uint32(d[idOff:])
		body := d[idOff+4 : end]
		if id == 0 {
			enc, z, err := cieEncoding(body)
			if err != nil {
				return nil, bad(off, "CIE: %v", err)
			}
			cies[off] = cieInfo{enc, z}
		} else {
			cie := idOff - int(id)
			ci, ok := cies[cie]
			enc := ci.enc
			if !ok {
				return nil, bad(off, "FDE names no CIE before it (pointer 0x%x)", id)
			}
			field := uint64(s.Addr) + uint64(idOff+4)
			start, n, err := readEncoded(body, enc, field)
			if err != nil {
				return nil, bad(off, "FDE's start: %v", err)
			}
			size, m, err := readEncoded(body[n:], enc&peFormat, 0)
			if err != nil {
				return nil, bad(off, "FDE's range: %v", err)
			}
			insns := body[n+m:]
			if ci.z {
				l, k := uleb(insns)
				if k == 0 || uint64(k)+l > uint64(len(insns)) {
					return nil, bad(off, "FDE's augmentation data runs past its end")
				}
				insns = insns[uint64(k)+l:]
			}
			if size > 0 && start != 0 {
				out = append(out, FDERange{Addr(start), Addr(start + size), entryFrame(insns)})
			}
		}
		off = end
	}
	slices.SortFunc(out, func(a, b FDERange) int {
		if a.Start != b.Start {
			return cmpAddr(a.Start, b.Start)
		}
		return cmpAddr(a.End, b.End)
	})
	return out, nil
}

func cmpAddr(a, b Addr) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// entryFrame reports whether an FDE's call frame instructions leave the
// CIE's frame as it is at the FDE's start: nothing but DW_CFA_nop
// before the first advance of the location.
func entryFrame(insns []byte) bool {
	for _, op := range insns {
		switch {
		case op&0xc0 == 0x40: // DW_CFA_advance_loc
			return true
		case op >= 0x01 && op <= 0x04: // set_loc, advance_loc1/2/4
			return true
		case op == 0x00: // DW_CFA_nop
		default:
			return false
		}
	}
	return true
}

// cieEncoding reads a CIE's body (after its ID) for the encoding of its
// FDEs' addresses (the 'R' augmentation's, else absolute) and whether
// its FDEs carry augmentation data.
func cieEncoding(b []byte) (enc byte, z bool, err error) {
	enc, err = cieEnc(b)
	return enc, err == nil && cieHasZ(b), err
}

// cieHasZ reports whether a CIE's augmentation string starts with 'z'.
func cieHasZ(b []byte) bool { return len(b) > 1 && b[1] == 'z' }

func cieEnc(b []byte) (byte, error) {
	if len(b) < 1 {
		return 0, fmt.Errorf("truncated")
	}
	version := b[0]
	i := 1
	aug := i
	for i < len(b) && b[i] != 0 {
		i++
	}
	if i >= len(b) {
		return 0, fmt.Errorf("augmentation string not ended")
	}
	augStr := string(b[aug:i])
	i++
	if len(augStr) >= 2 && augStr[:2] == "eh" {
		i += 8
	}
	for _, signed := range []bool{false, true} { // code alignment, data alignment
		_, n := uleb(b[min(i, len(b)):])
		if n == 0 {
			return 0, fmt.Errorf("truncated alignment factors (signed %v)", signed)
		}
		i += n
	}
	if version == 1 {
		i++
	} else {
		_, n := uleb(b[min(i, len(b)):])
		i += n
	}
	if len(augStr) == 0 || augStr[0] != 'z' {
		return pePtr, nil
	}
	_, n := uleb(b[min(i, len(b)):])
	if n == 0 {
		return 0, fmt.Errorf("truncated augmentation length")
	}
	i += n
	for _, c := range augStr[1:] {
		if i >= len(b) {
			return 0, fmt.Errorf("truncated augmentation data")
		}
		switch c {
		case 'R':
			return b[i], nil
		case 'L':
			i++
		case 'P':
			enc := b[i]
			_, m, err := readEncoded(b[i+1:], enc&^0x80, 0)
			if err != nil {
				return 0, fmt.Errorf("personality: %w", err)
			}
			i += 1 + m
		case 'S', 'B', 'G':
		default:
			return 0, fmt.Errorf("unknown augmentation %q", augStr)
		}
	}
	return pePtr, nil
}

// readEncoded reads a pointer in encoding enc from b, whose first byte
// lies at address at (for pc-relative pointers); it returns the value
// and the bytes read.
func readEncoded(b []byte, enc byte, at uint64) (uint64, int, error) {
	if enc == peOmit {
		return 0, 0, nil
	}
	var v uint64
	var n int
	need := func(k int) bool { n = k; return len(b) >= k }
	switch enc & peFormat {
	case pePtr, peU8, peS8:
		if !need(8) {
			return 0, 0, fmt.Errorf("truncated pointer")
		}
		v = binary.LittleEndian.Uint64(b)
	case peU4:
		if !need(4) {
			return 0, 0, fmt.Errorf("truncated pointer")
		}
		v = uint64(binary.LittleEndian.Uint32(b))
	case peS4:
		if !need(4) {
			return 0, 0, fmt.Errorf("truncated pointer")
		}
		v = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	case peU2:
		if !need(2) {
			return 0, 0, fmt.Errorf("truncated pointer")
		}
		v = uint64(binary.LittleEndian.Uint16(b))
	case peS2:
		if !need(2) {
			return 0, 0, fmt.Errorf("truncated pointer")
		}
		v = uint64(int64(int16(binary.LittleEndian.Uint16(b))))
	case peULEB:
		v, n = uleb(b)
	case peSLEB:
		v, n = sleb(b)
	default:
		return 0, 0, fmt.Errorf("pointer encoding 0x%x not known", enc)
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("truncated pointer")
	}
	switch enc & peApplied {
	case 0:
	case pePCRel:
		v += at
	default:
		return 0, 0, fmt.Errorf("pointer encoding 0x%x: only absolute and pc-relative are read", enc)
	}
	return v, n, nil
}

func uleb(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i >= 10 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

func sleb(b []byte) (uint64, int) {
	var v int64
	for i, c := range b {
		if i >= 10 {
			return 0, 0
		}
		v |= int64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if shift := 7 * (i + 1); shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return uint64(v), i + 1
		}
	}
	return 0, 0
}
