package srcline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A noteError is a unit that is valid but not read (64-bit DWARF, an
// unknown version): a note on the table, not a failure.
type noteError string

func (e noteError) Error() string { return string(e) }

// errTruncated: a read ran past the end of what holds it.
var errTruncated = errors.New("truncated")

// A cursor reads little-endian DWARF values from b, failing (never
// panicking) at its end.
type cursor struct {
	b   []byte
	off int
	err error
}

func (c *cursor) next(n int) []byte {
	if c.err != nil || n < 0 || n > len(c.b)-c.off {
		c.fail()
		return nil
	}
	p := c.b[c.off : c.off+n]
	c.off += n
	return p
}

func (c *cursor) fail() {
	if c.err == nil {
		c.err = fmt.Errorf("at +0x%x: %w", c.off, errTruncated)
	}
	c.off = len(c.b)
}

func (c *cursor) u8() uint8 {
	if p := c.next(1); p != nil {
		return p[0]
	}
	return 0
}

func (c *cursor) u16() uint16 {
	if p := c.next(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (c *cursor) u32() uint32 {
	if p := c.next(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (c *cursor) u64() uint64 {
	if p := c.next(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// uleb reads an unsigned LEB128 number; bits past 64 are dropped.
func (c *cursor) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := c.u8()
		if c.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v
		}
	}
}

// sleb reads a signed LEB128 number.
func (c *cursor) sleb() int64 {
	var v int64
	var shift uint
	for {
		b := c.u8()
		if c.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// cstr skips a NUL-terminated string and returns it.
func (c *cursor) cstr() string {
	for i := c.off; i < len(c.b); i++ {
		if c.b[i] == 0 {
			s := string(c.b[c.off:i])
			c.off = i + 1
			return s
		}
	}
	c.fail()
	return ""
}

// A header is what running a unit's line-number program needs.
type header struct {
	size      int // bytes of the whole unit, its length field included
	progOff   int // where the program starts, from the unit's start
	version   uint16
	minInst   uint8
	lineBase  int8
	lineRange uint8
	opBase    uint8
	stdLens   []byte // operand counts of the standard opcodes 1..opBase-1
}

// DWARF forms that may describe a DWARF 5 directory or file entry,
// exactly those delve's parser understands.
const (
	formBlock2    = 0x03
	formBlock4    = 0x04
	formData2     = 0x05
	formData4     = 0x06
	formData8     = 0x07
	formString    = 0x08
	formBlock     = 0x09
	formBlock1    = 0x0a
	formData1     = 0x0b
	formFlag      = 0x0c
	formSdata     = 0x0d
	formStrp      = 0x0e
	formUdata     = 0x0f
	formSecOffset = 0x17
	formStrx      = 0x1a
	formData16    = 0x1e
	formLineStrp  = 0x1f
	formStrx1     = 0x25
	formStrx2     = 0x26
	formStrx3     = 0x27
	formStrx4     = 0x28
)

// parseHeader checks the header of the unit at the start of d, including
// its directory and file tables, so that delve's parser, which indexes
// unchecked, reads only what is there. A valid unit this reader does not
// read returns a noteError, with size set when the unit can be skipped.
func parseHeader(d []byte, lineStr []byte) (header, error) {
	var h header
	c := &cursor{b: d}
	length := c.u32()
	if c.err != nil {
		return h, fmt.Errorf("unit length: %w", c.err)
	}
	switch {
	case length == 0xffffffff:
		l64 := c.u64()
		if c.err != nil || l64 > uint64(len(d)-12) {
			return h, fmt.Errorf("64-bit unit length runs past the end of the section")
		}
		h.size = 12 + int(l64)
		return h, noteError("64-bit DWARF")
	case length >= 0xfffffff0:
		return h, fmt.Errorf("reserved unit length 0x%x", length)
	case uint64(length) > uint64(len(d)-4):
		return h, fmt.Errorf("unit length %d runs past the end of the section (%d bytes left)", length, len(d)-4)
	}
	h.size = 4 + int(length)
	c.b = d[:h.size]
	h.version = c.u16()
	if c.err == nil && (h.version < 2 || h.version > 5) {
		return h, noteError(fmt.Sprintf("DWARF version %d", h.version))
	}
	if h.version >= 5 {
		addrSize, segSize := c.u8(), c.u8()
		if c.err == nil && (addrSize != 8 && addrSize != 4 || segSize != 0) {
			return h, noteError(fmt.Sprintf("address size %d, segment selector size %d", addrSize, segSize))
		}
	}
	hlen := c.u32()
	if c.err != nil {
		return h, fmt.Errorf("header: %w", c.err)
	}
	if uint64(hlen) > uint64(h.size-c.off) {
		return h, fmt.Errorf("header length %d runs past the end of the %d-byte unit", hlen, h.size)
	}
	h.progOff = c.off + int(hlen)
	c.b = d[:h.progOff]
	h.minInst = c.u8()
	if h.version >= 4 {
		c.u8() // maximum_operations_per_instruction: 1 on every machine here
	}
	c.u8() // default_is_stmt
	h.lineBase = int8(c.u8())
	h.lineRange = c.u8()
	h.opBase = c.u8()
	if c.err != nil {
		return h, fmt.Errorf("header: %w", c.err)
	}
	if h.lineRange == 0 {
		return h, fmt.Errorf("header: line_range 0")
	}
	if h.opBase == 0 {
		return h, fmt.Errorf("header: opcode_base 0")
	}
	h.stdLens = c.next(int(h.opBase) - 1)
	if h.version < 5 {
		for c.err == nil && c.cstr() != "" { // include_directories
		}
		for c.err == nil && c.cstr() != "" { // file_names: name, dir, mtime, size
			c.uleb()
			c.uleb()
			c.uleb()
		}
		if c.err != nil {
			return h, fmt.Errorf("directory and file tables: %w", c.err)
		}
		return h, nil
	}
	for _, what := range []string{"directory", "file name"} {
		if err := checkEntries5(c, lineStr); err != nil {
			return h, fmt.Errorf("%s table: %w", what, err)
		}
	}
	return h, nil
}

// checkEntries5 checks one DWARF 5 entry table: its format (content
// type and form pairs), its count, and every entry's forms.
func checkEntries5(c *cursor, lineStr []byte) error {
	nfmt := int(c.u8())
	forms := make([]uint64, nfmt)
	for i := range forms {
		c.uleb() // content type
		forms[i] = c.uleb()
	}
	count := c.uleb()
	if c.err != nil {
		return c.err
	}
	if count > 0 && nfmt == 0 {
		return fmt.Errorf("%d entries of no content", count)
	}
	if count > uint64(len(c.b)-c.off) {
		return fmt.Errorf("%d entries in %d bytes", count, len(c.b)-c.off)
	}
	for range count {
		for _, form := range forms {
			if err := skipForm(c, form, lineStr); err != nil {
				return err
			}
		}
	}
	return c.err
}

// skipForm checks and skips one value of form.
func skipForm(c *cursor, form uint64, lineStr []byte) error {
	switch form {
	case formBlock:
		c.next(lenInt(c.uleb()))
	case formBlock1:
		c.next(int(c.u8()))
	case formBlock2:
		c.next(int(c.u16()))
	case formBlock4:
		c.next(lenInt(uint64(c.u32())))
	case formData1, formFlag, formStrx1:
		c.u8()
	case formData2, formStrx2:
		c.u16()
	case formStrx3:
		c.next(3)
	case formData4, formSecOffset, formStrp, formStrx4:
		c.u32()
	case formLineStrp:
		off := c.u32()
		if c.err == nil && uint64(off) >= uint64(len(lineStr)) {
			return fmt.Errorf("string offset %d outside the %d-byte .debug_line_str", off, len(lineStr))
		}
	case formData8:
		c.u64()
	case formData16:
		c.next(16)
	case formSdata:
		c.sleb()
	case formUdata, formStrx:
		c.uleb()
	case formString:
		c.cstr()
	default:
		return fmt.Errorf("unsupported form 0x%x", form)
	}
	return c.err
}

// lenInt turns a length read from the file into an int that next
// rejects when it is too large.
func lenInt(n uint64) int {
	if n > math.MaxInt32 {
		return -1
	}
	return int(n)
}

// The standard and extended opcodes of the line-number program.
const (
	lnsCopy             = 1
	lnsAdvancePC        = 2
	lnsAdvanceLine      = 3
	lnsSetFile          = 4
	lnsSetColumn        = 5
	lnsNegateStmt       = 6
	lnsSetBasicBlock    = 7
	lnsConstAddPC       = 8
	lnsFixedAdvancePC   = 9
	lnsPrologueEnd      = 10
	lnsEpilogueBegin    = 11
	lnsSetISA           = 12
	lneEndSequence      = 1
	lneSetAddress       = 2
	lneDefineFile       = 3
	lneSetDiscriminator = 4
)

// A span is one sequence's rows in reader.rows, end marker included.
type span struct {
	lo, hi int
	start  uint64
}

// run executes a unit's line-number program, appending its sequences'
// rows. files maps the unit's file numbers (from 1 before DWARF 5, from
// 0 since) to the table's.
func (r *reader) run(h header, prog []byte, files []uint32) error {
	c := &cursor{b: prog}
	first := uint64(1)
	if h.version >= 5 {
		first = 0
	}
	var addr uint64
	var file uint64
	var ln int64
	reset := func() { addr, file, ln = 0, 1, 1 }
	reset()
	seq := len(r.rows)
	backwards := false
	emit := func() error {
		i := file - first
		if h.version >= 5 && file == 1 && len(files) == 1 {
			i = 0 // the default file 1 with only file 0 listed: DWARF 5 does not say; take the only one, as delve does
		}
		if file < first || i >= uint64(len(files)) {
			return fmt.Errorf("line program at +0x%x: file %d out of range (%d files)", c.off, file, len(files))
		}
		line := uint32(0) // line 0: no source line
		if ln > 0 && ln <= math.MaxUint32 {
			line = uint32(ln)
		}
		if n := len(r.rows); n > seq {
			last := r.rows[n-1]
			if addr < last.addr {
				backwards = true
			}
			if addr == last.addr {
				return nil // keep the first row at an address
			}
		}
		r.rows = append(r.rows, row{addr, files[i], line})
		return nil
	}
	endSequence := func() {
		if n := len(r.rows); n > seq && addr < r.rows[n-1].addr {
			backwards = true
		}
		switch {
		case len(r.rows) == seq:
		case backwards:
			r.backwards++
			r.rows = r.rows[:seq]
		case !r.inCode(r.rows[seq].addr):
			r.rows = r.rows[:seq]
		default:
			r.rows = append(r.rows, row{addr, endSeq, 0})
			r.spans = append(r.spans, span{seq, len(r.rows), r.rows[seq].addr})
		}
		seq, backwards = len(r.rows), false
		reset()
	}
	for c.off < len(c.b) {
		op := c.u8()
		if op >= h.opBase {
			adj := op - h.opBase
			addr += uint64(adj/h.lineRange) * uint64(h.minInst)
			ln += int64(h.lineBase) + int64(adj%h.lineRange)
			if err := emit(); err != nil {
				return err
			}
			continue
		}
		switch op {
		case 0:
			n := c.uleb()
			if c.err == nil && (n == 0 || n > uint64(len(c.b)-c.off)) {
				return fmt.Errorf("line program at +0x%x: extended opcode of %d bytes runs past the unit", c.off, n)
			}
			body := &cursor{b: c.next(int(n))}
			switch sub := body.u8(); sub {
			case lneEndSequence:
				endSequence()
			case lneSetAddress:
				switch len(body.b) - 1 {
				case 8:
					addr = body.u64()
				case 4:
					addr = uint64(body.u32())
				default:
					return fmt.Errorf("line program at +0x%x: set_address with a %d-byte operand", c.off, len(body.b)-1)
				}
			case lneDefineFile:
				name := body.cstr()
				if body.err != nil {
					return fmt.Errorf("line program at +0x%x: define_file: %w", c.off, body.err)
				}
				files = append(files[:len(files):len(files)], r.file(name))
			case lneSetDiscriminator:
			default: // vendor extensions: skipped by their length
			}
		case lnsCopy:
			if err := emit(); err != nil {
				return err
			}
		case lnsAdvancePC:
			addr += c.uleb() * uint64(h.minInst)
		case lnsAdvanceLine:
			ln += c.sleb()
		case lnsSetFile:
			file = c.uleb()
		case lnsSetColumn, lnsSetISA:
			c.uleb()
		case lnsNegateStmt, lnsSetBasicBlock, lnsPrologueEnd, lnsEpilogueBegin:
		case lnsConstAddPC:
			addr += uint64((255-h.opBase)/h.lineRange) * uint64(h.minInst)
		case lnsFixedAdvancePC:
			addr += uint64(c.u16())
		default:
			// A standard opcode this reader does not know: skip the
			// operands the header says it has.
			for range h.stdLens[op-1] {
				c.uleb()
			}
		}
		if c.err != nil {
			return fmt.Errorf("line program: %w", c.err)
		}
	}
	if len(r.rows) > seq {
		r.unended++
		r.rows = r.rows[:seq]
	}
	return nil
}
