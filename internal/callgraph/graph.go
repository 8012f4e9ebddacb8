package callgraph

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// An EdgeKind says what links two files.
type EdgeKind int

// The kinds of edge.
const (
	CallEdge    EdgeKind = iota // a call (of a function, a macro, an assembly label)
	RefEdge                     // a function's address taken
	IncludeEdge                 // #include "..."
)

func (k EdgeKind) String() string {
	switch k {
	case CallEdge:
		return "call"
	case RefEdge:
		return "ref"
	case IncludeEdge:
		return "include"
	}
	return fmt.Sprintf("EdgeKind(%d)", int(k))
}

// An Edge is one file's use of a name another file defines, or its
// #include of it: one per caller file, callee file, name and kind, at
// the first place the caller uses it.
type Edge struct {
	From, To string   // files, relative to the tree's root
	Name     string   // the function, macro or label; "" for an include
	Kind     EdgeKind //
	Line     int      // in From: the first use
	In       string   // in From: what the first use is in (a function, a macro; "" at file scope)
}

// A File is one source file of the tree.
type File struct {
	Path string // relative to the tree's root, slash-separated
	Scan *Scan
}

// A Graph is the files of a tree of C and assembly and the edges
// between them.
type Graph struct {
	Files []*File // by path
	Edges []Edge  // by From, To, Kind, Name
}

// ErrNoSources: the tree holds no C, header or assembly file.
var ErrNoSources = errors.New("no .c, .h or .S file")

// sourceExt: the files the graph reads.
func sourceExt(p string) bool {
	switch path.Ext(p) {
	case ".c", ".h", ".S":
		return true
	}
	return false
}

// isAsm: a file read as assembly: a .S, or a header of assembler
// macros (one with a line that starts .macro).
func isAsm(p string, src []byte) bool {
	if path.Ext(p) == ".S" {
		return true
	}
	if path.Ext(p) != ".h" {
		return false
	}
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), ".macro") {
			return true
		}
	}
	return false
}

// Build reads every .c, .h and .S file under fsys's root and links each
// use of a name to the files that define it:
//
//   - a file's own definition wins (no edge);
//   - else a definition elsewhere that the user can see: a function or
//     global label of a .c or .S file (not a static or local one), or
//     anything a header defines that the user includes (directly or
//     not; a header that includes nothing defining the name sees every
//     header, as it relies on its includers);
//   - of several, those nearest in the tree (fewest folders apart): an
//     x86_64/ file calling a name x86_64/ and arm64/ both define links
//     to x86_64/'s, a file of the root folder to both.
//
// An include "..." resolves against the including file's folder, then
// the root; one that resolves to no file of the tree is an error.
func Build(fsys fs.FS) (*Graph, error) {
	var paths []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && sourceExt(p) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, ErrNoSources
	}
	slices.Sort(paths)
	src := map[string][]byte{}
	for _, p := range paths {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		src[p] = b
	}
	g := &Graph{}
	byPath := map[string]*File{}
	// C files, and assembly without the macros of its includes: enough
	// to resolve the includes and collect every file's macros.
	for _, p := range paths {
		var s *Scan
		if isAsm(p, src[p]) {
			s, err = ScanAsm(src[p], nil)
		} else {
			s, err = ScanC(src[p])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		f := &File{Path: p, Scan: s}
		g.Files = append(g.Files, f)
		byPath[p] = f
	}
	incl := map[string][]string{} // file -> the files it includes
	for _, f := range g.Files {
		for _, in := range f.Scan.Includes {
			to, ok := resolveInclude(f.Path, in.Path, byPath)
			if !ok {
				return nil, fmt.Errorf("%s:%d: #include %q: no such file in the tree", f.Path, in.Line, in.Path)
			}
			incl[f.Path] = append(incl[f.Path], to)
			g.Edges = append(g.Edges, Edge{From: f.Path, To: to, Kind: IncludeEdge, Line: in.Line})
		}
	}
	closure := func(p string) map[string]bool {
		seen := map[string]bool{}
		var walk func(string)
		walk = func(q string) {
			for _, h := range incl[q] {
				if !seen[h] {
					seen[h] = true
					walk(h)
				}
			}
		}
		walk(p)
		return seen
	}
	// Assembly again, with the macros of what it includes.
	for _, f := range g.Files {
		if !isAsm(f.Path, src[f.Path]) {
			continue
		}
		macros := map[string]*AsmMacro{}
		for h := range closure(f.Path) {
			for n, m := range byPath[h].Scan.Macros {
				macros[n] = m
			}
		}
		s, err := ScanAsm(src[f.Path], macros)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		f.Scan = s
	}

	// Every definition by name.
	type def struct {
		file string
		d    Def
	}
	defs := map[string][]def{}
	for _, f := range g.Files {
		for _, d := range f.Scan.Defs {
			defs[d.Name] = append(defs[d.Name], def{f.Path, d})
		}
	}
	seen := map[Edge]bool{}
	for _, f := range g.Files {
		own := map[string]bool{}
		for _, d := range f.Scan.Defs {
			own[d.Name] = true
		}
		vis := closure(f.Path)
		isHeader := path.Ext(f.Path) == ".h"
		for _, u := range f.Scan.Uses {
			if own[u.Name] {
				continue
			}
			fits := func(d def) bool {
				switch {
				case u.MacroOnly && d.d.Kind != Macro:
					return false
				case u.Kind == Ref && d.d.Kind == Macro:
					return false
				}
				return true
			}
			var cand []def
			for _, d := range defs[u.Name] {
				if !fits(d) {
					continue
				}
				h := path.Ext(d.file) == ".h"
				if !h && !d.d.Local || h && vis[d.file] {
					cand = append(cand, d)
				}
			}
			if len(cand) == 0 && isHeader {
				for _, d := range defs[u.Name] {
					if fits(d) && path.Ext(d.file) == ".h" && d.file != f.Path {
						cand = append(cand, d)
					}
				}
			}
			if len(cand) == 0 {
				continue
			}
			best := -1
			for _, d := range cand {
				if n := distance(f.Path, d.file); best < 0 || n < best {
					best = n
				}
			}
			var to []string
			for _, d := range cand {
				if distance(f.Path, d.file) == best && !slices.Contains(to, d.file) {
					to = append(to, d.file)
				}
			}
			kind := CallEdge
			if u.Kind == Ref {
				kind = RefEdge
			}
			for _, t := range to {
				e := Edge{From: f.Path, To: t, Name: u.Name, Kind: kind}
				if seen[e] {
					continue
				}
				seen[e] = true
				e.Line, e.In = u.Line, u.In
				g.Edges = append(g.Edges, e)
			}
		}
	}
	// A name both called and referred to from one file to another
	// counts as called.
	called := map[[3]string]bool{}
	for _, e := range g.Edges {
		if e.Kind == CallEdge {
			called[[3]string{e.From, e.To, e.Name}] = true
		}
	}
	g.Edges = slices.DeleteFunc(g.Edges, func(e Edge) bool {
		return e.Kind == RefEdge && called[[3]string{e.From, e.To, e.Name}]
	})
	slices.SortFunc(g.Edges, compareEdges)
	return g, nil
}

// compareEdges orders edges by caller, callee, kind and name.
func compareEdges(a, b Edge) int {
	if c := strings.Compare(a.From, b.From); c != 0 {
		return c
	}
	if c := strings.Compare(a.To, b.To); c != 0 {
		return c
	}
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	return strings.Compare(a.Name, b.Name)
}

// resolveInclude finds the file an #include "name" of from names: beside
// from, then from the root.
func resolveInclude(from, name string, files map[string]*File) (string, bool) {
	for _, p := range []string{path.Join(path.Dir(from), name), path.Clean(name)} {
		if _, ok := files[p]; ok {
			return p, true
		}
	}
	return "", false
}

// distance counts the folders between two files' folders: up from a's
// to the one they share, then down to b's.
func distance(a, b string) int {
	da, db := folders(a), folders(b)
	n := 0
	for n < len(da) && n < len(db) && da[n] == db[n] {
		n++
	}
	return len(da) - n + len(db) - n
}

func folders(p string) []string {
	d := path.Dir(p)
	if d == "." {
		return nil
	}
	return strings.Split(d, "/")
}

// Circles gives the strongly connected components of more than one
// file through the edges of the given kinds (all, if none is given):
// each a set of files that reach each other, sorted, the circles by
// their first file.
func (g *Graph) Circles(kinds ...EdgeKind) [][]string {
	var nodes []string
	for _, f := range g.Files {
		nodes = append(nodes, f.Path)
	}
	edges := g.Edges
	if len(kinds) > 0 {
		edges = slices.DeleteFunc(slices.Clone(edges), func(e Edge) bool { return !slices.Contains(kinds, e.Kind) })
	}
	return components(nodes, edges, func(p string) string { return p })
}

// components runs Tarjan's algorithm over the nodes that group maps
// each file to, and gives the components of more than one node.
func components(nodes []string, edges []Edge, group func(string) string) [][]string {
	succ := map[string][]string{}
	for _, e := range edges {
		a, b := group(e.From), group(e.To)
		if a != b && !slices.Contains(succ[a], b) {
			succ[a] = append(succ[a], b)
		}
	}
	index := map[string]int{}
	low := map[string]int{}
	on := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		for _, w := range succ[v] {
			if _, ok := index[w]; !ok {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var c []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				c = append(c, w)
				if w == v {
					break
				}
			}
			if len(c) > 1 {
				slices.Sort(c)
				out = append(out, c)
			}
		}
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		v := group(n)
		if seen[v] {
			continue
		}
		seen[v] = true
		if _, ok := index[v]; !ok {
			visit(v)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out
}
