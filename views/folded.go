package views

import (
	"bufio"
	"io"
	"math"
	"strconv"

	"ftpatch/model"
)

// Folded writes the folded stacks of the trace, what flamegraph.pl,
// speedscope and inferno read: a line per call path, its frames from the
// outermost call joined by ';', then its weight:
//
//	main;eval;parse_expr;parse_term 130
//
// The weight is the time, in whole ns, that the path's calls spent not
// in their callees (self time), or with opt.SampleCount the number of
// calls made along it. Paths of every thread are merged; with
// opt.PerThread a first frame names the thread. Paths of weight 0 are
// left out (they add nothing to a flame graph), and lines come sorted by
// their frames, each frame's callees in name order. A function trace has
// no durations: it needs opt.SampleCount, and its paths are single
// functions.
func Folded(w io.Writer, in Input, opt Options) error {
	if !opt.SampleCount && !graphed(in.Meta) {
		return ErrNoDurations
	}
	root := callTree(in, opt.PerThread)
	bw := bufio.NewWriterSize(w, 64<<10)
	var path []byte
	var walk func(n *model.Path)
	walk = func(n *model.Path) {
		mark := len(path)
		if mark > 0 {
			path = append(path, ';')
		}
		path = append(path, n.Func...)
		if weight := foldedWeight(n, opt.SampleCount); weight > 0 {
			line := append(path, ' ')
			line = strconv.AppendUint(line, weight, 10)
			bw.Write(append(line, '\n'))
			path = line[:len(path)]
		}
		for _, c := range n.ByName() {
			walk(c)
		}
		path = path[:mark]
	}
	for _, c := range root.ByName() {
		walk(c)
	}
	return bw.Flush()
}

// foldedWeight is a path's weight in folded stacks: its calls, or its
// self time rounded to whole ns.
func foldedWeight(n *model.Path, calls bool) uint64 {
	if calls {
		return uint64(n.Calls)
	}
	return uint64(math.Round(n.Self))
}
