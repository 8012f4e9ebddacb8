package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// A spool keeps aside, while a thread's stream is read once, the records
// the thread ran in its makecontext contexts, so that each context's can
// be walked afterwards, one context after another, without reading the
// stream again: the reader stays linear in the trace's size however many
// contexts a thread ran and however often it switched between them.
//
// Each context's records are a chain of blocks in one temporary file
// (deleted as it is made, made only when the records do not fit in
// memory). A context's records wait in a buffer of its own, written out
// as a block when it holds spoolBlock bytes, or when the buffers of all
// the contexts hold more than spoolBudget bytes together (then every
// one is): memory is bounded by spoolBudget and the number of contexts
// (what a Walker keeps of each already), not by the records. A block
// starts with the file offset of its context's next block (0: none, as
// no block follows the one at 0, the first written) and its length; the
// offset is written into a block when its context's next is written, so
// reading a context follows its chain forward, each block once.
//
// Records are spooled in a compact form of their own (spoolRecord), read
// back by the same program that wrote them.
type spool struct {
	f      *os.File // nil until the first block is written
	end    int64    // the file's size, with what wbuf holds
	wbuf   []byte   // blocks not written to the file yet: the file's last len(wbuf) bytes
	chains map[uint64]*chain
	order  []*chain      // in the order the thread first ran them
	filled []*chain      // those whose buffer holds memory
	held   int           // bytes of the chains' buffers (their capacity)
	read   *atomic.Int64 // counts the bytes read back (the trace's spooled), or nil
	err    error         // the first failure to write: the spool is no good
	// Its bounds (spoolBlock, spoolBudget, spoolWrite, but in tests).
	blockSize, budget, writeSize int
}

// A chain is one context's records in a spool.
type chain struct {
	ctx         uint64
	first, last int64  // file offsets of its first and last blocks (-1: none)
	buf         []byte // records not written in a block yet
	ts          uint64 // the time of its last record spooled (times are spooled as deltas)
}

// The spool's bounds: a context's buffer is written as a block at
// spoolBlock bytes, all of them once they hold spoolBudget bytes, and
// the blocks are written to the file spoolWrite bytes at a time.
const (
	spoolBlock  = 32 << 10
	spoolBudget = 4 << 20
	spoolWrite  = 256 << 10
	blockHeader = 12   // the next block's offset (8 bytes), the block's length (4)
	spoolBatch  = 1024 // records read back handed on at a time
)

// newSpool returns an empty spool.
func newSpool() *spool {
	return &spool{chains: map[uint64]*chain{}, blockSize: spoolBlock, budget: spoolBudget, writeSize: spoolWrite}
}

// chain returns context ctx's chain, made the first time the thread runs
// in it.
func (s *spool) chain(ctx uint64) *chain {
	c := s.chains[ctx]
	if c == nil {
		c = &chain{ctx: ctx, first: -1, last: -1}
		s.chains[ctx] = c
		s.order = append(s.order, c)
	}
	return c
}

// add spools r, a record the thread ran in context c.
func (s *spool) add(c *chain, r *Record) {
	if s.err != nil {
		return
	}
	before := cap(c.buf)
	c.buf = appendSpooled(c.buf, r, c.ts)
	c.ts = r.TS
	if grown := cap(c.buf) - before; grown > 0 {
		if before == 0 {
			s.filled = append(s.filled, c)
		}
		s.held += grown
	}
	switch {
	case len(c.buf) >= s.blockSize:
		s.block(c)
		c.buf = c.buf[:0]
	case s.held > s.budget:
		s.spill()
	}
}

// spill writes every context's buffer as its chain's next block and lets
// the buffers go.
func (s *spool) spill() {
	for _, c := range s.filled {
		if len(c.buf) > 0 {
			s.block(c)
		}
		c.buf = nil
	}
	s.filled, s.held = s.filled[:0], 0
}

// block writes c's buffer as its chain's next block.
func (s *spool) block(c *chain) {
	off := s.end
	le := binary.LittleEndian
	s.wbuf = le.AppendUint64(s.wbuf, 0)
	s.wbuf = le.AppendUint32(s.wbuf, uint32(len(c.buf)))
	s.wbuf = append(s.wbuf, c.buf...)
	s.end += blockHeader + int64(len(c.buf))
	if c.last >= 0 {
		s.link(c.last, off)
	} else {
		c.first = off
	}
	c.last = off
	if len(s.wbuf) >= s.writeSize {
		s.flush()
	}
}

// link writes next as the offset of the block after the one at at.
func (s *spool) link(at, next int64) {
	le := binary.LittleEndian
	if base := s.end - int64(len(s.wbuf)); at >= base {
		le.PutUint64(s.wbuf[at-base:], uint64(next))
		return
	}
	var b [8]byte
	le.PutUint64(b[:], uint64(next))
	if _, err := s.f.WriteAt(b[:], at); err != nil && s.err == nil {
		s.err = spoolError(err)
	}
}

// flush writes the blocks waiting in wbuf to the file, made the first
// time.
func (s *spool) flush() {
	if len(s.wbuf) == 0 || s.err != nil {
		return
	}
	if s.f == nil {
		f, err := os.CreateTemp("", "ftpatch-contexts-*")
		if err != nil {
			s.err = spoolError(err)
			return
		}
		os.Remove(f.Name())
		s.f = f
	}
	if _, err := s.f.WriteAt(s.wbuf, s.end-int64(len(s.wbuf))); err != nil {
		s.err = spoolError(err)
	}
	s.wbuf = s.wbuf[:0]
}

// spoolError says what a failure to spool a context's records is.
func spoolError(err error) error {
	return fmt.Errorf("a temporary file for the calls of a thread's contexts: %w", err)
}

// done ends the spooling: what the records need written is; the
// chains' last records stay in their buffers. Its error is the first
// failure to write.
func (s *spool) done() error {
	s.flush()
	return s.err
}

// settle ends the spooling as done does, but with every record written
// to the file: a spool that waits long for its walk holds no more memory
// than its contexts.
func (s *spool) settle() error {
	if s.err == nil {
		s.spill()
	}
	return s.done()
}

// close lets the spool's file go.
func (s *spool) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// each hands c's records to fn, in order, a batch at a time (the batch
// is overwritten after fn returns).
func (s *spool) each(c *chain, fn func([]Record)) error {
	var (
		recs  []Record // up to spoolBatch: most contexts have few
		ts    uint64
		block []byte
		hdr   [blockHeader]byte
	)
	decode := func(b []byte) error {
		for len(b) > 0 {
			var r Record
			n, err := readSpooled(b, &r, ts)
			if err != nil {
				return fmt.Errorf("the calls of context %d, kept aside: %w", c.ctx, err)
			}
			b, ts = b[n:], r.TS
			if recs = append(recs, r); len(recs) == spoolBatch {
				fn(recs)
				recs = recs[:0]
			}
		}
		return nil
	}
	le := binary.LittleEndian
	for off := c.first; off >= 0; {
		if s.f == nil {
			return fmt.Errorf("the calls of context %d, kept aside: %w", c.ctx, errSpool)
		}
		if _, err := s.f.ReadAt(hdr[:], off); err != nil {
			return spoolError(err)
		}
		next, n := int64(le.Uint64(hdr[:])), int64(le.Uint32(hdr[8:]))
		// Each block after the one before it: the walk ends.
		if n > s.end-off-blockHeader || next != 0 && (next <= off || next >= s.end) {
			return fmt.Errorf("the calls of context %d, kept aside: %w", c.ctx, errSpool)
		}
		if int64(cap(block)) < n {
			block = make([]byte, n)
		}
		block = block[:n]
		if _, err := s.f.ReadAt(block, off+blockHeader); err != nil {
			return spoolError(err)
		}
		if s.read != nil {
			s.read.Add(blockHeader + n)
		}
		if err := decode(block); err != nil {
			return err
		}
		if off = next; next == 0 {
			off = -1
		}
	}
	if err := decode(c.buf); err != nil {
		return err
	}
	if len(recs) > 0 {
		fn(recs)
	}
	return nil
}

// errSpool: what was read back of a spool is not what was written.
var errSpool = errors.New("the temporary file does not hold what was written to it")

// A spooled record: a byte of its kind (bits 0-1) and whether it has
// Data (bit 2); its time as a delta from the record before it in its
// context (mod 2^64), its IP, a Call's caller (a time off the CPU's
// end), each a uvarint; its Data,
// a uvarint length and the bytes.
const spoolData = 1 << 2

// appendSpooled appends r, spooled after a record of time ts.
func appendSpooled(b []byte, r *Record, ts uint64) []byte {
	k := byte(r.Kind())
	if r.Data != "" {
		k |= spoolData
	}
	b = append(b, k)
	b = binary.AppendUvarint(b, r.TS-ts)
	b = binary.AppendUvarint(b, r.IP)
	if _, off := r.OffCPU(); r.Kind() == Call || off {
		b = binary.AppendUvarint(b, r.Parent())
	}
	if r.Data != "" {
		b = binary.AppendUvarint(b, uint64(len(r.Data)))
		b = append(b, r.Data...)
	}
	return b
}

// readSpooled reads the record at the start of b, spooled after one of
// time ts, into r: the bytes it took.
func readSpooled(b []byte, r *Record, ts uint64) (int, error) {
	k := b[0]
	if k&^(spoolData|3) != 0 {
		return 0, errSpool
	}
	n := 1
	uvarint := func() uint64 {
		if n < 0 {
			return 0
		}
		v, m := binary.Uvarint(b[n:])
		if m <= 0 {
			n = -1
			return 0
		}
		n += m
		return v
	}
	r.TS = ts + uvarint()
	r.IP = uvarint()
	r.Info = uint64(k&3) << 62
	if _, off := r.OffCPU(); Kind(k&3) == Call || off {
		r.Info |= uvarint() & (1<<62 - 1)
	}
	if k&spoolData != 0 {
		size := uvarint()
		if n < 0 || size > uint64(len(b)-n) {
			return 0, errSpool
		}
		r.Data = string(b[n : n+int(size)])
		n += int(size)
	}
	if n < 0 {
		return 0, errSpool
	}
	return n, nil
}
