package patch

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"ftpatch/funclist"
	"ftpatch/isa"
	"ftpatch/nops"
	"ftpatch/sites"
)

// An Op is what a Request does.
type Op uint8

// The operations.
const (
	// Enable makes the listed functions' sites call the runtime and every
	// other site a NOP: the file then traces exactly the list, whatever
	// it traced before.
	Enable Op = iota + 1
	// Disable makes the listed functions' sites NOPs and keeps the
	// others as they are (a call stays a call); with no list, every site.
	Disable
)

// A Request says what to make of a file's sites.
type Request struct {
	Op     Op
	Tracer Tracer         // Enable: what enabled sites feed (default TracerFunction)
	List   *funclist.List // the functions; Disable with nil: every site
	// Inputs names where the list came from, for messages ("list.txt").
	Inputs string
	// TraceDir (Enable, an executable): the trace location to record,
	// an absolute path (CheckTraceDir); "" records none. Disable keeps
	// the recorded one while some site still calls the runtime.
	TraceDir string
	// Ctl (Enable, an executable): the program listens for ftpatch ctl,
	// as with FTRACE_CTL=1 (FlagCtl). Disable keeps what was recorded.
	Ctl bool
	// Libcall (Enable): the list chooses among the library functions the
	// file calls through its GOT slots too, and those chosen are traced
	// where it calls them (FlagLibcall, Config.Libcalls). Disable drops
	// those its list names (every one with no list).
	Libcall bool
}

// A Write is one site whose bytes change: from what the file holds at
// Slot.Off to New[:Slot.Len]. 16 bytes, as there may be 100k of them.
type Write struct {
	Slot *Slot
	New  [maxSite]byte
}

// maxSite is the longest site, in bytes: arm64's patchable entry (two
// words); x86-64's are 5 or 6.
const maxSite = 8

// Bytes returns the bytes the site gets.
func (w *Write) Bytes() []byte { return w.New[:w.Slot.Len] }

// An Unmatched is an include glob that matched no function with a site,
// with corrections that would ("did you mean").
type Unmatched struct {
	Glob        funclist.Glob
	Suggestions []string
}

func (u Unmatched) String() string {
	s := fmt.Sprintf("%s: 0 functions matched %q", u.Glob.Source, u.Glob.String())
	if len(u.Suggestions) > 0 {
		s += " — did you mean " + strings.Join(u.Suggestions, " or ") + "?"
	}
	return s
}

// A Plan is what a Request does to a Binary, computed without changing
// anything.
type Plan struct {
	Writes    []Write
	Config    Config      // the record to write
	Funcs     int         // functions the list chose (Enable) or disabled (Disable)
	Unmatched []Unmatched // include globs that matched nothing
	// OutOfReach are the functions (one entry per site, in address
	// order) whose sites the list chose but no call from them reaches
	// the runtime's trampolines (arm64's bl: ±128 MiB): left NOPs, not
	// counted enabled. The runtime reaches them at load, through
	// veneers, when the environment asks (FTRACE).
	OutOfReach []string
	// Unchanged: the file already is what the request asks (same sites,
	// same record): nothing needs writing.
	Unchanged bool
}

// maxSuggestions bounds the corrections offered per glob.
const maxSuggestions = 3

// Plan computes the bytes each site gets and the new config record. A
// site holding anything but a NOP, the compiler's call or a trampoline
// call is an error (*SiteError); so is a list that chooses nothing
// (ErrNoMatch, with corrections for its globs). A chosen site no call
// reaches the trampolines from is left a NOP and named in OutOfReach.
func (b *Binary) Plan(r Request) (*Plan, error) {
	if r.Op == Enable && r.Tracer == TracerNone {
		r.Tracer = TracerFunction
	}
	if r.Op == Enable && r.List == nil {
		return nil, fmt.Errorf("enable: no function list")
	}
	if r.Ctl && b.Module {
		return nil, fmt.Errorf("--ctl: a shared object is controlled through its program: record it in the program")
	}
	if r.TraceDir != "" {
		if b.Module {
			return nil, fmt.Errorf("%w: a shared object traces where its program does: record the location in the program", ErrTraceDir)
		}
		if err := CheckTraceDir(r.TraceDir); err != nil {
			return nil, err
		}
	}
	// Without a site table the sites are found by decoding, every time:
	// one that decoding would not find again once a NOP cannot be
	// written (it would be lost to verify and to the next enable).
	if found := b.isa.NopFoundAgain; found != nil && b.File.Section(sites.TableName) == nil {
		for i := range b.Slots {
			s := &b.Slots[i]
			if !s.Dead() && !s.Kind.AtEntry() && s.State != sites.StateNop && !found(b.File.Data, uint64(s.Off)) {
				return nil, &SiteError{Off: s.Addr, Func: s.Func, Msg: "a -pg site with no `mov x0, x30` before it (clang's), in a file without a site table: " +
					"once a NOP it could not be found again; run recordmcount on the objects before linking, so that the file lists its sites"}
			}
		}
	}
	p := &Plan{}
	// The library functions chosen (Libcall), and the globs that chose
	// one: not unmatched though they match no site.
	libs, libMatched, err := b.planLibcalls(r)
	if err != nil {
		return nil, err
	}
	var chosen []bool
	var names []string
	if r.List != nil {
		if err := r.List.Check(r.Inputs); err != nil {
			return nil, err
		}
		names = make([]string, b.Live)
		for i, k := 0, 0; i < len(b.Slots); i++ {
			if !b.Slots[i].Dead() {
				names[k] = b.Slots[i].Func
				k++
			}
		}
		also := funclist.Demangled(names)
		sel := r.List.SelectAlso(names, also)
		chosen = sel.Chosen
		p.Funcs = countFuncs(names, chosen)
		sel.Unmatched = slices.DeleteFunc(sel.Unmatched, func(g funclist.Glob) bool { return libMatched[g] })
		if len(sel.Unmatched) > 0 {
			var all []string
			for _, g := range sel.Unmatched {
				u := Unmatched{Glob: g, Suggestions: funclist.Suggest(g, uniq(append(slices.Clone(names), also...)), maxSuggestions)}
				p.Unmatched = append(p.Unmatched, u)
				all = append(all, u.String())
			}
			if sel.Count == 0 && len(libs) == 0 {
				return p, fmt.Errorf("%w: %s", ErrNoMatch, strings.Join(all, "; "))
			}
		}
		if sel.Count == 0 && len(libs) == 0 {
			return p, fmt.Errorf("%w: %s: every function it matches is also excluded", ErrNoMatch, r.Inputs)
		}
	}

	tracer := r.Tracer
	if r.Op == Disable {
		tracer = b.Config.Tracer
	}
	enabled := 0
	p.Writes = make([]Write, 0, len(b.Slots))
	for i, k := 0, 0; i < len(b.Slots); i++ {
		s := &b.Slots[i]
		in := false
		if !s.Dead() {
			in = chosen == nil || chosen[k]
			k++
		}
		if s.Other() {
			return nil, &SiteError{Off: s.Addr, Func: s.Func, Msg: b.Detail(s) + ": not a site ftpatch or the compiler wrote; run ftpatch verify"}
		}
		kk := k - 1 // s's index among the live sites (when live)
		var call bool
		switch r.Op {
		case Enable:
			call = in
		case Disable:
			// Kept: a site that calls the runtime in a patched file.
			call = !in && !s.Dead() && s.State == sites.StateTraced && b.Config.Patched()
		}
		var target uint64
		if call {
			tr := b.trampFor(s, tracer)
			if target = b.tramps[tr-1]; target == 0 {
				return nil, fmt.Errorf("%s: the site made from its prologue calls %s, which what is linked (the module stub?) does not define: trace it with the runtime preloaded (ftpatch record)", s.Func, b.trampName(tr))
			}
		}
		want, err := b.want(s, target)
		if errors.Is(err, nops.ErrRange) && call {
			p.OutOfReach = append(p.OutOfReach, s.Func)
			call = false
			want, err = b.want(s, 0)
			if chosen != nil {
				chosen[kk] = false // not counted among the functions traced
			}
		}
		if err != nil {
			return nil, err
		}
		if call {
			enabled++
		}
		if !bytes.Equal(b.File.Data[s.Off:int(s.Off)+int(s.Len)], want) {
			w := Write{Slot: s}
			copy(w.New[:], want)
			p.Writes = append(p.Writes, w)
		}
	}

	if len(p.OutOfReach) > 0 && chosen != nil {
		p.Funcs = countFuncs(names, chosen)
	}
	c := Config{Flags: FlagPatched, Sites: uint64(len(b.Slots)), Enabled: uint64(enabled), TextHash: b.textHash()}
	if b.File.Section(sites.TableName) == nil {
		c.Flags |= FlagNoTable
	}
	if (r.Op == Enable && r.Ctl) || (r.Op != Enable && b.Config.Flags&FlagCtl != 0) {
		c.Flags |= FlagCtl
	}
	if len(libs) > 0 {
		c.Flags |= FlagLibcall
		c.Libcalls = strings.Join(libs, ",")
	}
	switch {
	case enabled == 0 && len(libs) == 0:
		// Nothing calls the runtime: no tracer to start, no list.
	case r.Op == Enable:
		c.Tracer, c.ListHash, c.TraceDir = r.Tracer, r.List.Hash(), r.TraceDir
	default:
		// Some calls kept: the tracer and the trace location stay; the
		// list is the old one less this one, which no list file spells: a
		// hash of both.
		c.Tracer, c.TraceDir = tracer, b.Config.TraceDir
		c.ListHash = chainHash(b.Config.ListHash, r.List.Hash())
	}
	p.Config = c
	p.Unchanged = len(p.Writes) == 0 && c == b.Config
	return p, nil
}

// planLibcalls returns the library functions r leaves traced where the
// file calls them: with Enable and Libcall, those its list chooses among
// the file's (LibCallNames), with the include globs that chose one; with
// Disable, the recorded ones its list does not name (none without a
// list). Too many for the record's field is an error.
func (b *Binary) planLibcalls(r Request) ([]string, map[funclist.Glob]bool, error) {
	var libs []string
	matched := map[funclist.Glob]bool{}
	switch {
	case r.Op == Enable && r.Libcall && r.List != nil:
		names, err := b.LibCallNames()
		if err != nil {
			return nil, nil, fmt.Errorf("--libcall: %w", err)
		}
		sel := r.List.SelectAlso(names, funclist.Demangled(names))
		for i, ok := range sel.Chosen {
			if ok {
				libs = append(libs, names[i])
			}
		}
		unmatched := map[funclist.Glob]bool{}
		for _, g := range sel.Unmatched {
			unmatched[g] = true
		}
		for _, g := range r.List.Globs {
			if !g.Exclude && !unmatched[g] {
				matched[g] = true
			}
		}
	case r.Op == Disable && r.List != nil && b.Config.Libcalls != "":
		names := strings.Split(b.Config.Libcalls, ",")
		sel := r.List.SelectAlso(names, funclist.Demangled(names))
		for i, ok := range sel.Chosen {
			if !ok {
				libs = append(libs, names[i])
			}
		}
	}
	if n := len(strings.Join(libs, ",")); n >= LibcallsMax {
		return nil, nil, fmt.Errorf("--libcall: the %d library functions chosen take %d bytes, and the config record holds %d: choose fewer, or trace library calls at run time (FTRACE_LIBCALL, ftpatch record)", len(libs), n, LibcallsMax-1)
	}
	return libs, matched, nil
}

// LibCallNames are the library functions the file calls through its GOT
// slots (elfx.File.LibCallNames).
func (b *Binary) LibCallNames() ([]string, error) { return b.File.LibCallNames() }

// countFuncs counts the functions chosen: names are the live sites'
// functions in address order, so a function's sites are adjacent, and two
// static functions of one name in different files count as two.
func countFuncs(names []string, chosen []bool) int {
	n := 0
	for i, ok := range chosen {
		if ok && (i == 0 || names[i] != names[i-1] || !chosen[i-1]) {
			n++
		}
	}
	return n
}

// uniq returns names without repeats (a function with two sites, or
// static functions of one name in several files).
func uniq(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// chainHash combines two list hashes into one that is neither, never 0.
func chainHash(a, b uint64) uint64 {
	h := (a ^ 0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
	h ^= b + 0x94d049bb133111eb + h<<6 + h>>2
	if h == 0 {
		h = 1
	}
	return h
}

// want returns the bytes slot s becomes: a call to target, or (target
// 0) the one NOP of its length.
func (b *Binary) want(s *Slot, target uint64) ([]byte, error) {
	i := isa.For(b.File.Arch)
	if target == 0 {
		return i.SiteNop(int(s.Len))
	}
	if s.Prologue && i.PrologueSiteCall != nil {
		return i.PrologueSiteCall(s.Addr, target)
	}
	return i.SiteCall(s.Addr, target, int(s.Len))
}
