package sites_test

import (
	"errors"
	"testing"

	"ftpatch/sites"
)

// TestSiteError: a SiteError reads as its place (section and offset in
// an object, the address in a linked file), then Msg, then its cause; it is ErrBadSite, and errors.Is and errors.As see through it to
// the cause, which is wrapped rather than flattened into the message.
func TestSiteError(t *testing.T) {
	cause := errors.New("found \"ret\" at +0, want NOPs")
	for _, c := range []struct {
		name string
		err  *sites.SiteError
		want string
	}{
		{"message", &sites.SiteError{Section: ".text", Off: 0x10, Func: "f", Msg: "table entry misaligned"},
			`section ".text"+0x10 (in f): table entry misaligned`},
		{"cause", &sites.SiteError{Section: ".text", Off: 0x10, Func: "f", Err: cause},
			`section ".text"+0x10 (in f): found "ret" at +0, want NOPs`},
		{"message and cause", &sites.SiteError{Section: ".text", Off: 0x10, Msg: "pre-function area", Err: cause},
			`section ".text"+0x10: pre-function area: found "ret" at +0, want NOPs`},
		{"linked", &sites.SiteError{Off: 0x401136, Func: "fib", Msg: "a call to 0x401176 (fib+0x40)"},
			`site 0x401136 in fib: a call to 0x401176 (fib+0x40)`},
		{"linked, outside every function", &sites.SiteError{Off: 0x401136, Err: cause},
			`site 0x401136: found "ret" at +0, want NOPs`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error = c.err
			if got := err.Error(); got != c.want {
				t.Errorf("Error() = %q, want %q", got, c.want)
			}
			if !errors.Is(err, sites.ErrBadSite) {
				t.Error("not errors.Is ErrBadSite")
			}
			if got := errors.Is(err, cause); got != (c.err.Err != nil) {
				t.Errorf("errors.Is(err, cause) = %v, want %v", got, c.err.Err != nil)
			}
		})
	}
}
