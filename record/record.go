// Package record is the recordmcount pass: it finds the patch sites of a
// relocatable object and writes them back into the object as its
// __mcount_loc table, so the linker gathers every object's sites between
// __start___mcount_loc and __stop___mcount_loc for the runtime.
//
// The table is a writable SHF_ALLOC section of 8-byte absolute addresses,
// each with an R_X86_64_64 / R_AARCH64_ABS64 relocation against the
// section symbol of the site's section. Writable, because in a PIE those
// words become R_*_RELATIVE dynamic relocations, which a read-only section
// could only take as text relocations (GNU ld warns and sets DT_TEXTREL;
// lld refuses). Against section symbols, because a relocation against a
// weak function's own symbol would follow the symbol to whatever strong
// definition the linker picks. Sites in a COMDAT group get a table section
// in that group, so the linker drops them with the group.
package record

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"path/filepath"

	"ftpatch/elfx"
	"ftpatch/infile"
	"ftpatch/isa"
	"ftpatch/nops"
	"ftpatch/outfile"
	"ftpatch/sites"
)

// Options select what the pass does to each object.
type Options struct {
	// Nop also turns every call site into one NOP of the site's size in
	// the object, and its relocation into R_*_NONE, so the linked program
	// starts with every site a NOP.
	Nop bool
	// List only reports the sites: nothing is written.
	List bool
}

// A Result is what happened to one object.
type Result struct {
	Path    string
	Object  *sites.Object // the sites, as they are after the pass
	Changed bool          // the file was (or, with List, would be) rewritten
	Tabled  int           // sites added to a new __mcount_loc
	Nopped  int           // sites turned into NOPs
	Err     error

	written string // the file written, whose directory is yet to sync
}

// Summary is the one-line account of a result printed by the tool.
func (r *Result) Summary() string {
	if r.Err != nil {
		return r.Err.Error()
	}
	n := len(r.Object.Sites)
	switch {
	case r.Changed:
		s := fmt.Sprintf("%s: %d sites recorded", r.Path, r.Tabled)
		if r.Tabled == 0 {
			s = fmt.Sprintf("%s: %d sites already recorded", r.Path, n)
		}
		if r.Nopped > 0 {
			s += fmt.Sprintf(", %d turned into NOPs", r.Nopped)
		}
		return s
	case n == 0:
		return fmt.Sprintf("%s: no patch sites (not compiled with -pg, -mfentry or -fpatchable-function-entry?); unchanged", r.Path)
	case r.Object.Table == sites.TableCompiler:
		return fmt.Sprintf("%s: unchanged: the compiler's own %s (-mrecord-mcount) already lists its %d sites", r.Path, sites.TableName, n)
	default:
		return fmt.Sprintf("%s: unchanged: %s already lists its %d sites", r.Path, sites.TableName, n)
	}
}

// Rewrite runs the pass on the object image data (read from path, which
// only names it in messages) and returns the new image, or nil when
// nothing changes. It does no I/O.
func Rewrite(path string, data []byte, opts Options) ([]byte, Result, error) {
	chunks, res, err := rewrite(path, data, opts)
	if chunks == nil {
		return nil, res, err
	}
	return elfx.Join(chunks), res, err
}

// rewrite is Rewrite returning the image in pieces, to be written without
// joining them (see elfx.Editor.Chunks).
func rewrite(path string, data []byte, opts Options) (img [][]byte, res Result, err error) {
	f, err := elfx.Parse(path, data)
	if err != nil {
		return nil, Result{Path: path}, err
	}
	return rewriteFile(f, opts)
}

func rewriteFile(f *elfx.File, opts Options) (img [][]byte, res Result, err error) {
	res.Path = f.Path
	obj, err := sites.FindObject(f)
	if err != nil {
		return nil, res, err
	}
	res.Object = obj
	if len(obj.Sites) == 0 {
		return nil, res, nil
	}
	ed, err := f.Edit()
	if err != nil {
		return nil, res, err
	}
	if obj.Untabled > 0 {
		// All sites of a fresh object; or, in an object that already has
		// a table, those it misses (an `ld -r` of processed and
		// unprocessed objects), in a table section of their own.
		if err := addTable(f, ed, obj.Sites[len(obj.Sites)-obj.Untabled:]); err != nil {
			return nil, res, err
		}
		res.Tabled = obj.Untabled
		res.Changed = true
	}
	if opts.Nop {
		n, err := nopSites(f, ed, obj.Sites)
		if err != nil {
			return nil, res, err
		}
		res.Nopped = n
		res.Changed = res.Changed || n > 0
	}
	if !res.Changed {
		return nil, res, nil
	}
	return ed.Chunks(), res, nil
}

// addTable appends __mcount_loc and .rela__mcount_loc: one pair for the
// sites outside any group, one per COMDAT group holding sites.
func addTable(f *elfx.File, ed *elfx.Editor, ss []sites.Site) error {
	symSec, syms, err := f.Symtab()
	if err != nil {
		return err
	}
	secSym := map[int]uint32{}
	secVal := map[int]uint64{} // a section symbol's value is normally 0, but need not be
	// Section symbols are local, and locals come first (sh_info is the
	// first non-local).
	for i := range syms[:min(int(symSec.Info), len(syms))] {
		if syms[i].Type() == elf.STT_SECTION && syms[i].Bind() == elf.STB_LOCAL && syms[i].Defined() {
			if _, ok := secSym[int(syms[i].Shndx)]; !ok {
				secSym[int(syms[i].Shndx)] = uint32(i)
				secVal[int(syms[i].Shndx)] = uint64(syms[i].Value)
			}
		}
	}
	// The assembler drops section symbols nothing refers to; a section
	// whose functions are all weak or global may have none. Add them
	// (this renumbers later symbols, so look up the rest afterwards).
	var missing []int
	seen := map[int]bool{}
	for _, s := range ss {
		if _, ok := secSym[s.Section]; !ok && !seen[s.Section] {
			seen[s.Section] = true
			missing = append(missing, s.Section)
		}
	}
	added, err := ed.AddSectionSymbols(missing)
	if err != nil {
		return err
	}
	// Existing section symbols are local, so they precede the insertion
	// point and keep their indices.
	for i, sec := range missing {
		secSym[sec] = added[i]
	}

	// Indices of the sites per group (0: no group), groups in order of
	// first appearance so the output is deterministic.
	var order []int32
	byGroup := map[int32][]int32{}
	for i := range ss {
		g := ss[i].Group
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], int32(i))
	}
	abs := elfx.Abs64(f.Arch)
	for _, g := range order {
		gs := byGroup[g]
		rela := make([]byte, 0, len(gs)*elfx.RelaSize)
		for i, si := range gs {
			s := &ss[si]
			rela = elfx.AppendRela(rela, elfx.Rela{
				Off:    uint64(i * 8),
				Sym:    secSym[s.Section],
				Type:   abs,
				Addend: int64(s.Off - secVal[s.Section]), // symbol + addend = the site
			})
		}
		flags := elf.SHF_ALLOC | elf.SHF_WRITE
		rflags := elf.SHF_INFO_LINK
		if g != 0 {
			flags |= elf.SHF_GROUP
			rflags |= elf.SHF_GROUP
		}
		tab := ed.AddSection(elfx.Section{Name: sites.TableName, Type: elf.SHT_PROGBITS, Flags: flags, Align: 8, Entsize: 8}, make([]byte, 8*len(gs)))
		rel := ed.AddSection(elfx.Section{Name: ".rela" + sites.TableName, Type: elf.SHT_RELA, Flags: rflags,
			Link: uint32(symSec.Index), Info: uint32(tab), Align: 8, Entsize: 24}, rela)
		if g != 0 {
			if err := ed.AddToGroup(int(g), tab, rel); err != nil {
				return err
			}
		}
	}
	return nil
}

// nopSites turns call sites (and x86-64 multi-NOP patchable areas) into
// one NOP each, verifying the bytes it replaces, and retypes each call's
// relocation to R_*_NONE so the linker leaves the NOP alone.
func nopSites(f *elfx.File, ed *elfx.Editor, ss []sites.Site) (int, error) {
	texts := map[int][]byte{}
	relas := map[int][]byte{}
	n := 0
	in := isa.For(f.Arch)
	for i := range ss {
		s := &ss[i]
		if s.State == sites.StateNop || (in.NopsDisabled && s.State == sites.StateNops) {
			continue // arm64 patchable areas are one NOP per instruction already
		}
		nop, err := in.SiteNop(s.Len)
		if err != nil {
			return n, fmt.Errorf("section %q+0x%x: %w", s.SecName, s.Off, err)
		}
		text, ok := texts[s.Section]
		if !ok {
			text = append([]byte(nil), ed.Data(s.Section)...)
			texts[s.Section] = text
		}
		old := append([]byte(nil), text[s.Off:s.Off+uint64(s.Len)]...)
		if err := nops.Modify(&nops.Bytes{B: text}, s.Off, old, nop); err != nil {
			return n, fmt.Errorf("section %q+0x%x (%s): %w", s.SecName, s.Off, s.Func, err)
		}
		if s.Rela >= 0 {
			r, ok := relas[int(s.Rela)]
			if !ok {
				r = append([]byte(nil), ed.Data(int(s.Rela))...)
				relas[int(s.Rela)] = r
			}
			e := r[s.RelaIdx*elfx.RelaSize:]
			// Symbol 0, R_*_NONE, addend 0, in place; the offset stays.
			elfx.AppendRela(e[:0], elfx.Rela{Off: binary.LittleEndian.Uint64(e), Type: elfx.RelocNone})
			s.Rela, s.RelaIdx = -1, -1
		}
		s.State = sites.StateNop
		n++
	}
	for sec, b := range texts {
		ed.SetData(sec, b)
	}
	for sec, b := range relas {
		ed.SetData(sec, b)
	}
	return n, nil
}

// File runs the pass on the object at path and writes the result to out
// (path itself when out is empty) as outfile.Plan says: atomically,
// keeping the mode, owner and attributes of the file it replaces, and
// refusing before any work what it could not replace whole. When nothing
// changes and out is path, nothing is written.
func File(path, out string, opts Options) Result {
	res := file(path, out, opts)
	if res.written != "" {
		if err := outfile.SyncDir(filepath.Dir(res.written)); err != nil && res.Err == nil {
			res.Err = err
		}
	}
	return res
}

// file is File without the directory sync: it leaves the path written in
// Result.written, so Files can sync each directory once.
func file(path, out string, opts Options) (res Result) {
	// A bug of ours on some input must cost that file, not the run (a
	// panic in a worker goroutine would end the whole process).
	defer func() {
		if r := recover(); r != nil {
			res = Result{Path: path, Err: fmt.Errorf("%s: internal error: %v (please report it with the file)", path, r)}
		}
	}()
	in := path
	var o *outfile.Output
	if !opts.List {
		var err error
		if o, err = outfile.Plan(path, out); err != nil {
			return Result{Path: path, Err: err}
		}
		o.DeferDirSync = true
		in = o.In
	}
	m, err := infile.Map(in)
	if err != nil {
		return Result{Path: path, Err: err}
	}
	defer m.Close()
	data := m.Data
	f, err := elfx.Parse(path, data)
	if err != nil {
		return Result{Path: path, Err: fmt.Errorf("%s: %w", path, err)}
	}
	// A large object without a table will be rewritten, mostly as its own
	// bytes: start writing those on another core while the sites are found.
	var pending *outfile.Pending
	if o != nil && len(data) >= speculateSize && f.Type == elf.ET_REL && f.Section(sites.TableName) == nil {
		pending, _ = o.Start(data) // on failure, write the usual way below
	}
	defer func() {
		if pending != nil {
			pending.Abort()
		}
	}()
	img, res, err := rewriteFile(f, opts)
	if err != nil || o == nil || (img == nil && o.InPlace) {
		if err != nil {
			res.Err = fmt.Errorf("%s: %w", path, err)
		}
		return res
	}
	if img == nil {
		img = [][]byte{data} // -o with nothing to change: the output is a copy
	}
	if pending != nil {
		err = pending.Finish(img...)
		pending = nil
	} else {
		err = o.WriteChunks(img...)
	}
	if err != nil {
		res.Err = err
		return res
	}
	res.written = o.Path
	return res
}

// speculateSize is the input size from which file starts writing the
// output before the sites are known.
const speculateSize = 1 << 20
