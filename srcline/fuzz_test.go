package srcline

import (
	"os"
	"testing"

	"ftpatch/elfx"
	"ftpatch/internal/fixture"
	"ftpatch/internal/fuzzing"
)

// FuzzLineTable reads arbitrary bytes as a .debug_line section (with a
// .debug_line_str of its own), which reaches the header checks, delve's
// parser behind them and the line program far more often than mutating
// whole files does. Nothing may panic or hang, and lookups answer.
//
// Seeded from the line tables of the linked fixtures and of the unit
// tests. Crashers found are kept under testdata/fuzz/FuzzLineTable.
//
//	go test -run '^$' -fuzz '^FuzzLineTable$' -fuzztime 5m -fuzzminimizetime 5s ./srcline
func FuzzLineTable(f *testing.F) {
	for _, o := range fixture.Linked(f, "..") {
		b, err := os.ReadFile(o.Path)
		if err != nil {
			f.Fatal(err)
		}
		ef, err := elfx.Parse(o.Path, b)
		if err != nil {
			f.Fatal(err)
		}
		t := &Table{}
		line, _, err := t.section(ef, "line")
		if err != nil {
			f.Fatal(err)
		}
		lineStr, _, err := t.section(ef, "line_str")
		if err != nil {
			f.Fatal(err)
		}
		if line != nil {
			f.Add(line, lineStr)
		}
	}
	f.Add(unit{version: 4, files: []string{"a.c"}, prog: ops(setAddr(0x1000), copyOp(), special(4, 1), endSeqOp())}.bytes(), []byte(nil))
	f.Add(bigTable(3), []byte(nil))
	f.Fuzz(func(t *testing.T, data, lineStr []byte) {
		defer fuzzing.FailOnPanic(t)
		tab := &Table{}
		if err := tab.read(".debug_line", data, lineStr, [][2]uint64{{1, ^uint64(0)}}); err != nil {
			return
		}
		for _, r := range tab.rows {
			tab.Lookup(r.addr)
			tab.LookupIn(r.addr, r.addr, r.addr+16)
		}
	})
}
