package ordered

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWrite: items rendered on several goroutines, some far larger than
// what a relay holds in memory and finishing out of order, come out
// whole and in the items' order, with every worker count; the first
// render's error is returned and nothing is rendered after it is seen.
func TestWrite(t *testing.T) {
	sizes := []int{10, 3 << 20, 0, 5, 2 << 20, 1, 70000, 9}
	var want bytes.Buffer
	for i, n := range sizes {
		want.WriteString(strings.Repeat(string(rune('a'+i)), n))
	}
	for _, workers := range []int{1, 2, 3, 8} {
		var got bytes.Buffer
		out := bufio.NewWriter(&got)
		err := Write(out, slices.Values([]int{0, 1, 2, 3, 4, 5, 6, 7}), workers, func(i int, w *bufio.Writer) error {
			time.Sleep(time.Duration(len(sizes)-i) * time.Millisecond) // the later ones end first
			for k := 0; k < sizes[i]; k += 1000 {
				w.WriteString(strings.Repeat(string(rune('a'+i)), min(1000, sizes[i]-k)))
			}
			return nil
		})
		out.Flush()
		if err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%d workers: %v, %d bytes out of order or lost (want %d)", workers, err, got.Len(), want.Len())
		}
	}
	bad := errors.New("bad item")
	var out bytes.Buffer
	rendered := 0
	err := Write(bufio.NewWriter(&out), slices.Values([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), 1, func(i int, w *bufio.Writer) error {
		rendered++
		if i == 2 {
			return fmt.Errorf("item %d: %w", i, bad)
		}
		return nil
	})
	if !errors.Is(err, bad) || rendered != 3 {
		t.Errorf("an item failing: %v after %d renders, want its error after 3", err, rendered)
	}
}

// TestManySmallItems: what Write allocates for many small items grows
// with their output, not by a buffer each (a thread's makecontext
// contexts are as many items, a few events each).
func TestManySmallItems(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			allocated := func(n int) uint64 {
				items := func(yield func(int) bool) {
					for i := range n {
						if !yield(i) {
							return
						}
					}
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				out := bufio.NewWriter(io.Discard)
				if err := Write(out, items, workers, func(i int, w *bufio.Writer) error {
					_, err := fmt.Fprintf(w, "item %d\n", i)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				runtime.ReadMemStats(&after)
				return after.TotalAlloc - before.TotalAlloc
			}
			small, big := allocated(1000), allocated(10000)
			if perItem := (big - small) / 9000; perItem > 2048 {
				t.Errorf("%d bytes allocated an item (%d for 1,000 items, %d for 10,000)", perItem, small, big)
			}
		})
	}
}
