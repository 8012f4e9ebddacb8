// Package argspec makes the runtime's FTRACE_ARGS and FTRACE_RETVAL
// settings from a program's DWARF (`ftpatch record --auto-args`): for
// each function the globs choose, an item per parameter by its type, as
// the C calling convention passes it (x86-64 and arm64 alike: integers
// and pointers in the integer registers, in order, floating-point values
// in the vector ones), and the return value's format.
//
//	int parse(int n, const char *s)   parse@arg1/d,arg2/s   parse/d
//	double ratio(double a, long k)    ratio@fparg1,arg1/d   ratio/f
//	long sum(struct pair p)           sum@arg1/d,arg2/d     sum/d
//
// A char pointer is a string (/s), another pointer /p, char /c, an
// unsigned integer /x, a signed one /d, float and double fparg; a struct
// or union of at most 16 bytes whose members are all integers or
// pointers takes one integer register a word (/x each); anything else
// (a larger struct, passed on the stack or by reference; long double; a
// mixed struct) ends the function's items there, as the registers after
// it can no longer be told. A function's parameters come from its
// DW_TAG_subprogram's DW_TAG_formal_parameter children; their types are
// read with github.com/go-delve/delve/pkg/dwarf/godwarf.
package argspec

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"

	"ftpatch/runtime/abi"
)

// ErrNoDWARF: the file has no DWARF to take types from (built without
// -g, or stripped).
var ErrNoDWARF = errors.New("no DWARF debugging information (build with -g)")

// A Func is one function's items: Args as FTRACE_ARGS's glob@items
// entry wants them (argN/f, fpargN), Ret the return value's format ("":
// none: void, or a type the runtime cannot show).
type Func struct {
	Name string
	Args []string
	Ret  string
}

// Read returns the functions of the ELF file at file that one of globs
// chooses (path.Match syntax; "!glob" leaves out what it matches), in
// name order, each once.
func Read(file string, globs []string) ([]Func, error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, ErrNoDWARF)
	}
	seen := map[string]bool{}
	cache := map[dwarf.Offset]godwarf.Type{}
	var out []Func
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: reading its DWARF: %w", file, err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagSubprogram || !e.Children {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if link, ok := e.Val(dwarf.AttrLinkageName).(string); ok {
			name = link // C++: the symbol the runtime names its sites by
		}
		_, hasCode := e.Val(dwarf.AttrLowpc).(uint64)
		if name == "" || !hasCode || seen[name] || !Chooses(globs, name) {
			r.SkipChildren()
			continue
		}
		seen[name] = true
		fn := Func{Name: name}
		if off, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok {
			if t, err := godwarf.ReadType(d, 0, off, cache); err == nil {
				fn.Ret = retFormat(t)
			}
		}
		ints, fps, done := 0, 0, false
		for {
			c, err := r.Next()
			if err != nil {
				return nil, fmt.Errorf("%s: reading its DWARF: %w", file, err)
			}
			if c == nil || c.Tag == 0 {
				break
			}
			if c.Children {
				r.SkipChildren()
			}
			if c.Tag != dwarf.TagFormalParameter || done {
				continue
			}
			off, ok := c.Val(dwarf.AttrType).(dwarf.Offset)
			if !ok {
				done = true
				continue
			}
			t, err := godwarf.ReadType(d, 0, off, cache)
			if err != nil {
				done = true
				continue
			}
			items, ok := argItems(t, &ints, &fps)
			if !ok || len(fn.Args)+len(items) > abi.ArgMax {
				done = true
				continue
			}
			fn.Args = append(fn.Args, items...)
		}
		if len(fn.Args) > 0 || fn.Ret != "" {
			out = append(out, fn)
		}
	}
	slices.SortFunc(out, func(a, b Func) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Chooses says whether globs choose name: one plain glob matches (or
// there is none) and no "!glob" does.
func Chooses(globs []string, name string) bool {
	plain, in := false, false
	for _, g := range globs {
		for _, one := range strings.Split(g, ",") {
			if one == "" {
				continue
			}
			if neg, ok := strings.CutPrefix(one, "!"); ok {
				if m, _ := path.Match(neg, name); m {
					return false
				}
				continue
			}
			plain = true
			if m, _ := path.Match(one, name); m {
				in = true
			}
		}
	}
	return in || !plain
}

// Settings are FTRACE_ARGS's and FTRACE_RETVAL's values for funcs.
func Settings(funcs []Func) (args, retval string) {
	var a, r []string
	for _, f := range funcs {
		if len(f.Args) > 0 {
			a = append(a, f.Name+"@"+strings.Join(f.Args, ","))
		}
		if f.Ret != "" {
			r = append(r, f.Name+"/"+f.Ret)
		}
	}
	return strings.Join(a, ";"), strings.Join(r, ";")
}

// strip takes typedefs and qualifiers off t.
func strip(t godwarf.Type) godwarf.Type {
	for {
		switch u := t.(type) {
		case *godwarf.TypedefType:
			t = u.Type
		case *godwarf.QualType:
			t = u.Type
		default:
			return t
		}
	}
}

// scalar is the format of a value of type t held in one register:
// d x c s p f; "" for none.
func scalar(t godwarf.Type) string {
	switch u := strip(t).(type) {
	case *godwarf.IntType, *godwarf.BoolType, *godwarf.EnumType:
		return "d"
	case *godwarf.UintType, *godwarf.AddrType:
		return "x"
	case *godwarf.CharType, *godwarf.UcharType:
		return "c"
	case *godwarf.PtrType:
		switch strip(u.Type).(type) {
		case *godwarf.CharType, *godwarf.UcharType:
			return "s"
		}
		return "p"
	case *godwarf.FloatType:
		if u.ByteSize <= 8 {
			return "f"
		}
	}
	return ""
}

// argItems are the items of a parameter of type t, counting the
// integer and floating-point registers it takes; ok false when it
// takes what cannot be told.
func argItems(t godwarf.Type, ints, fps *int) (items []string, ok bool) {
	switch f := scalar(t); f {
	case "f":
		*fps++
		return []string{fmt.Sprintf("fparg%d", *fps)}, true
	case "":
	default:
		*ints++
		return []string{fmt.Sprintf("arg%d/%s", *ints, f)}, true
	}
	st, isStruct := strip(t).(*godwarf.StructType)
	if !isStruct || st.ByteSize <= 0 || st.ByteSize > 16 {
		return nil, false
	}
	for _, fld := range st.Field {
		if s := scalar(fld.Type); s == "" || s == "f" {
			return nil, false
		}
	}
	for range (st.ByteSize + 7) / 8 {
		*ints++
		items = append(items, fmt.Sprintf("arg%d/x", *ints))
	}
	return items, true
}

// retFormat is FTRACE_RETVAL's format of a return value of type t.
func retFormat(t godwarf.Type) string {
	return scalar(t)
}
