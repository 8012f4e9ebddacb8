package trace

// Reading several streams at once: in parallel, a stream per CPU
// (ForStreams: what sums per thread), or merged in time order
// (MergeCalls: a function trace's calls as they happened).

import (
	"runtime"
	"sync"
)

// ForStreams runs fn for each stream the filter keeps, on as many
// goroutines as there are CPUs, and returns the first error.
func (t *Trace) ForStreams(f *Filter, fn func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		next  = make(chan int)
		wg    sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), max(1, len(t.Streams))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range t.Streams {
		if f.ThreadKept(t.Streams[i].Tid) {
			next <- i
		}
	}
	close(next)
	wg.Wait()
	return first
}

// A cursor is a stream being merged: its reader, its current batch and
// the next record in it.
type cursor struct {
	i    int // the stream
	r    *StreamReader
	recs []Record
	k    int
}

// next moves to the stream's next call or time off the CPU; false at
// its end.
func (c *cursor) next() (bool, error) {
	for {
		for ; c.k < len(c.recs); c.k++ {
			r := &c.recs[c.k]
			if _, off := r.OffCPU(); r.IsCall() || off {
				return true, nil
			}
		}
		recs, err := c.r.Next()
		if err != nil || recs == nil {
			return false, err
		}
		c.recs, c.k = recs, 0
	}
}

// MergeCalls calls fn with every call (and graph entry) of the streams
// the filter keeps, and every time their threads spent off the CPU
// (Record.OffCPU), in time order (streams in their order at equal
// times), reading every stream at once, each a chunk at a time: memory
// is bounded by the number of threads, not the trace's size.
func (t *Trace) MergeCalls(f *Filter, fn func(s *Stream, r *Record) error) error {
	var curs []*cursor
	defer func() {
		for _, c := range curs {
			c.r.Close()
		}
	}()
	var streams []int
	for i := range t.Streams {
		if f.ThreadKept(t.Streams[i].Tid) {
			streams = append(streams, i)
		}
	}
	// All streams are open at once: 64 MiB of chunks between them.
	chunk := max(minChunk, min(DefaultChunk, (64<<20)/max(1, len(streams))))
	var heap []*cursor // a min-heap by (next record's time, stream)
	less := func(a, b *cursor) bool {
		ta, tb := a.recs[a.k].TS, b.recs[b.k].TS
		return ta < tb || ta == tb && a.i < b.i
	}
	down := func(j int) {
		for {
			l := 2*j + 1
			if l >= len(heap) {
				return
			}
			if r := l + 1; r < len(heap) && less(heap[r], heap[l]) {
				l = r
			}
			if !less(heap[l], heap[j]) {
				return
			}
			heap[j], heap[l] = heap[l], heap[j]
			j = l
		}
	}
	for _, i := range streams {
		r, err := t.OpenStream(i, chunk)
		if err != nil {
			return err
		}
		c := &cursor{i: i, r: r}
		curs = append(curs, c)
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap = append(heap, c)
		}
	}
	for j := len(heap)/2 - 1; j >= 0; j-- {
		down(j)
	}
	for len(heap) > 0 {
		c := heap[0]
		if err := fn(&t.Streams[c.i], &c.recs[c.k]); err != nil {
			return err
		}
		c.k++
		ok, err := c.next()
		if err != nil {
			return err
		}
		if !ok {
			heap[0] = heap[len(heap)-1]
			heap = heap[:len(heap)-1]
		}
		down(0)
	}
	return nil
}
