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
//
// In a trace with scheduler events, a path's self time is its time on
// the CPU (its calls' time off it left out); with opt.OffCPU the weight
// is the time off it instead, each path's under a last frame for why
// ("main;read_input;[sleeping] 2000000"), or with opt.SampleCount the
// times the thread left the CPU there: the off-CPU flame graph, whose
// weights and the on-CPU one's add up to the first's without scheduler
// events.
func Folded(w io.Writer, in Input, opt Options) error {
	if err := flameCheck(in, opt); err != nil {
		return err
	}
	var name func(Thread) string
	if opt.PerThread {
		name = threadName
	}
	root := model.CallGraphOffCPU(in.Threads, in.Meta.Contexts > 0, name)
	bw := bufio.NewWriterSize(w, 64<<10)
	var path []byte
	var walk func(n *model.Path)
	walk = func(n *model.Path) {
		mark := len(path)
		if mark > 0 {
			path = append(path, ';')
		}
		path = append(path, n.Func...)
		if weight := foldedWeight(n, opt.SampleCount, opt.OffCPU); weight > 0 {
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

// flameCheck says why in cannot give the flame graph opt asks for: a
// function trace has no durations (unless weighed by calls), nor the
// calls' nesting that times off the CPU are drawn on; and times off
// the CPU need scheduler events.
func flameCheck(in Input, opt Options) error {
	switch {
	case !opt.SampleCount && !graphed(in.Meta):
		return ErrNoDurations
	case opt.OffCPU && !graphed(in.Meta):
		return ErrNoGraph
	case opt.OffCPU:
		return needSched(in)
	}
	return nil
}

// foldedWeight is a path's weight in folded stacks: its calls, or its
// self time rounded to whole ns; of a leaf of times off the CPU
// (model.Path.Why) only with off, and only of those with off.
func foldedWeight(n *model.Path, calls, off bool) uint64 {
	if off != (n.Why != 0) {
		return 0
	}
	if calls {
		return uint64(n.Calls)
	}
	return uint64(math.Round(n.Self))
}
