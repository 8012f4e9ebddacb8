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
const EnumsFile = "enums"

// maxEnumsFile bounds the enums file read: a program's enums, each named
// once.
const maxEnumsFile = 64 << 20

// An Enum is a C enum: how its values are stored and their names.
type Enum struct {
	Name   string
	Size   int  // bytes: 1, 2, 4 or 8
	Signed bool // its underlying type's
	Values []Enumerator
}

// An Enumerator is one name of an enum and its value.
type Enumerator struct {
	Name  string
	Value int64
}

// WriteEnums writes enums as EnumsFile holds them.
func WriteEnums(w io.Writer, enums []Enum) error {
	bw := bufio.NewWriter(w)
	for _, e := range enums {
		sign := "u"
		if e.Signed {
			sign = "s"
		}
		fmt.Fprintf(bw, "%s %d %s", e.Name, e.Size, sign)
		for _, v := range e.Values {
			fmt.Fprintf(bw, " %d %s", v.Value, v.Name)
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
		return nil, errors.New("want NAME SIZE s|u [VALUE NAME]...")
	}
	e := &Enum{Name: f[0], Signed: f[2] == "s"}
	var err error
	if e.Size, err = strconv.Atoi(f[1]); err != nil || (e.Size != 1 && e.Size != 2 && e.Size != 4 && e.Size != 8) || (f[2] != "s" && f[2] != "u") {
		return nil, fmt.Errorf("enum %s: size %q and sign %q: want 1 2 4 or 8, and s or u", f[0], f[1], f[2])
	}
	for k := 3; k < len(f); k += 2 {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("enum %s: value %q: not a number", e.Name, f[k])
		}
		e.Values = append(e.Values, Enumerator{f[k+1], v})
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
