package callgraph

import (
	"fmt"
	"io"
	"strings"
)

// WriteReport writes m as text: the figures, the circles of files, and,
// with layers, each edge running up and each circle between layers.
func WriteReport(w io.Writer, m *Measure) error {
	p := &printer{w: w}
	p.f("files                     %d\n", m.Files)
	p.f("calls between files       %d (caller file, callee file, name), between %d pairs of files\n", m.Calls, m.CallPairs)
	p.f("references between files  %d (a function's address taken, never called)\n", m.Refs)
	p.f("includes                  %d\n", m.Includes)
	p.f("pairs of files            %d (linked by any of those)\n", m.Pairs)
	p.f("circles of files, calls   %d\n", len(m.CallCircles))
	for _, c := range m.CallCircles {
		p.f("  %d files: %s\n", len(c), strings.Join(c, " "))
	}
	p.f("circles of files, all     %d (calls, references and includes)\n", len(m.Circles))
	for _, c := range m.Circles {
		p.f("  %d files: %s\n", len(c), strings.Join(c, " "))
	}
	if m.Layers == nil {
		return p.err
	}
	p.f("\nlayers, lowest first:\n")
	for i, n := range m.Layers {
		p.f("  %-10s %d files\n", n, m.LayerFiles[i])
	}
	p.f("running up                %d calls, %d references, %d includes\n",
		m.UpCount(CallEdge), m.UpCount(RefEdge), m.UpCount(IncludeEdge))
	for _, e := range m.Up {
		p.f("  %s\n", EdgeString(e))
	}
	p.f("circles between layers    %d\n", len(m.LayerCircles))
	for _, c := range m.LayerCircles {
		p.f("  %s\n", strings.Join(c, " "))
	}
	return p.err
}

// EdgeString says where an edge is and what it links:
// "arch/x86_64/entry.S:181 ftrace_caller5 → ftrt_entry in
// tracers/function.c", "arch/x86_64/poke.c:12 #include → patch/live.h",
// "tracers/function.c:56 entry → &return_to_handler in
// arch/x86_64/graph.S".
func EdgeString(e Edge) string {
	in := e.In
	if in == "" {
		in = "(file scope)"
	}
	switch e.Kind {
	case IncludeEdge:
		return fmt.Sprintf("%s:%d #include → %s", e.From, e.Line, e.To)
	case RefEdge:
		return fmt.Sprintf("%s:%d %s → &%s in %s", e.From, e.Line, in, e.Name, e.To)
	}
	return fmt.Sprintf("%s:%d %s → %s in %s", e.From, e.Line, in, e.Name, e.To)
}

// WriteFiles writes, for each file of g, what it defines and what it
// uses of other files.
func WriteFiles(w io.Writer, g *Graph) error {
	p := &printer{w: w}
	out := map[string][]Edge{}
	for _, e := range g.Edges {
		out[e.From] = append(out[e.From], e)
	}
	for _, f := range g.Files {
		p.f("%s\n", f.Path)
		for _, d := range f.Scan.Defs {
			local := ""
			if d.Local {
				local = ", local"
			}
			p.f("  defines %s (%s%s, line %d)\n", d.Name, d.Kind, local, d.Line)
		}
		for _, e := range out[f.Path] {
			p.f("  %s\n", EdgeString(e))
		}
	}
	return p.err
}

// printer keeps the first write error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
