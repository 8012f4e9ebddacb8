package trace

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"
)

// TestSpool: what a spool gives back of each context is what was
// spooled into it, in order, whether it stayed in memory or went to the
// file in blocks (written when full, or all at once when the buffers
// held too much, or settled to wait for its walk with nothing in memory),
// and reading it back reads each block once.
func TestSpool(t *testing.T) {
	for _, c := range []struct {
		name                         string
		contexts, records            int
		blockSize, budget, writeSize int
		file                         bool // the records do not fit in memory
		settle                       bool // settled, not done
	}{
		{"memory", 50, 2000, spoolBlock, spoolBudget, spoolWrite, false, false},
		{"blocks", 3, 5000, 64, 1 << 20, 256, true, false},
		{"budget", 300, 20000, 1 << 20, 512, 256, true, false},
		{"both", 40, 20000, 100, 700, 64, true, false},
		{"settled", 50, 2000, spoolBlock, spoolBudget, spoolWrite, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(c.records)))
			s := newSpool()
			s.blockSize, s.budget, s.writeSize = c.blockSize, c.budget, c.writeSize
			var read, written int64
			want := map[uint64][]Record{}
			ts := uint64(1000)
			for range c.records {
				ctx := uint64(1 + r.IntN(c.contexts))
				if r.IntN(50) == 0 {
					ctx = 1<<63 - 1 - ctx // ids of every size
				}
				ts += uint64(r.IntN(100))
				if r.IntN(200) == 0 {
					ts -= 5000 // a clock set back (TIME)
				}
				rec := Record{TS: ts, IP: uint64(r.IntN(1 << 47)), Info: uint64(r.IntN(4)) << 62}
				if rec.Kind() == Call {
					rec.Info |= uint64(r.IntN(1 << 47))
				}
				if r.IntN(10) == 0 {
					rec.Data = fmt.Sprintf("%d, \"%x\"", r.IntN(1000), r.Uint64())
				}
				written += int64(len(appendSpooled(nil, &rec, 0)))
				s.add(s.chain(ctx), &rec)
				want[ctx] = append(want[ctx], rec)
			}
			end := s.done
			if c.settle {
				end = s.settle
			}
			if err := end(); err != nil {
				t.Fatal(err)
			}
			defer s.close()
			if c.settle && s.held != 0 {
				t.Errorf("%d bytes held in memory once settled", s.held)
			}
			if (s.f != nil) != c.file {
				t.Errorf("file made: %v, want %v", s.f != nil, c.file)
			}
			if len(s.order) != len(want) {
				t.Fatalf("%d contexts, want %d", len(s.order), len(want))
			}
			s.read = new(atomic.Int64)
			for _, ch := range s.order {
				var got []Record
				if err := s.each(ch, func(recs []Record) { got = append(got, recs...) }); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want[ch.ctx]) {
					t.Fatalf("context %d: %d records back, %d spooled, or not the same", ch.ctx, len(got), len(want[ch.ctx]))
				}
			}
			read = s.read.Load()
			if read > written+blockHeader*written/3 {
				t.Errorf("%d bytes read back for %d spooled", read, written)
			}
		})
	}
}

// TestSpoolDamaged: a spool whose file holds what was not written to it
// (a block that is its own next) is an error, not a loop.
func TestSpoolDamaged(t *testing.T) {
	s := newSpool()
	s.blockSize, s.writeSize = 16, 16
	c := s.chain(1)
	for i := range 10 {
		s.add(c, &Record{TS: uint64(i), IP: 0x1000, Info: uint64(Entry) << 62})
	}
	if err := s.done(); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if c.last <= c.first {
		t.Fatalf("one block: first %d last %d", c.first, c.last)
	}
	s.link(c.last, c.last) // the last block is its own next
	if err := s.each(c, func([]Record) {}); !errors.Is(err, errSpool) {
		t.Errorf("error %v, want errSpool", err)
	}
}
