package patch

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"

	"ftpatch/nops"
)

// textHash hashes what ftpatch must never change: the file contents of
// every executable segment, with each slot's bytes (and the config record,
// should it lie in such a segment) read as zeros. It is the same before
// and after any enable or disable, so verify can tell that nothing but
// the sites changed since ftpatch last wrote the file.
func (b *Binary) textHash() uint64 {
	type span struct{ lo, hi uint64 }
	masks := make([]span, 0, len(b.Slots)+1)
	for i := range b.Slots {
		s := &b.Slots[i]
		masks = append(masks, span{uint64(s.Off), uint64(s.Off) + uint64(s.Len)})
	}
	masks = append(masks, span{uint64(b.configOff), uint64(b.configOff) + configSize})
	if !sort.SliceIsSorted(masks, func(i, j int) bool { return masks[i].lo < masks[j].lo }) {
		sort.Slice(masks, func(i, j int) bool { return masks[i].lo < masks[j].lo })
	}
	h := sha256.New()
	var zeros [64]byte
	var hdr [24]byte
	data := b.File.Data
	for _, p := range b.File.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 {
			continue
		}
		lo, hi := uint64(p.Off), uint64(p.Off)+p.Filesz
		if hi > uint64(len(data)) || lo > hi {
			hi = uint64(len(data)) // the parser checked the sections, not the segments
			lo = min(lo, hi)
		}
		// The segment's place is part of what must not change.
		binary.LittleEndian.PutUint64(hdr[0:], uint64(p.Vaddr))
		binary.LittleEndian.PutUint64(hdr[8:], p.Filesz)
		binary.LittleEndian.PutUint64(hdr[16:], uint64(p.Off))
		h.Write(hdr[:])
		at := lo
		i := sort.Search(len(masks), func(i int) bool { return masks[i].hi > lo })
		for ; i < len(masks) && masks[i].lo < hi; i++ {
			m := masks[i]
			mlo, mhi := max(m.lo, at), min(m.hi, hi)
			if mlo > at {
				h.Write(data[at:mlo])
			}
			for n := mhi - max(mlo, at); n > 0; {
				k := min(n, uint64(len(zeros)))
				h.Write(zeros[:k])
				n -= k
			}
			at = max(at, mhi)
		}
		if at < hi {
			h.Write(data[at:hi])
		}
	}
	v := binary.LittleEndian.Uint64(h.Sum(nil))
	if v == 0 {
		v = 1
	}
	return v
}

// Apply returns the patched file image: a copy of the input with each
// write made through nops.Modify (the old bytes read and compared first,
// the new ones read back) and the config record replaced. The input is
// never modified.
func (b *Binary) Apply(p *Plan, progress func(done, total int)) ([]byte, error) {
	out := bytes.Clone(b.File.Data)
	text := nops.Bytes{Base: 0, B: out} // addressed by file offset
	for i, w := range p.Writes {
		if err := nops.Modify(text, uint64(w.Slot.Off), w.Old, w.New); err != nil {
			return nil, fmt.Errorf("site 0x%x in %s: %w", w.Slot.Addr, w.Slot.Func, err)
		}
		if progress != nil && i%4096 == 0 {
			progress(i, len(p.Writes))
		}
	}
	old := b.File.Data[b.configOff : b.configOff+configSize]
	if err := nops.Modify(text, uint64(b.configOff), old, p.Config.marshal()); err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigSection, err)
	}
	if progress != nil {
		progress(len(p.Writes), len(p.Writes))
	}
	return out, nil
}
