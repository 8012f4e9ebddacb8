package patch

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"ftpatch/elfx"
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

// Apply writes the patched file to w: the input's bytes with each
// planned write made and the config record replaced, streamed in file
// order, so the new image is never held whole beside the input. Each
// change goes through nops.Modify on a copy of the bytes it replaces
// (the old bytes compared first, the new ones read back). The input is
// never modified.
func (b *Binary) Apply(p *Plan, w io.Writer, progress func(done, total int)) error {
	type edit struct {
		off      elfx.Off
		old, new []byte
		what     string
	}
	data := b.File.Data
	edits := make([]edit, 0, len(p.Writes)+1)
	for i := range p.Writes {
		wr := &p.Writes[i]
		s := wr.Slot
		edits = append(edits, edit{s.Off, data[s.Off : s.Off+elfx.Off(s.Len)], wr.Bytes(), ""})
	}
	edits = append(edits, edit{b.configOff, data[b.configOff : b.configOff+configSize], p.Config.marshal(), ConfigSection})
	// Slots are in address order, which in every file seen is file order
	// too; the record goes wherever its section is.
	if !sort.SliceIsSorted(edits, func(i, j int) bool { return edits[i].off < edits[j].off }) {
		sort.Slice(edits, func(i, j int) bool { return edits[i].off < edits[j].off })
	}
	var buf [configSize]byte
	at := elfx.Off(0)
	for i, e := range edits {
		if e.off < at {
			return fmt.Errorf("overlapping changes at file offset 0x%x", uint64(e.off))
		}
		if _, err := w.Write(data[at:e.off]); err != nil {
			return err
		}
		n := len(e.old)
		copy(buf[:n], e.old)
		if err := nops.Modify(nops.Bytes{Base: uint64(e.off), B: buf[:n]}, uint64(e.off), e.old, e.new); err != nil {
			if e.what == "" {
				e.what = fmt.Sprintf("file offset 0x%x", uint64(e.off))
			}
			return fmt.Errorf("%s: %w", e.what, err)
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		at = e.off + elfx.Off(n)
		if progress != nil && i%4096 == 0 {
			progress(i, len(edits))
		}
	}
	if _, err := w.Write(data[at:]); err != nil {
		return err
	}
	if progress != nil {
		progress(len(edits), len(edits))
	}
	return nil
}
