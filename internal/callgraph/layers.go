package callgraph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// Layers assign each file of a tree to a layer; the layers are ordered,
// lowest first, and a file may call only into its own layer or those
// below it.
//
// The map is text, a line per rule, '#' starting a comment:
//
//	LAYER PATTERN...
//
// A PATTERN ending in '/' is a folder, and claims the files under it at
// any depth; "." claims every file; any other pattern is a glob
// (path.Match: '*' stays within a folder) of files' paths relative to the
// tree's root. The most specific rule claims a file: a glob before a
// folder, a deeper folder before a shallower. Layers rank in the order
// they first appear; a layer may have several lines.
type Layers struct {
	Names []string // lowest first
	rules []rule
	file  string // the map's name, for errors
}

// A rule is one pattern of the map.
type rule struct {
	layer   int
	pattern string
	folder  bool // pattern is a folder ("" for ".")
	line    int
}

// ErrLayers: the layer map is malformed, or does not fit the tree.
var ErrLayers = errors.New("bad layer map")

// ParseLayers reads a layer map; name names it in errors.
func ParseLayers(r io.Reader, name string) (*Layers, error) {
	l := &Layers{file: name}
	index := map[string]int{}
	seen := map[string]int{} // pattern -> line
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) == 1 {
			return nil, fmt.Errorf("%w: %s:%d: layer %s has no pattern", ErrLayers, name, n, f[0])
		}
		i, ok := index[f[0]]
		if !ok {
			i = len(l.Names)
			index[f[0]] = i
			l.Names = append(l.Names, f[0])
		}
		for _, p := range f[1:] {
			if prev, dup := seen[p]; dup {
				return nil, fmt.Errorf("%w: %s:%d: %s already given at line %d", ErrLayers, name, n, p, prev)
			}
			seen[p] = n
			r := rule{layer: i, pattern: p, line: n}
			switch {
			case p == ".":
				r.pattern, r.folder = "", true
			case strings.HasSuffix(p, "/"):
				r.pattern, r.folder = path.Clean(p), true
			default:
				if _, err := path.Match(p, ""); err != nil {
					return nil, fmt.Errorf("%w: %s:%d: %s: %v", ErrLayers, name, n, p, err)
				}
			}
			l.rules = append(l.rules, r)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(l.Names) == 0 {
		return nil, fmt.Errorf("%w: %s: no layer", ErrLayers, name)
	}
	return l, nil
}

// matches: the rule claims the file p, and how specifically (higher
// wins): a glob above any folder, a folder by its depth.
func (r rule) matches(p string) (bool, int) {
	if !r.folder {
		ok, _ := path.Match(r.pattern, p)
		return ok, 1 << 20
	}
	if r.pattern == "" {
		return true, 0
	}
	if strings.HasPrefix(p, r.pattern+"/") {
		return true, 1 + strings.Count(r.pattern, "/")
	}
	return false, 0
}

// Of gives the layer of the file p (its index in Names).
func (l *Layers) Of(p string) (int, error) {
	best, layer, by := -1, -1, rule{}
	for _, r := range l.rules {
		ok, n := r.matches(p)
		switch {
		case !ok || n < best:
		case n == best && r.layer != layer:
			return 0, fmt.Errorf("%w: %s: %s is claimed by %s (line %d) and %s (line %d)",
				ErrLayers, l.file, p, by.pattern, by.line, r.pattern, r.line)
		default:
			best, layer, by = n, r.layer, r
		}
	}
	if layer < 0 {
		return 0, fmt.Errorf("%w: %s: no layer claims %s", ErrLayers, l.file, p)
	}
	return layer, nil
}

// A Measure is what the call graph says of a tree, and, given layers,
// of its layering.
type Measure struct {
	Files     int
	Calls     int // distinct (caller file, callee file, name) calls
	CallPairs int // distinct (caller file, callee file) with a call
	Refs      int // distinct (caller file, callee file, name) references without a call
	Includes  int // distinct (file, header) includes
	Pairs     int // distinct (file, file) with an edge of any kind
	// CallCircles: circles of files through calls alone; Circles,
	// through calls, references and includes.
	CallCircles, Circles [][]string

	// With layers:
	Layers       []string
	LayerFiles   []int  // files per layer
	Up           []Edge // edges from a lower layer to a higher: every kind
	LayerCircles [][]string
}

// Measure measures g, and, when l is not nil, its layering by l. Every
// file must have a layer, and every pattern of l claim a file.
func (g *Graph) Measure(l *Layers) (*Measure, error) {
	m := &Measure{Files: len(g.Files), CallCircles: g.Circles(CallEdge), Circles: g.Circles()}
	pairs := map[[2]string]bool{}
	callPairs := map[[2]string]bool{}
	for _, e := range g.Edges {
		pairs[[2]string{e.From, e.To}] = true
		switch e.Kind {
		case CallEdge:
			m.Calls++
			callPairs[[2]string{e.From, e.To}] = true
		case RefEdge:
			m.Refs++
		case IncludeEdge:
			m.Includes++
		}
	}
	m.Pairs, m.CallPairs = len(pairs), len(callPairs)
	if l == nil {
		return m, nil
	}
	layer := map[string]int{}
	m.Layers = l.Names
	m.LayerFiles = make([]int, len(l.Names))
	used := make([]bool, len(l.rules))
	var files []string
	for _, f := range g.Files {
		n, err := l.Of(f.Path)
		if err != nil {
			return nil, err
		}
		layer[f.Path] = n
		m.LayerFiles[n]++
		files = append(files, f.Path)
		for i, r := range l.rules {
			if ok, _ := r.matches(f.Path); ok {
				used[i] = true
			}
		}
	}
	for i, r := range l.rules {
		if !used[i] {
			p := r.pattern
			if r.folder {
				p += "/"
			}
			return nil, fmt.Errorf("%w: %s:%d: %s claims no file", ErrLayers, l.file, r.line, p)
		}
	}
	for _, e := range g.Edges {
		if layer[e.From] < layer[e.To] {
			m.Up = append(m.Up, e)
		}
	}
	m.LayerCircles = components(files, g.Edges, func(p string) string { return l.Names[layer[p]] })
	// Components come sorted by name; give each circle's layers lowest first.
	for _, c := range m.LayerCircles {
		slices.SortFunc(c, func(a, b string) int { return slices.Index(l.Names, a) - slices.Index(l.Names, b) })
	}
	return m, nil
}

// Failed: the layering is broken, a call running up or a circle between
// layers.
func (m *Measure) Failed() bool {
	return len(m.Up) > 0 || len(m.LayerCircles) > 0
}

// UpCount counts the edges running up of kind k.
func (m *Measure) UpCount(k EdgeKind) int {
	n := 0
	for _, e := range m.Up {
		if e.Kind == k {
			n++
		}
	}
	return n
}
