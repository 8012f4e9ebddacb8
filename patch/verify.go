package patch

import (
	"bytes"
	"fmt"

	"ftpatch/sites"
)

// A Problem is one thing Verify found wrong with a file.
type Problem struct {
	Addr uint64 // the site, or 0 for the file as a whole
	Func string // the site's function, when there is one
	Msg  string
}

func (p Problem) String() string {
	switch {
	case p.Addr == 0:
		return p.Msg
	case p.Func == "":
		return fmt.Sprintf("site 0x%x (outside every function): %s", p.Addr, p.Msg)
	}
	return fmt.Sprintf("site 0x%x in %s: %s", p.Addr, p.Func, p.Msg)
}

// A Report is what Verify found.
type Report struct {
	Config   Config
	Sites    int // slots in the table (live and dead)
	Enabled  int // slots calling a trampoline
	Problems []Problem
}

// OK reports whether Verify found nothing wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Verify checks a loaded file against its config record:
//
//   - patched (ftpatch enable or disable wrote it): every site is the P6
//     NOP of its length or a call to the trampoline its kind, length and
//     the recorded tracer call; dead entries are NOPs; the record's
//     counts are the table's; and the executable segments, sites masked,
//     hash to what the record says (nothing else in the text changed);
//   - not patched (as linked): every site holds what a compiler writes
//     (the call to a hook, or NOPs), and the record is all zeros.
//
// Load has already checked that the runtime is linked with its config
// record and trampolines, and that every table entry is a site of a
// function (or a dead one).
func (b *Binary) Verify() *Report {
	r := &Report{Config: b.Config, Sites: len(b.Slots)}
	c := b.Config
	add := func(s *Slot, format string, args ...any) {
		p := Problem{Msg: fmt.Sprintf(format, args...)}
		if s != nil {
			p.Addr, p.Func = s.Addr, s.Func
		}
		r.Problems = append(r.Problems, p)
	}
	for i := range b.Slots {
		s := &b.Slots[i]
		if s.State == sites.StateTraced {
			r.Enabled++
		}
		switch {
		case s.Other():
			add(s, "holds %s", b.Detail(s))
		case c.Patched() && (s.State == sites.StateNop || s.State == sites.StateNops && b.isa.NopsDisabled):
			want, err := b.want(s, 0)
			if got := b.File.Data[s.Off : int(s.Off)+int(s.Len)]; err != nil || !bytes.Equal(got, want) {
				add(s, "holds the NOP % x, ftpatch writes % x", got, want)
			}
		case c.Patched() && s.State == sites.StateTraced && s.Dead():
			add(s, "calls %s, but it lies in no live function: ftpatch leaves such entries NOPs", b.trampName(s.Target))
		case c.Patched() && s.State == sites.StateTraced:
			if want := b.trampFor(s, c.Tracer); s.Target != want {
				add(s, "calls %s; a %d-byte %s site traced by %s calls %s", b.trampName(s.Target), s.Len, s.Kind, c.Tracer, b.trampName(want))
			}
		case c.Patched():
			add(s, "holds %s, which ftpatch does not leave in a patched file: want a NOP or a trampoline call", b.holds(s))
		case s.State == sites.StateTraced:
			add(s, "calls %s, but the config record says the file is not patched", b.trampName(s.Target))
		}
	}
	switch {
	case c.Reserved != 0 || c.Flags&^(FlagPatched|FlagNoTable|FlagCtl) != 0:
		add(nil, "%s: unknown flags 0x%x or reserved field 0x%x", ConfigSection, c.Flags, c.Reserved)
	case c.Patched() && (c.Flags&FlagNoTable != 0) != (b.File.Section(sites.TableName) == nil):
		if c.Flags&FlagNoTable != 0 {
			add(nil, "%s: says the file has no site table, but it has %s: relinked since ftpatch enable?", ConfigSection, sites.TableName)
		} else {
			add(nil, "%s: says the file has a site table, but it has no %s", ConfigSection, sites.TableName)
		}
	case c.Tracer > TracerNop:
		add(nil, "%s: unknown tracer %d", ConfigSection, uint32(c.Tracer))
	case !c.Patched():
		if c != (Config{}) {
			add(nil, "%s: not marked patched, yet holds tracer %s, %d sites, %d enabled", ConfigSection, c.Tracer, c.Sites, c.Enabled)
		}
	default:
		if c.Sites != uint64(len(b.Slots)) {
			add(nil, "%s: records %d sites, the table lists %d: the file was relinked or its table changed", ConfigSection, c.Sites, len(b.Slots))
		}
		if c.Enabled != uint64(r.Enabled) {
			add(nil, "%s: records %d enabled sites, %d call the runtime", ConfigSection, c.Enabled, r.Enabled)
		}
		if (c.Enabled == 0) != (c.Tracer == TracerNone) {
			add(nil, "%s: tracer %s with %d enabled sites", ConfigSection, c.Tracer, c.Enabled)
		}
		if h := b.textHash(); h != c.TextHash {
			add(nil, "executable code outside the sites changed since ftpatch patched the file (text hash %016x, recorded %016x)", h, c.TextHash)
		}
	}
	return r
}
