package views

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"ftpatch/model"
	"ftpatch/trace"
)

// The flame graph's geometry, in px.
const (
	svgWidth    = 1200 // the image
	svgPad      = 10   // left and right of the frames
	svgFrame    = 16   // a frame's height, a pixel of it a gap between levels
	svgTop      = 40   // the title's band above the frames
	svgBottom   = 24   // the caption's band below them
	svgFont     = 12   // the labels' font size
	svgCharW    = 7.2  // a monospace character's width at svgFont (0.6 em)
	svgMinWidth = 0.1  // narrower frames (and everything above them) are left out
	svgBack     = "#f8f8f8"
)

// SVG writes a flame graph of the trace as a self-contained SVG image
// (no script, no external resource): a frame per call path, as wide as
// the time spent in the path's calls and their callees (with
// opt.SampleCount: as the calls made along and above it), stacked on its
// caller's frame, the whole trace at the bottom (as flamegraph.pl draws
// it, not as an icicle). Each frame's colour comes from a hash of its
// function's name (the same function is the same colour everywhere, in
// every graph), its label is clipped to its width, and its tooltip
// (<title>) gives the function, its time and share of the whole, and its
// calls. Callees sit left to right in name order, as in flamegraph.pl.
// Frames narrower than a tenth of a pixel are left out, with what they
// called, as flamegraph.pl leaves them out: their paths are merged into
// their callers' as the trace is read (model.CallGraphMerged), so what
// the view holds is bounded by what it draws (a tenth of a pixel at
// most), not by the paths of the trace. Threads are merged, or with
// opt.PerThread each has a frame of its own above the bottom one. The
// tree is walked with stacks of its own: it may be hundreds of
// thousands of frames deep.
//
// In a trace with scheduler events the frames are as wide as the time
// on the CPU (the time its threads spent off it left out); with
// opt.OffCPU, as the time off it (asleep, or pre-empted) under each
// path, the last frame of each saying why ("[sleeping]",
// "[pre-empted]", in blues), or with opt.SampleCount as the times the
// threads left the CPU there: the off-CPU flame graph.
func SVG(w io.Writer, in Input, opt Options) error {
	if err := flameCheck(in, opt); err != nil {
		return err
	}
	var name func(Thread) string
	if opt.PerThread {
		name = threadName
	}
	cpu := model.OnCPU
	if opt.OffCPU {
		cpu = model.OffCPU
	}
	m := model.Merging{Share: svgMinWidth / (svgWidth - 2*svgPad), Calls: opt.SampleCount, CPU: cpu}
	root := model.CallGraphMerged(in.Threads, in.Meta.Contexts > 0, name, m)
	root.Func = "all"
	whole := root.Total
	g := flameGraph{w: bufio.NewWriterSize(w, 64<<10), calls: opt.SampleCount, whole: whole}
	if whole > 0 {
		g.scale = float64(svgWidth-2*svgPad) / whole
	}
	depth := g.depth(root)
	height := svgTop + (depth+1)*svgFrame + svgBottom
	g.bottom = svgTop + (depth+1)*svgFrame

	unit := "the time of each path's calls, callees included"
	kind := "Flame graph"
	switch {
	case opt.OffCPU && opt.SampleCount:
		unit, kind = "the times the threads left the CPU with each path on their stack", "Off-CPU flame graph"
	case opt.OffCPU:
		unit, kind = "the time the threads spent off the CPU (asleep, or pre-empted) with each path on their stack", "Off-CPU flame graph"
	case opt.SampleCount:
		unit = "the calls made along each path and above it"
	case schedRecorded(in):
		unit, kind = "the time on the CPU of each path's calls, callees included", "On-CPU flame graph"
	}
	title := fmt.Sprintf("%s: %s", program(in.Meta), in.Meta.Tracer)
	fmt.Fprintf(g.w, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d">
<rect x="0" y="0" width="%d" height="%d" fill="%s"/>
<text x="%d" y="24" font-family="monospace" font-size="17" text-anchor="middle">%s of %s</text>
<text x="%d" y="%d" font-family="monospace" font-size="%d" fill="#555555">width: %s; hover a frame for its details</text>
<g font-family="monospace" font-size="%d">
`, svgWidth, height, svgWidth, height, svgWidth, height, svgBack, svgWidth/2, kind, xmlText(title),
		svgPad, height-8, svgFont, unit, svgFont)
	g.frames(root)
	fmt.Fprintf(g.w, "</g>\n</svg>\n")
	return g.w.Flush()
}

// A flameGraph is the flame graph being drawn.
type flameGraph struct {
	w      *bufio.Writer
	calls  bool    // weights are calls, not ns
	whole  float64 // the root's weight
	scale  float64 // px per unit of weight
	bottom int     // y of the bottom frame's lower edge
}

// depth is the number of levels above n that are drawn (frames at least
// svgMinWidth wide).
func (g *flameGraph) depth(n *model.Path) int {
	type item struct {
		n     *model.Path
		depth int
	}
	d := 0
	stack := []item{{n, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d = max(d, it.depth)
		for _, c := range it.n.Children {
			if c.Total*g.scale >= svgMinWidth {
				stack = append(stack, item{c, it.depth + 1})
			}
		}
	}
	return d
}

// frames draws n's frame at the bottom and those above it, each at least
// svgMinWidth wide, callees left to right in name order.
func (g *flameGraph) frames(n *model.Path) {
	type item struct {
		n     *model.Path
		depth int
		x     float64
	}
	stack := []item{{n, 0, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !g.frame(it.n, it.depth, it.x) {
			continue
		}
		// Placed left to right, pushed right to left: drawn left to
		// right.
		kids := it.n.ByName()
		start := len(stack)
		x := it.x
		for _, c := range kids {
			stack = append(stack, item{c, it.depth + 1, x})
			x += c.Total * g.scale
		}
		slices.Reverse(stack[start:])
	}
}

// frame draws n's frame at level depth, from x: false when it is too
// narrow to draw.
func (g *flameGraph) frame(n *model.Path, depth int, x float64) bool {
	width := n.Total * g.scale
	if width < svgMinWidth {
		return false
	}
	y := g.bottom - (depth+1)*svgFrame
	pct := 100.0
	if g.whole > 0 {
		pct = 100 * n.Total / g.whole
	}
	var what string
	switch {
	case n.Why != 0 && g.calls:
		what = fmt.Sprintf("%s off the CPU (%.2f%%)", plural(int(n.Total), "time", "times"), pct)
	case n.Why != 0:
		what = fmt.Sprintf("%s (%.2f%%) off the CPU, %s", strings.TrimSpace(FormatDuration(n.Total)), pct, plural(n.Calls, "time", "times"))
	case depth == 0 && g.calls:
		what = plural(int(n.Total), "call", "calls")
	case depth == 0:
		what = strings.TrimSpace(FormatDuration(n.Total))
	case g.calls:
		what = fmt.Sprintf("%s here and above (%.2f%%), %d here", plural(int(n.Total), "call", "calls"), pct, n.Calls)
	default:
		what = fmt.Sprintf("%s (%.2f%%), %s", strings.TrimSpace(FormatDuration(n.Total)), pct, plural(n.Calls, "call", "calls"))
	}
	fmt.Fprintf(g.w, "<g><title>%s: %s</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
		xmlText(n.Func), what, svgPad+x, y, width, svgFrame-1, frameColour(n))
	if label := clip(n.Func, width); label != "" {
		fmt.Fprintf(g.w, "<text x=\"%.2f\" y=\"%d\">%s</text>", svgPad+x+3, y+svgFrame-4, xmlText(label))
	}
	g.w.WriteString("</g>\n")
	return true
}

// clip fits a label to a frame width px wide: whole, cut with "..", or
// nothing when not even three characters fit.
func clip(s string, width float64) string {
	fit := int((width - 6) / svgCharW)
	if fit < 3 {
		return ""
	}
	if utf8.RuneCountInString(s) <= fit {
		return s
	}
	r := []rune(s)
	return string(r[:fit-2]) + ".."
}

// frameColour is a frame's colour: a function's warm, as flamegraph.pl's
// "hot" palette, chosen by a hash of its name so that a function has the
// same colour in every graph; a time off the CPU's blue, as off-CPU
// flame graphs draw them, a shade for each reason.
func frameColour(n *model.Path) string {
	switch n.Why {
	case trace.Sleeping:
		return "#5f8fd9"
	case trace.Preempted:
		return "#8f7fe0"
	}
	h := fnv.New64a()
	h.Write([]byte(n.Func))
	v := h.Sum64()
	r := 205 + int(v%51)
	gr := 80 + int((v>>16)%151)
	b := int((v >> 32) % 56)
	return fmt.Sprintf("#%02x%02x%02x", r, gr, b)
}

// xmlText escapes s for XML text and attribute values. Characters XML
// cannot hold (control characters, bytes that are not UTF-8) become
// U+FFFD.
func xmlText(s string) string {
	plain := utf8.ValidString(s)
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && !strings.ContainsRune(`<>&"'`, rune(s[i]))
	}
	if plain {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x20:
			b.WriteRune(utf8.RuneError)
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&apos;")
		default:
			b.WriteRune(r) // an invalid byte is written as U+FFFD
		}
	}
	return b.String()
}

// plural writes n and the noun for it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
