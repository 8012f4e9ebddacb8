package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/ldso"
	"ftpatch/libtool"
	"ftpatch/modules"
)

// wrapperError is err, or, when err says BIN is no ELF file and BIN is
// a libtool wrapper script, an error that says so and names the program
// the script runs, to give command cmd instead. patches: cmd writes the
// program (enable, disable), so the file to give it is the one the
// script runs, which a relinking script must have made first.
func wrapperError(cmd, path string, err error, patches bool) error {
	if !errors.Is(err, elfx.ErrNotELF) {
		return err
	}
	w, werr := libtool.Read(path)
	if werr != nil {
		return err
	}
	tail := "; give that to ftpatch " + cmd
	switch runs := w.Runs(); {
	case runs == w.Program:
	case patches:
		tail = fmt.Sprintf(", which it makes, relinked, when it runs next: run %s once, then give %s to ftpatch %s (%s is the program as linked for installing)",
			path, w.Program, cmd, w.Linked)
	default:
		tail = fmt.Sprintf(", which it makes, relinked from the same objects, when it runs next; give %s to ftpatch %s", w.Linked, cmd)
	}
	return fmt.Errorf("%s: a libtool wrapper script, not the program (%w): it runs %s%s", path, elfx.ErrNotELF, w.Program, tail)
}

// programEnv is the environment the program at path runs in, as the
// loader's search needs it: ftpatch's own, with the directories the
// libtool wrapper script that runs it (if one does) puts before
// LD_LIBRARY_PATH.
func programEnv(path string) ldso.Env {
	environ := os.Environ()
	if w, err := libtool.For(path); err == nil && w.LibraryPath != "" {
		environ = append(environ, "LD_LIBRARY_PATH="+strings.TrimSuffix(w.LibraryPath+":"+os.Getenv("LD_LIBRARY_PATH"), ":"))
	}
	env, _ := ldso.EnvFor(path, environ)
	return env
}

// shortPath is p relative to the working directory when it is under
// it, else p.
func shortPath(p string) string {
	wd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(p) {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// funcNames lists a hit's functions: "a, b, c and 4 more".
func funcNames(h modules.Hit) string {
	s := strings.Join(h.Funcs, ", ")
	if more := h.Matched - len(h.Funcs); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// notTraced says why a hit's functions record nothing.
const notTraced = "was not built for tracing (no patch sites the runtime registers: build it with ftpatch cc)"

// elsewhere finds the shared objects the program at prog links with
// functions that globs match (modules.Find), for the globs that matched
// nothing in the program; a search that fails finds nothing (the hint
// is a courtesy, never the command's failure).
func elsewhere(prog string, globs []funclist.Glob) []modules.Hit {
	if len(globs) == 0 {
		return nil
	}
	hits, err := modules.Find(prog, programEnv(prog), globs)
	if err != nil {
		return nil
	}
	return hits
}

// patchHints are enable's or disable's lines (op: the command) for
// globs that matched no function of prog but match in objects it links:
// do it there, or why it cannot be done.
func patchHints(op, prog string, globs []funclist.Glob) []string {
	var out []string
	for _, h := range elsewhere(prog, globs) {
		lib := shortPath(h.Object.Path)
		s := fmt.Sprintf("%q matches %s in %s, which %s links", h.Glob.Pattern, funcNames(h), lib, prog)
		if h.Traced {
			s += fmt.Sprintf(": %s it there: ftpatch %s %s %s", op, op, shellQuote(lib), shellQuote(h.Glob.Pattern))
		} else {
			s += ", but that object " + notTraced
		}
		out = append(out, s)
	}
	return out
}

// filterNotes writes on stderr, for the globs of record's filters that
// match no function of prog (the file the program's code is in), where
// they match among the objects it links: the runtime applies the
// filters to every module with sites, so there they already choose; an
// object not built for tracing records nothing whatever they say.
func filterNotes(stderr io.Writer, prog string, flags map[string][]string) {
	var all []funclist.Glob
	byPattern := map[string]string{} // the flag that gave a glob, for the note
	for _, flag := range []string{"--filter", "-F", "-N"} {
		for _, arg := range flags[flag] {
			for _, g := range strings.Split(arg, ",") {
				l := &funclist.List{}
				if g == "" || strings.HasPrefix(g, "!") || l.Add(g, flag) != nil {
					continue // excludes choose nothing; a bad glob is the runtime's to report
				}
				if _, ok := byPattern[l.Globs[0].Pattern]; !ok { // a glob given twice: one note
					byPattern[l.Globs[0].Pattern] = flag
					all = append(all, l.Globs...)
				}
			}
		}
	}
	if len(all) == 0 {
		return
	}
	missing, err := modules.Missing(prog, all)
	if err != nil {
		return
	}
	for _, h := range elsewhere(prog, missing) {
		flag := byPattern[h.Glob.Pattern]
		s := fmt.Sprintf("ftpatch: note: %s %q matches no function of %s, but %s in %s, which it links: ", flag, h.Glob.Pattern, prog, funcNames(h), shortPath(h.Object.Path))
		switch {
		case h.Traced && h.Decoded:
			s += fmt.Sprintf("that object has no site table (built without recordmcount), so the runtime's filters do not reach it: enable them with ftpatch enable %s %s",
				shellQuote(shortPath(h.Object.Path)), shellQuote(h.Glob.Pattern))
		case h.Traced:
			s += fmt.Sprintf("the runtime applies %s there as well", flag)
		default:
			s += "that object " + notTraced + ", so nothing in it is traced"
		}
		fmt.Fprintln(stderr, s)
	}
}
