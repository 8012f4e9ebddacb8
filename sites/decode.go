package sites

import (
	"errors"
	"fmt"

	"ftpatch/isa/x86"
)

// ErrBadSite: something that should be a patch site is not one (wrong
// instruction, not at an instruction boundary, outside every function),
// or holds bytes that neither the compiler nor ftpatch writes, which
// patching reports and never overwrites. Returned wrapped in a
// *SiteError.
var ErrBadSite = errors.New("bad patch site")

// A SiteError places a bad site, in an object or a linked file, for
// discovery and patching alike: in an object, its section and offset
// there; in a linked file, its address; and, when known, the function.
type SiteError struct {
	Section string // the section holding the site, in an object; "" in a linked file
	Off     uint64 // the site's offset in Section, or (Section "") its address
	Func    string
	Msg     string
	Err     error // the cause, when another error is one: shown after Msg
}

func (e *SiteError) Error() string {
	msg := e.Msg
	if e.Err != nil {
		if msg != "" {
			msg += ": "
		}
		msg += e.Err.Error()
	}
	switch {
	case e.Section == "" && e.Func != "":
		return fmt.Sprintf("site 0x%x in %s: %s", e.Off, e.Func, msg)
	case e.Section == "":
		return fmt.Sprintf("site 0x%x: %s", e.Off, msg)
	case e.Func != "":
		return fmt.Sprintf("section %q+0x%x (in %s): %s", e.Section, e.Off, e.Func, msg)
	}
	return fmt.Sprintf("section %q+0x%x: %s", e.Section, e.Off, msg)
}

// Is makes errors.Is(err, ErrBadSite) true.
func (e *SiteError) Is(target error) bool { return target == ErrBadSite }

// Unwrap returns the cause, so errors.Is and errors.As see through to it.
func (e *SiteError) Unwrap() error { return e.Err }

// x86Nops reports how b's first n bytes decode: as exactly one NOP, as
// several whole NOPs, or not as NOPs ending at n.
func x86Nops(b []byte, n int) (State, error) {
	count, err := x86.CountNops(b, n)
	switch {
	case err != nil:
		return StateUnknown, err
	case count == 1:
		return StateNop, nil
	}
	return StateNops, nil
}
