package views

import (
	"bufio"
	"fmt"
	"io"
	"slices"

	"ftpatch/funclist"
	"ftpatch/model"
)

// Graph writes the trace's call graph as `uftrace graph` does: the calls
// of every thread aggregated by call path, each path once with its
// calls and their total time (callees included), its callees below it in
// opt.Sort's order (model.PathOrder: the most total time first, or the
// most calls), joined by uftrace's lines:
//
//	# Function Call Graph for 'calc' (pid 23875)
//	========== FUNCTION CALL GRAPH ==========
//	# TOTAL TIME   FUNCTION
//	   13.509 us : (1) calc
//	   13.509 us : (1) main
//	   12.357 us : (1) eval
//	    0.791 us :  +-(1) parse_expr
//	             :  |
//	    0.010 us :  +-(1) skip_space
//
// The root is the program, its callees each thread's outermost calls. A
// path with one callee has it on the next line, at the same indentation;
// with more, each gets a "+-" branch. A path some of whose calls were
// left without returning, or were still running at the end, says how
// many ("[2 unwound]", "[1 open]").
//
// A trace that recorded its threads' times off the CPU (scheduler
// events) has a column more, OFF-CPU: the part of each path's total time
// its threads spent off the CPU (asleep, or pre-empted) while the path
// was on their stack, callees included; its time on the CPU is the
// rest. Its backtraces say it too ("off-cpu").
//
// With opt.Func, the graph is that of opt.Func: first its backtraces,
// each distinct path of calls that led to it (outermost first) with how
// many calls of it came that way and their time, in opt.Sort's order as
// the callees are, then the graph of everything it called, from all its
// calls merged. A call of opt.Func within another (recursion) belongs to
// the outer one's graph, as in uftrace.
func Graph(w io.Writer, in Input, opt Options) error {
	if !graphed(in.Meta) {
		return ErrNoGraph
	}
	order, err := model.PathOrder(opt.Sort)
	if err != nil {
		return err
	}
	root := callTree(in, false)
	root.Func = program(in.Meta)
	root.Calls = 1
	for _, c := range root.Children {
		root.Total += c.Total
		root.Off += c.Off
	}
	off := schedRecorded(in) || root.Off > 0
	bw := bufio.NewWriterSize(w, 64<<10)
	title := fmt.Sprintf("pid %d", in.Meta.Pid)
	if opt.Func == "" {
		fmt.Fprintf(bw, "# Function Call Graph for '%s' (%s)\n", root.Func, title)
		writeGraph(bw, root, order, off)
		return bw.Flush()
	}

	// The outermost calls of Func, and the paths to them.
	type hit struct {
		path []string
		n    *model.Path
	}
	var hits []hit
	var names map[string]bool
	var path []string
	var find func(n *model.Path)
	find = func(n *model.Path) {
		path = append(path, n.Func)
		defer func() { path = path[:len(path)-1] }()
		if n.Func == opt.Func {
			hits = append(hits, hit{slices.Clone(path), n})
			return
		}
		names[n.Func] = true
		for _, c := range n.Children {
			find(c)
		}
	}
	names = map[string]bool{}
	for _, c := range root.Children {
		find(c)
	}
	if len(hits) == 0 {
		return noFunc(opt.Func, names)
	}
	sub := &model.Path{Func: opt.Func}
	for _, h := range hits {
		sub.Add(h.n)
		sub.Merge(h.n)
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return order(a.n, b.n) })
	fmt.Fprintf(bw, "# Function Call Graph for '%s' (%s)\n", opt.Func, title)
	fmt.Fprintf(bw, "=============== BACKTRACE ===============\n")
	for i, h := range hits {
		fmt.Fprintf(bw, " backtrace #%d: hit %d, time %s", i, h.n.Calls, FormatDuration(h.n.Total))
		if off {
			fmt.Fprintf(bw, ", off-cpu %s", FormatDuration(h.n.Off))
		}
		bw.WriteString("\n")
		for k, fn := range h.path {
			fmt.Fprintf(bw, "   [%d] %s\n", k, fn)
		}
		fmt.Fprintln(bw)
	}
	writeGraph(bw, sub, order, off)
	return bw.Flush()
}

// noFunc is the error for a function with no call in the trace, with
// the names of those that have calls closest to it.
func noFunc(fn string, names map[string]bool) error {
	all := make([]string, 0, len(names))
	for n := range names {
		all = append(all, n)
	}
	slices.Sort(all)
	if s := funclist.Suggest(funclist.Glob{Pattern: fn}, all, 3); len(s) > 0 {
		return fmt.Errorf("%q: %w (did you mean %s?)", fn, ErrNoFunc, joinOr(s))
	}
	return fmt.Errorf("%q: %w", fn, ErrNoFunc)
}

// joinOr lists names as "a, b or c".
func joinOr(names []string) string {
	s := names[0]
	for i, n := range names[1:] {
		if i == len(names)-2 {
			s += " or " + n
		} else {
			s += ", " + n
		}
	}
	return s
}

// writeGraph writes the tree below and from root as uftrace draws it:
// a line per path, "TIME : " then the branches and "(CALLS) NAME". A
// path with several callees opens a column of "|" down to its last
// callee, each callee branching off with "+-", a line holding only the
// columns between two callees; a single callee continues below its
// caller, unbranched. Callees come in the order order gives
// (model.PathOrder). With off, each path's time off the CPU follows its
// total, "TIME  OFF-CPU : ".
func writeGraph(w *bufio.Writer, root *model.Path, order func(a, b *model.Path) int, off bool) {
	fmt.Fprintf(w, "========== FUNCTION CALL GRAPH ==========\n")
	blank := "             : "
	if off {
		fmt.Fprintf(w, "# TOTAL TIME     OFF-CPU   FUNCTION\n")
		blank = "                         : "
	} else {
		fmt.Fprintf(w, "# TOTAL TIME   FUNCTION\n")
	}
	// columns[i]: whether the i-th column still has a callee to come.
	var columns []bool
	indent := func(branch bool) {
		last := -1
		if branch {
			for i, c := range columns {
				if c {
					last = i
				}
			}
		}
		for i, c := range columns {
			switch {
			case i == last:
				w.WriteString(" +-")
			case branch && i > last && last >= 0:
				w.WriteString("---")
			case c:
				w.WriteString(" | ")
			default:
				w.WriteString("   ")
			}
		}
	}
	var walk func(n, parent *model.Path, last, branch bool)
	walk = func(n, parent *model.Path, last, branch bool) {
		depth := len(columns)
		w.WriteString("  ")
		w.WriteString(FormatDuration(n.Total))
		if off {
			w.WriteString("  ")
			w.WriteString(FormatDuration(n.Off))
		}
		w.WriteString(" : ")
		indent(branch)
		fmt.Fprintf(w, "(%d) %s", n.Calls, n.Func)
		if n.Unwound > 0 {
			fmt.Fprintf(w, " [%d unwound]", n.Unwound)
		}
		if n.Open > 0 {
			fmt.Fprintf(w, " [%d open]", n.Open)
		}
		w.WriteString("\n")
		fork := len(n.Children) > 1
		if fork {
			columns = append(columns, true)
		}
		// The last callee of a fork closes its caller's column: nothing
		// below it hangs from that fork.
		if last && parent != nil && len(parent.Children) > 1 && depth > 0 {
			columns[depth-1] = false
		}
		for i, c := range n.Sorted(order) {
			walk(c, n, i == len(n.Children)-1, fork)
			if i < len(n.Children)-1 {
				w.WriteString(blank)
				indent(false)
				w.WriteString("\n")
			}
		}
		columns = columns[:depth]
	}
	walk(root, nil, true, false)
	w.WriteString("\n")
}
