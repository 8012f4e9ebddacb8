package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// openStream reads the header of the stream file name in dir. short: the
// file is shorter than a header (no records); a header that is not a
// stream's is an error naming the file.
func openStream(dir, name string) (s Stream, short bool, err error) {
	path := filepath.Join(dir, name)
	f, size, err := openFile(path)
	if err != nil {
		return Stream{}, false, err
	}
	defer f.Close()
	var hdr [headerSize]byte
	n, err := io.ReadFull(f, hdr[:min(int64(headerSize), size)])
	if err != nil {
		return Stream{}, false, fmt.Errorf("%s: %w", path, err)
	}
	if n < headerSize {
		// Cut in its header: a prefix of a stream's magic is a stream
		// the disk or the program's death left short.
		for _, m := range streamMagics {
			if string(hdr[:min(n, len(m))]) == m[:min(n, len(m))] {
				return Stream{}, true, nil
			}
		}
		return Stream{}, false, fmt.Errorf("%s: %w: no stream header", path, ErrFormat)
	}
	dec, err := newDecoder(hdr[:8], nil)
	if err != nil {
		return Stream{}, false, fmt.Errorf("%s: %w", path, err)
	}
	le := binary.LittleEndian
	return Stream{Pid: int(le.Uint32(hdr[8:])), Tid: int(le.Uint32(hdr[12:])), Name: name, Size: size, format: dec.format}, false, nil
}

// streamMagics are the headers' first eight bytes of the stream formats
// the reader knows.
var streamMagics = []string{magic2, magic3, magic4}

// Buffer sizes of a StreamReader: the bytes it reads at a time (bounds
// its memory), and the records it hands out at a time.
const (
	DefaultChunk = 1 << 20
	minChunk     = 4 << 10
	batchRecords = 16 << 10
)

// Size is the bytes of the streams' files.
func (t *Trace) Size() int64 {
	var n int64
	for i := range t.Streams {
		n += t.Streams[i].Size
	}
	return n
}

// A StreamReader reads one stream's records in order, a batch at a
// time, in memory bounded by its chunk size and the nesting of the
// calls (the sites of the entries not yet closed, to give an Exit or
// Unwound its Entry's site). A stream cut short (a partial last record,
// or zeros where records were to go) reads up to there, and the trace's
// Warnings say so once it has been read.
type StreamReader struct {
	t    *Trace
	s    *Stream
	f    *os.File
	left int64 // bytes of the file still to read (its size when opened)
	off  int64 // file offset of buf[lo]
	buf  []byte
	lo   int // buf[lo:hi]: read, not decoded yet
	hi   int
	dec  *decoder
	recs []Record
	// Per context, the sites of the entries not yet closed; ctx is the
	// context the thread runs in.
	open map[uint64][]uint64 // the other contexts'
	cur  []uint64            // the current context's
	ctx  uint64
	done bool
	// The thread's times off the CPU (nil: none), merged among its
	// records: the next (when have), the batch of records they go
	// among (raw[ri:] not handed out yet; rawDone: the stream's end
	// reached), and the merged batch handed out.
	sc      *schedCursor
	next    Record
	have    bool
	raw     []Record
	ri      int
	rawDone bool
	merged  []Record
}

// OpenStream opens stream i of t for reading, chunk bytes at a time
// (0: DefaultChunk). Close it when done.
func (t *Trace) OpenStream(i, chunk int) (*StreamReader, error) {
	s := &t.Streams[i]
	path := filepath.Join(t.Dir, s.Name)
	f, _, err := openFile(path)
	if err != nil {
		return nil, err
	}
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	// No more than the stream holds: a session's thousand short streams
	// read with a thousand small buffers, not a megabyte each.
	chunk = int(max(min(int64(chunk), s.Size), minChunk))
	var hdr [headerSize]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec, err := newDecoder(hdr[:8], t.enums)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &StreamReader{
		t: t, s: s, f: f, left: s.Size - headerSize, off: headerSize,
		buf: make([]byte, chunk), dec: dec, recs: make([]Record, min(batchRecords, chunk/8)),
		open: map[uint64][]uint64{},
	}
	if r.sc, err = t.openSched(s); err == nil && r.sc != nil {
		r.merged = make([]Record, 0, len(r.recs))
		err = r.advance()
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close closes the stream's file.
func (r *StreamReader) Close() error {
	r.sc.close()
	return r.f.Close()
}

// Next returns the stream's next records, nil at its end, with the
// thread's times off the CPU among them (OffCPU), each before the first
// record after it left. The slice is the reader's own, overwritten by
// the next call.
func (r *StreamReader) Next() ([]Record, error) {
	if r.sc == nil {
		return r.nextRaw()
	}
	out := r.merged[:0]
	for len(out) < cap(out) {
		if r.ri >= len(r.raw) && !r.rawDone {
			raw, err := r.nextRaw()
			if err != nil {
				return nil, err
			}
			r.raw, r.ri, r.rawDone = raw, 0, raw == nil
			continue
		}
		if r.have && (r.ri >= len(r.raw) || r.next.TS < r.raw[r.ri].TS) {
			out = append(out, r.next)
			if err := r.advance(); err != nil {
				return nil, err
			}
			continue
		}
		if r.ri >= len(r.raw) {
			break // both ended
		}
		out = append(out, r.raw[r.ri])
		r.ri++
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// advance reads the thread's next time off the CPU into r.next. Those
// after the trace's end (the runtime's own, as it wrote the trace out)
// are not the program's: left out, and one that lasted past the end
// ends there (In 0).
func (r *StreamReader) advance() error {
	o, ok, err := r.sc.next()
	if err != nil {
		return err
	}
	if m := &r.t.Meta; ok && !m.Unended && m.TSCEnd > m.TSCStart {
		switch {
		case o.Out >= m.TSCEnd:
			ok = false // and every one after it
		case o.In > m.TSCEnd:
			o.In = 0
		}
	}
	r.have = ok
	if ok {
		r.next = OffCPURecord(o)
	}
	return nil
}

// nextRaw returns the stream's next records as its file holds them.
func (r *StreamReader) nextRaw() ([]Record, error) {
	for !r.done {
		n, used, err := r.dec.decode(r.buf[r.lo:r.hi], r.recs)
		r.lo += used
		r.off += int64(used)
		switch {
		case errors.Is(err, errZeroWord):
			r.end(true)
		case err != nil:
			return nil, fmt.Errorf("%s: offset %d: %w", filepath.Join(r.t.Dir, r.s.Name), r.off, err)
		}
		if r.dec.wrapped > 0 {
			r.t.mu.Lock()
			if r.t.wrapped == nil {
				r.t.wrapped = map[string]bool{}
			}
			r.t.wrapped[r.s.Name] = true
			r.t.mu.Unlock()
		}
		if n > 0 {
			r.fill(r.recs[:n])
			return r.recs[:n], nil
		}
		if r.done {
			break
		}
		if err := r.read(); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// read moves what is left undecoded to the buffer's start and reads
// more after it; at the file's end, a partial record left over marks the
// stream cut.
func (r *StreamReader) read() error {
	if r.left == 0 {
		r.end(r.hi > r.lo)
		return nil
	}
	r.hi = copy(r.buf, r.buf[r.lo:r.hi])
	r.lo = 0
	want := min(int64(len(r.buf)-r.hi), r.left)
	n, err := io.ReadFull(r.f, r.buf[r.hi:r.hi+int(want)])
	r.hi += n
	r.left -= int64(n)
	r.t.BytesRead.Add(int64(n))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			r.left = 0 // the file shrank: read what there was
			return nil
		}
		return fmt.Errorf("%s: %w", filepath.Join(r.t.Dir, r.s.Name), err)
	}
	return nil
}

// end ends the stream; cut: it was cut short (Warnings says so).
func (r *StreamReader) end(cut bool) {
	r.done = true
	if cut {
		r.t.mu.Lock()
		r.t.cut = append(r.t.cut, r.s.Name)
		r.t.mu.Unlock()
	}
}

// fill gives each Exit and Unwound record the site of the entry it
// closes: the innermost open one of the context the thread runs in.
func (r *StreamReader) fill(recs []Record) {
	for i := range recs {
		rec := &recs[i]
		switch rec.Kind() {
		case Entry:
			if id, ok := rec.Context(); ok {
				r.open[r.ctx] = r.cur
				r.ctx, r.cur = id, r.open[id]
			} else {
				r.cur = append(r.cur, rec.IP)
			}
		case Exit, Unwound:
			if k := len(r.cur); k > 0 {
				rec.IP = r.cur[k-1]
				r.cur = r.cur[:k-1]
			}
		}
	}
}

// EachRecord reads stream i of t through, handing its records to fn a
// batch at a time (the batch is overwritten after fn returns).
func (t *Trace) EachRecord(i int, fn func([]Record)) error {
	r, err := t.OpenStream(i, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		recs, err := r.Next()
		if err != nil || recs == nil {
			return err
		}
		fn(recs)
	}
}

// Each hands stream i's records to fn: those Read read, when it did (or
// those a synthetic Trace holds, with no directory), else the file's, a
// batch at a time as EachRecord does. The model's in-memory trees read
// through it.
func (t *Trace) Each(i int, fn func([]Record)) error {
	if recs := t.Streams[i].Records; recs != nil || t.Dir == "" {
		fn(recs)
		return nil
	}
	return t.EachRecord(i, fn)
}
