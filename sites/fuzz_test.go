package sites_test

import (
	"debug/elf"
	"os"
	"runtime/debug"
	"testing"

	"ftpatch/elfx"
	"ftpatch/internal/fixture"
	"ftpatch/record"
	"ftpatch/sites"
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
	paths := fixture.Seeds(f, "..")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer failOnPanic(t)
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

// failOnPanic turns a panic into a test failure with its stack, so one
// crashing input does not end the test binary.
func failOnPanic(t *testing.T) {
	if r := recover(); r != nil {
		t.Fatalf("panic: %v\n%s", r, debug.Stack())
	}
}
