// Package modules looks for functions among the shared objects a
// program links. A glob given to ftpatch enable, or to record's
// --filter, -F or -N, that matches no function of the program may name
// functions of a library it loads: Find says which objects (found as the
// dynamic loader finds them, package ldso) have functions it matches,
// and whether they can be traced there: whether the object was built for
// tracing (its patch sites registered with the program's runtime by the
// module stub) and the functions have sites. Missing says which globs
// match no function of the program itself.
//
// Globs are funclist's, matched as funclist matches them (a C++
// function by its symbol or its demangled name), which is as the
// runtime's FTRACE_FILTER matches them.
package modules

import (
	"debug/elf"
	"errors"
	"fmt"
	"slices"

	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/funcs"
	"ftpatch/infile"
	"ftpatch/ldso"
	"ftpatch/patch"
	"ftpatch/sites"
)

// A Hit is a glob that matches functions of a shared object the
// program links.
type Hit struct {
	Glob   funclist.Glob
	Object ldso.Object
	// Funcs are the functions it matches there, the first MaxFuncs in
	// name order; Matched counts them all.
	Funcs   []string
	Matched int
	// Traced: the object links the module stub and the functions
	// matched have patch sites, so the runtime traces them when the
	// program runs (FTRACE_FILTER, -F and -N apply to every module with
	// sites) and ftpatch enable can enable them in the object. When
	// false, the object (or these functions) was not built for tracing.
	Traced bool
	// Decoded (with Traced): the object has no site table (built
	// without recordmcount), its sites found by decoding function
	// entries: ftpatch enable reaches them, the runtime's load-time
	// filters do not (it patches only what a table lists).
	Decoded bool
}

// MaxFuncs bounds Hit.Funcs: enough to recognise the functions by.
const MaxFuncs = 3

// names are a file's function names, as globs are matched against them.
type names struct {
	sited, sitedAlso []string // functions with a patch site (the runtime traces these), and their demangled names
	all, allAlso     []string // every function its symbol tables name
	traced           bool     // it links the runtime or the module stub: its sites are the runtime's
	decoded          bool     // no site table: the sites were found by decoding
}

// read reads the function names of the ELF file at path; with sited,
// those with patch sites too (finding the sites costs ten times reading
// the symbols). A file that links no part of the runtime has no sites
// the runtime patches: its sited names are none.
func read(path string, sited bool) (*names, error) {
	m, err := infile.Map(path)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	f, err := elfx.Parse(path, m.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	n := &names{}
	if l, _, err := patch.Linked(f); sited && err == nil && l != patch.LinksNothing {
		n.traced, n.decoded = true, f.Section(sites.TableName) == nil
		if ls, err := sites.FindLinked(f); err == nil {
			for _, s := range ls.Sites {
				n.sited = append(n.sited, s.Func)
			}
		}
	}
	syms, err := symbols(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range syms {
		if funcs.IsFunc(&syms[i]) {
			n.all = append(n.all, syms[i].Name)
		}
	}
	n.sitedAlso, n.allAlso = funclist.Demangled(n.sited), funclist.Demangled(n.all)
	return n, nil
}

// symbols are the file's symbol table, or its dynamic one when stripped
// (a system library: its exported functions).
func symbols(f *elfx.File) ([]elfx.Symbol, error) {
	_, syms, err := f.Symtab()
	if !errors.Is(err, elfx.ErrNoSection) {
		return syms, err
	}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_DYNSYM {
			return f.Symbols(s)
		}
	}
	return nil, nil
}

// matches returns what g matches among names (with their second names
// also): the first MaxFuncs in name order, and how many.
func matches(g funclist.Glob, names, also []string) ([]string, int) {
	l := &funclist.List{Globs: []funclist.Glob{g}}
	sel := l.SelectAlso(names, also)
	var all []string
	for i, in := range sel.Chosen {
		if in {
			all = append(all, names[i])
		}
	}
	slices.Sort(all)
	all = slices.Compact(all) // a function with several sites, or named twice
	return all[:min(len(all), MaxFuncs)], len(all)
}

// Missing returns the include globs of globs that match no function of
// the program at path (excludes are not globs that choose, and are left
// out). Every function its symbol table names counts, sites or not:
// this is the cheap first question, asked before every traced run.
func Missing(path string, globs []funclist.Glob) ([]funclist.Glob, error) {
	n, err := read(path, false)
	if err != nil {
		return nil, err
	}
	var out []funclist.Glob
	for _, g := range globs {
		if g.Exclude {
			continue
		}
		if _, k := matches(g, n.all, n.allAlso); k == 0 {
			out = append(out, g)
		}
	}
	return out, nil
}

// Find returns, for each include glob of globs, the shared objects the
// program at prog loads at start (ldso.All in env, in the loader's
// order) with functions it matches: a glob's hits in the order of the
// objects, the globs in their order. Functions with sites in an object
// built for tracing are preferred: a glob matching those has a Traced
// hit, else a hit with the functions it matches among all the object's.
// An object that cannot be read (not found, malformed) is passed over;
// the error is for the program itself.
func Find(prog string, env ldso.Env, globs []funclist.Glob) ([]Hit, error) {
	objs, err := ldso.All(prog, env)
	if err != nil && len(objs) == 0 {
		return nil, err
	}
	type object struct {
		o ldso.Object
		n *names
	}
	var read1 []object
	for _, o := range objs {
		if o.From == ldso.NotFound {
			continue
		}
		n, err := read(o.Path, true)
		if err != nil {
			continue
		}
		read1 = append(read1, object{o, n})
	}
	var hits []Hit
	for _, g := range globs {
		if g.Exclude {
			continue
		}
		for _, ob := range read1 {
			h := Hit{Glob: g, Object: ob.o}
			if h.Funcs, h.Matched = matches(g, ob.n.sited, ob.n.sitedAlso); h.Matched > 0 && ob.n.traced {
				h.Traced, h.Decoded = true, ob.n.decoded
			} else if h.Funcs, h.Matched = matches(g, ob.n.all, ob.n.allAlso); h.Matched == 0 {
				continue
			}
			hits = append(hits, h)
		}
	}
	return hits, nil
}
