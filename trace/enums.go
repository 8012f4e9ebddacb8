package trace

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"ftpatch/internal/escape"
)

// EnumsFile is the file of a trace directory that names the enums'
// values: `ftpatch record` writes it when the run ends, with every enum
// an e:ENUM item of the run named (the runtime records an enum's value
// and its name, not its enumerators, which it does not know). A trace
// without it shows enums as numbers.
//
// One enum a line: its name, its size in bytes, s (signed) or u, then
// value name pairs:
//
//	color 4 u 0 RED 1 GREEN 2 BLUE
//
// A flag set (an int of OR-ed flags, as open's flags) has x or o in
// place of s or u: the bits no name covers show in hex or in octal
// (a file mode's 0644). Its values are flags (one bit or several, all
// set) or, as VALUE/MASK, a field's values (open's O_RDONLY, O_WRONLY
// and O_RDWR, under O_ACCMODE):
//
//	open_flags 4 x 0/3 O_RDONLY 1/3 O_WRONLY 2/3 O_RDWR 64 O_CREAT 524288 O_CLOEXEC
//
// (Traces written before flag sets have only s and u lines.)
const EnumsFile = "enums"

// maxEnumsFile bounds the enums file read: a program's enums, each named
// once.
const maxEnumsFile = 64 << 20

// An Enum is a C enum, or a set of flags: how its values are stored
// and their names.
type Enum struct {
	Name   string
	Size   int  // bytes: 1, 2, 4 or 8
	Signed bool // its underlying type's (an enum's)
	// Flags: a set of flags OR-ed in an integer (open's O_RDONLY|O_CLOEXEC)
	// rather than one of several values; Octal: the bits no name covers
	// show in octal (a file mode), else in hex.
	Flags, Octal bool
	Values       []Enumerator
}

// An Enumerator is one name of an enum and its value. In a flag set,
// a flag (Mask 0: every bit of Value set) or the value of a field
// (the bits of Mask equal to Value).
type Enumerator struct {
	Name  string
	Value int64
	Mask  int64
}

// WriteEnums writes enums as EnumsFile holds them.
func WriteEnums(w io.Writer, enums []Enum) error {
	bw := bufio.NewWriter(w)
	for _, e := range enums {
		kind := "u"
		switch {
		case e.Flags && e.Octal:
			kind = "o"
		case e.Flags:
			kind = "x"
		case e.Signed:
			kind = "s"
		}
		fmt.Fprintf(bw, "%s %d %s", e.Name, e.Size, kind)
		for _, v := range e.Values {
			if e.Flags && v.Mask != 0 {
				fmt.Fprintf(bw, " %d/%d %s", v.Value, v.Mask, v.Name)
			} else {
				fmt.Fprintf(bw, " %d %s", v.Value, v.Name)
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// readEnums reads the trace's EnumsFile, by name; none (nil) when there
// is no such file.
func readEnums(dir string) (map[string]*Enum, error) {
	path := filepath.Join(dir, EnumsFile)
	b, err := readOptional(path, maxEnumsFile, ErrFormat)
	if b == nil || err != nil {
		return nil, err
	}
	out := map[string]*Enum{}
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" && len(b) <= 1 {
			break // no enum
		}
		e, err := parseEnum(line)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w: %v", path, i+1, ErrFormat, err)
		}
		out[e.Name] = e
	}
	return out, nil
}

func parseEnum(line string) (*Enum, error) {
	f := strings.Fields(line)
	if len(f) < 3 || len(f)%2 == 0 {
		return nil, errors.New("want NAME SIZE s|u|x|o [VALUE NAME]...")
	}
	e := &Enum{Name: f[0], Signed: f[2] == "s", Flags: f[2] == "x" || f[2] == "o", Octal: f[2] == "o"}
	var err error
	if e.Size, err = strconv.Atoi(f[1]); err != nil || (e.Size != 1 && e.Size != 2 && e.Size != 4 && e.Size != 8) || !strings.Contains("suxo", f[2]) || len(f[2]) != 1 {
		return nil, fmt.Errorf("enum %s: size %q and kind %q: want 1 2 4 or 8, and s, u, x or o", f[0], f[1], f[2])
	}
	for k := 3; k < len(f); k += 2 {
		val, mask, field := strings.Cut(f[k], "/")
		v, err := strconv.ParseInt(val, 10, 64)
		var m int64
		if err == nil && field {
			m, err = strconv.ParseInt(mask, 10, 64)
			if err == nil && (!e.Flags || m == 0 || v&^m != 0) {
				err = errors.New("not in its mask")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("enum %s: value %q: want a number, or a flag set's VALUE/MASK", e.Name, f[k])
		}
		e.Values = append(e.Values, Enumerator{Name: f[k+1], Value: v, Mask: m})
	}
	return e, nil
}

// Show is how reg, an enum's register, reads: its low Size bytes as
// the enum stores them, then the enumerator of that value, or the
// single-bit enumerators whose bits make it up (a flags enum: A|B), or
// else the number. Names are escaped (package escape): the trace's
// enums file is read as it came.
func (e *Enum) Show(reg uint64) string {
	shift := 64 - 8*e.Size
	u := reg << shift >> shift
	if e.Flags {
		return e.showFlags(u)
	}
	v := int64(u)
	if e.Signed {
		v = int64(reg<<shift) >> shift
	}
	for _, x := range e.Values {
		if x.Value == v {
			return escape.Text(x.Name)
		}
	}
	var flags []Enumerator
	for _, x := range e.Values {
		if x.Value > 0 && bits.OnesCount64(uint64(x.Value)) == 1 && u&uint64(x.Value) != 0 {
			flags = append(flags, x)
			u &^= uint64(x.Value)
		}
	}
	if v > 0 && u == 0 && len(flags) > 1 {
		slices.SortFunc(flags, func(a, b Enumerator) int { return cmp.Compare(a.Value, b.Value) })
		names := make([]string, len(flags))
		for i, x := range flags {
			names[i] = x.Name
		}
		return escape.Text(strings.Join(names, "|"))
	}
	if e.Signed {
		return strconv.FormatInt(v, 10)
	}
	return strconv.FormatUint(uint64(v)<<shift>>shift, 10)
}

// showFlags is how u, a flag set's value, reads: the name of each
// field's value and of each flag it holds, OR-ed, lowest bits first,
// then the bits no name covers, in hex (or octal); 0 when it is 0 and
// no field names it. A flag of several bits is named when all are set,
// before the names of fewer bits it holds: a set lists such first.
func (e *Enum) showFlags(u uint64) string {
	type part struct {
		low  int // the lowest bit it covers
		name string
	}
	var parts []part
	rest := u
	var fields uint64 // masks named already
	for _, x := range e.Values {
		m, v := uint64(x.Mask), uint64(x.Value)
		switch {
		case m != 0:
			if fields&m == 0 && u&m == v {
				parts = append(parts, part{bits.TrailingZeros64(m), x.Name})
				fields |= m
				rest &^= m
			}
		case v != 0 && rest&v == v:
			parts = append(parts, part{bits.TrailingZeros64(v), x.Name})
			rest &^= v
		}
	}
	slices.SortStableFunc(parts, func(a, b part) int { return cmp.Compare(a.low, b.low) })
	names := make([]string, 0, len(parts)+1)
	for _, p := range parts {
		names = append(names, escape.Text(p.name))
	}
	switch {
	case rest != 0 && e.Octal:
		names = append(names, "0"+strconv.FormatUint(rest, 8))
	case rest != 0:
		names = append(names, "0x"+strconv.FormatUint(rest, 16))
	case len(names) == 0:
		names = append(names, "0")
	}
	return strings.Join(names, "|")
}
