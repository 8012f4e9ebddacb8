// Package protos holds the prototypes of common C library functions as
// argument items: what `ftpatch record --auto-args` records of a
// program's library calls (FTRACE_LIBARGS, FTRACE_LIBRETVAL), as
// uftrace's --auto-args does, and the sets of names (enums and flag
// sets: open's flags, mmap's prot and flags, socket's domain and type,
// fcntl's commands, lseek's whence, signal numbers, ...) their values
// are shown by, per architecture, for the trace's enums file:
//
//	open("/tmp/f", O_RDONLY|O_CLOEXEC) = 3
//	malloc(64) = 0x55d0c4a1b2a0
//	strlen("abc") = 3
//
// The table (table.go) is made by internal/cmd/protogen from the
// declarations in libc.txt, C declarations whose parameters name the
// set they are shown by.
package protos

//go:generate go run ../internal/cmd/protogen -in libc.txt -out table.go

import (
	"strings"

	"ftpatch/arch"
	"ftpatch/trace"
)

// A Func is one function's prototype: Args its arguments' items in
// FTRACE_ARGS's grammar (package argspec's: "arg1/s,arg2/e:open_flags";
// "" for none), Ret its return value's format in FTRACE_RETVAL's ("" for
// void).
type Func struct {
	Name, Args, Ret string
}

// Funcs are the table's functions, in libc.txt's order.
func Funcs() []Func {
	return append([]Func(nil), funcs...)
}

// Lookup finds the function name in the table.
func Lookup(name string) (Func, bool) {
	for _, f := range funcs {
		if f.Name == name {
			return f, true
		}
	}
	return Func{}, false
}

// Args is the table as FTRACE_ARGS entries (FTRACE_LIBARGS's text):
// open@arg1/s,arg2/e:open_flags;...
func Args() string {
	var b strings.Builder
	for _, f := range funcs {
		if f.Args != "" {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(f.Name + "@" + f.Args)
		}
	}
	return b.String()
}

// Retval is the table as FTRACE_RETVAL entries (FTRACE_LIBRETVAL's
// text): open/i32;...
func Retval() string {
	var b strings.Builder
	for _, f := range funcs {
		if f.Ret != "" {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(f.Name + "/" + f.Ret)
		}
	}
	return b.String()
}

// Sets are the sets of names the table's items show their values by
// (e:NAME), with a's values (the Linux headers' differ between
// architectures for some: open's O_DIRECTORY); nil for an architecture
// the table has none for.
func Sets(a arch.Arch) []trace.Enum {
	var s []trace.Enum
	switch a {
	case arch.X86_64:
		s = sets_x86_64
	case arch.ARM64:
		s = sets_arm64
	}
	return append([]trace.Enum(nil), s...)
}

// Set finds the set name for a.
func Set(a arch.Arch, name string) (trace.Enum, bool) {
	for _, e := range Sets(a) {
		if e.Name == name {
			return e, true
		}
	}
	return trace.Enum{}, false
}
