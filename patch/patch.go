// Package patch is ftpatch's post-link patcher: it turns the patch sites
// of a linked executable or shared object into what the user asked for
// (calls into the runtime for the chosen functions, NOPs for the others),
// records that in the runtime's config record (section .ftrt_config), and
// checks a file so patched.
//
// The pipeline, each stage a separate step:
//
//	Load    elfx.File -> Binary: the sites (sites.FindLinked), what each
//	        holds now, the runtime's config record and trampolines.
//	Plan    Binary + Request -> Plan: which sites get which bytes, and
//	        the new config record. Only reads.
//	Apply   Plan -> the new file image, every write verify-then-modify
//	        (nops.Modify); a site holding anything unexpected is an error,
//	        never overwritten.
//	Commit  the image -> the file (package outfile), atomically (temp,
//	        fsync, rename), after checking the input did not change since
//	        it was read; nothing is written when the image equals the
//	        input.
//	Verify  Binary -> problems: every site is what the record says, the
//	        text outside the sites is what ftpatch saw, the runtime is
//	        linked.
//
// The runtime (runtime/src/patch/patch.c) reads the record at start: a file it
// says is patched is only checked, never written, so a pre-patched
// program has no writable code page at any time.
package patch

import (
	"errors"
	"fmt"
	"ftpatch/sites"

	"ftpatch/runtime/abi"
)

// Errors callers branch on; each is wrapped with the file's path and the
// detail.
var (
	// ErrNoRuntime: the file does not link the ftpatch runtime (no
	// .ftrt_config section, or no ftrt_init), or links one too old to
	// have a config record.
	ErrNoRuntime = errors.New("the ftpatch runtime is not linked")
	// ErrStripped: the file has no symbol table, which names the
	// functions a list chooses and the runtime's trampolines. The same
	// error as sites', which refuses such a file for the same reason.
	ErrStripped = sites.ErrStripped
	// ErrArch: the runtime has no port to the file's architecture, so
	// there is nothing for an enabled site to call.
	ErrArch = errors.New("post-link patching is not available for this architecture")
	// ErrNoMatch: the list chooses no function that has a site.
	ErrNoMatch = errors.New("the list chooses no function")
	// ErrSite: a site holds bytes that are neither the compiler's nor
	// ftpatch's: it is reported, never overwritten. The same error as
	// sites', returned as its *SiteError.
	ErrSite = sites.ErrBadSite
	// ErrConfig: the config record is malformed or of another version.
	ErrConfig = errors.New("bad .ftrt_config record")
	// ErrTraceDir: a trace location (Request.TraceDir) that cannot be
	// recorded: not absolute, not clean, too long, or given for a shared
	// object, whose trace goes where its program's does.
	ErrTraceDir = errors.New("bad trace location")
)

// A SiteError is a site whose bytes ftpatch will not touch, placed by its
// address (Section ""): sites' error type, which matches ErrSite.
type SiteError = sites.SiteError

// A Tracer is what the enabled sites of a patched file feed: the
// runtime's FTRT_* values, stored in the config record.
type Tracer uint32

// The tracers. TracerNone is "nothing baked in".
const (
	TracerNone     Tracer = 0
	TracerFunction Tracer = abi.TracerFunction // every call recorded
	TracerGraph    Tracer = abi.TracerGraph    // calls and returns, with durations
	TracerNop      Tracer = abi.TracerNop      // sites call an empty stub: the cost of the mechanism alone
)

var tracerNames = [...]string{TracerNone: "none", TracerFunction: abi.TracerFunctionName, TracerGraph: abi.TracerGraphName, TracerNop: abi.TracerNopName}

func (t Tracer) String() string {
	if int(t) < len(tracerNames) {
		return tracerNames[t]
	}
	return fmt.Sprintf("tracer(%d)", uint32(t))
}

// ParseTracer reads a tracer's name as FTRACE spells it: function,
// function_graph or nop.
func ParseTracer(s string) (Tracer, error) {
	for t, n := range tracerNames {
		if n == s && Tracer(t) != TracerNone {
			return Tracer(t), nil
		}
	}
	return 0, fmt.Errorf("unknown tracer %q: want function, function_graph or nop", s)
}
