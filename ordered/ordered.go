// Package ordered renders the items of a sequence on several goroutines
// and writes what each rendered in the sequence's order: a trace's
// threads, say, each printed by a core of its own, one after the other
// in the output. The first item in line writes straight through; those
// after it wait in memory, then in a temporary file, until their turn,
// so memory stays bounded whatever their size.
package ordered

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime"
	"sync"
)

// Write renders each item of items with render, on up to workers
// goroutines at once (0: one per CPU), and writes their output to out in
// the items' order. Items are taken from the sequence in order, on the
// calling goroutine, each only once fewer than two per worker are in
// flight; with one worker, each only once the one before it is rendered
// (for a sequence whose next item depends on the last one's being read).
// The first error, of a render or of writing, is returned once every
// render begun has ended.
func Write[T any](out *bufio.Writer, items iter.Seq[T], workers int, render func(item T, w *bufio.Writer) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type job struct {
		item T
		r    *relay
		err  error
		done chan struct{}
	}
	jobs := make(chan *job)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One buffer a worker, not an item: a sequence of many small
			// items (a thread's makecontext contexts) costs their size.
			w := bufio.NewWriterSize(nil, 64<<10)
			for j := range jobs {
				w.Reset(j.r)
				j.err = render(j.item, w)
				if err := w.Flush(); j.err == nil {
					j.err = err
				}
				close(j.done)
			}
		}()
	}
	window := 2 * workers
	if workers == 1 {
		window = 1
	}
	var first error
	var line []*job // in flight, in order
	finish := func(j *job) {
		if first == nil {
			first = j.r.promote()
		}
		<-j.done
		j.r.close()
		if first == nil {
			first = j.err
		}
	}
	for item := range items {
		j := &job{item: item, r: &relay{out: out}, done: make(chan struct{})}
		jobs <- j
		line = append(line, j)
		for len(line) >= window {
			finish(line[0])
			line = line[1:]
		}
		if first != nil {
			break
		}
	}
	for _, j := range line {
		finish(j)
	}
	close(jobs)
	wg.Wait()
	return first
}

// relayMemory is what a relay holds in memory before it spills to a
// temporary file.
const relayMemory = 1 << 20

// A relay takes one item's output: until the items before it are
// written, into memory and then a temporary file; from then on
// (promote), straight to the output.
type relay struct {
	mu     sync.Mutex
	out    *bufio.Writer
	direct bool
	mem    []byte
	spill  *os.File
	err    error
}

func (r *relay) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.err != nil:
		return 0, r.err
	case r.direct:
		return r.out.Write(p)
	case len(r.mem)+len(p) <= relayMemory:
		r.mem = append(r.mem, p...)
		return len(p), nil
	}
	if r.spill == nil {
		f, err := os.CreateTemp("", "ftpatch-part-*")
		if err != nil {
			r.err = fmt.Errorf("a temporary file for output waiting its turn: %w", err)
			return 0, r.err
		}
		os.Remove(f.Name())
		r.spill = f
	}
	if _, err := r.spill.Write(r.mem); err != nil {
		r.err = fmt.Errorf("a temporary file for output waiting its turn: %w", err)
		return 0, r.err
	}
	r.mem = append(r.mem[:0], p...)
	return len(p), nil
}

// promote writes what the relay holds to the output, and makes it write
// there from now on.
func (r *relay) promote() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.spill != nil {
		if _, err := r.spill.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.Copy(r.out, r.spill); err != nil {
			return err
		}
	}
	_, err := r.out.Write(r.mem)
	r.mem, r.direct = nil, true
	return err
}

// close lets the relay's temporary file go.
func (r *relay) close() {
	if r.spill != nil {
		r.spill.Close()
	}
}
