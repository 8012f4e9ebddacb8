package sites_test

import (
	"debug/elf"
	"io"
	"testing"

	"ftpatch/elfx"
	"ftpatch/internal/fixture"
	"ftpatch/internal/fuzzing"
	"ftpatch/record"
	"ftpatch/sites"
	"ftpatch/srcline"
)

// FuzzFindObject runs site discovery and the recordmcount pass on
// arbitrary bytes. Nothing may panic or hang. Discovery that succeeds
// returns sites inside their sections, sorted; the pass either fails (as
// discovery did, if it did) or returns an object that parses, whose
// discovery finds the same number of sites, and that a second pass leaves
// unchanged.
//
// Seeded from the objects under sites/testdata, elfx/testdata and
// cmd/recordmcount/testdata (the good object, its recorded form and the
// bad corpus). Crashers found are kept under testdata/fuzz/FuzzFindObject.
//
//	go test -run '^$' -fuzz '^FuzzFindObject$' -fuzztime 3m -fuzzminimizetime 5s ./sites
//
// (The engine minimizes each new interesting input for up to
// -fuzzminimizetime, 60s by default, without running new inputs: on
// these kilobyte-sized objects that took most of a short run.)
func FuzzFindObject(f *testing.F) {
	for _, b := range fixture.Read(f, fixture.Seeds(f, "..")...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzing.FailOnPanic(t)
		ef, err := elfx.Parse("fuzz.o", data)
		if err != nil {
			return
		}
		obj, findErr := sites.FindObject(ef)
		if findErr == nil {
			checkSites(t, ef, obj)
		}
		for _, opts := range []record.Options{{}, {Nop: true}} {
			img, res, err := record.Rewrite("fuzz.o", data, opts)
			if err != nil {
				continue
			}
			if findErr != nil {
				t.Fatalf("%+v: FindObject failed (%v) but Rewrite succeeded", opts, findErr)
			}
			if img == nil {
				if res.Changed {
					t.Fatalf("%+v: no image, yet Changed", opts)
				}
				continue
			}
			g, err := elfx.Parse("fuzz.o", img)
			if err != nil {
				t.Fatalf("%+v: the rewritten object does not parse: %v", opts, err)
			}
			obj2, err := sites.FindObject(g)
			if err != nil {
				t.Fatalf("%+v: FindObject on the rewritten object: %v", opts, err)
			}
			if len(obj2.Sites) != len(res.Object.Sites) {
				t.Fatalf("%+v: %d sites before the pass, %d after", opts, len(res.Object.Sites), len(obj2.Sites))
			}
			if res.Tabled > 0 && obj2.Table != sites.TableOurs {
				t.Fatalf("%+v: %d sites tabled, but the rewritten object's table is %v", opts, res.Tabled, obj2.Table)
			}
			checkSites(t, g, obj2)
			again, res2, err := record.Rewrite("fuzz.o", img, opts)
			if err != nil || again != nil {
				t.Fatalf("%+v: second pass: %d bytes, changed %v, %v; want the object left alone", opts, len(again), res2.Changed, err)
			}
		}
	})
}

// checkSites checks what FindObject promises of the sites it returns.
func checkSites(t *testing.T, f *elfx.File, obj *sites.Object) {
	t.Helper()
	for i, s := range obj.Sites {
		if s.Section <= 0 || s.Section >= len(f.Sections) {
			t.Fatalf("site %d: section %d out of range", i, s.Section)
		}
		sec := f.Sections[s.Section]
		if sec.Name != s.SecName || sec.Flags&elf.SHF_EXECINSTR == 0 || s.Len <= 0 || s.Off+uint64(s.Len) > uint64(len(f.SectionData(sec))) {
			t.Fatalf("site %d %+v is not inside the contents of code section %s (%d bytes)", i, s, sec, len(f.SectionData(sec)))
		}
		// (Func may be empty: an STT_FUNC symbol may have no name.)
		if s.Kind == sites.KindUnknown || s.State == sites.StateUnknown {
			t.Fatalf("site %d %+v: no kind or state", i, s)
		}
		if i > 0 {
			p := obj.Sites[i-1]
			if p.Section > s.Section || p.Section == s.Section && p.Off >= s.Off {
				t.Fatalf("sites %d and %d out of order or at one place: %+v, %+v", i-1, i, p, s)
			}
		}
	}
}

// FuzzFindLinked runs the linked-file reader on arbitrary bytes: the ELF
// parser, site discovery and call resolution (FindLinked), the DWARF line
// table (AddSources) and both writers. Nothing may panic or hang; sites
// that are returned must be what FindLinked promises (see checkLinked).
//
// Seeded from the linked fixtures (sites/testdata/linked). Crashers found
// are kept under testdata/fuzz/FuzzFindLinked.
//
//	go test -run '^$' -fuzz '^FuzzFindLinked$' -fuzztime 5m -fuzzminimizetime 5s ./sites
func FuzzFindLinked(f *testing.F) {
	for _, o := range fixture.Linked(f, "..") {
		f.Add(fixture.Read(f, o.Path)[0])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzing.FailOnPanic(t)
		ef, err := elfx.Parse("fuzz", data)
		if err != nil {
			return
		}
		l, err := sites.FindLinked(ef)
		if err != nil {
			// The line table is read on its own too: a file without a
			// site table still has one to fuzz.
			if tab, err := srcline.Read(ef); err == nil {
				for _, s := range ef.Sections {
					tab.Lookup(uint64(s.Addr))
				}
			}
			return
		}
		checkLinked(t, ef, l)
		if err := sites.AddSources(ef, l); err != nil {
			return
		}
		if err := sites.WriteLinked(io.Discard, l); err != nil {
			t.Fatal(err)
		}
		if err := sites.WriteLinkedJSON(io.Discard, l); err != nil {
			t.Fatal(err)
		}
	})
}

// checkLinked checks what FindLinked promises of the sites it returns:
// sorted and distinct, each in a code section and in its function, with
// a kind, a state and a status, and a call target exactly when it holds
// a call.
func checkLinked(t *testing.T, f *elfx.File, l *sites.Linked) {
	t.Helper()
	for i, s := range l.Sites {
		if i > 0 && l.Sites[i-1].Off >= s.Off {
			t.Fatalf("sites %d and %d out of order: 0x%x, 0x%x", i-1, i, l.Sites[i-1].Off, s.Off)
		}
		code := false
		for _, sec := range f.Sections {
			if sec.Flags&elf.SHF_EXECINSTR != 0 && uint64(sec.Addr) <= s.Off && s.Off-uint64(sec.Addr) < sec.Size {
				code = true
			}
		}
		if !code {
			t.Fatalf("site %d at 0x%x is in no code section", i, s.Off)
		}
		if s.Len <= 0 || s.FuncOff > s.Off || s.Kind == sites.KindUnknown || s.State == sites.StateUnknown {
			t.Fatalf("site %d %+v: no length, kind or state", i, s)
		}
		if (s.Call != nil) != s.State.IsCall() {
			t.Fatalf("site %d at 0x%x: state %v, call %+v", i, s.Off, s.State, s.Call)
		}
	}
}
