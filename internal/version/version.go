// Package version says which build of ftpatch a binary is: the version
// and VCS revision it was built from, as the Makefile stamps them or as
// the Go toolchain records them.
//
// `make build` stamps the three variables below with -ldflags -X (from
// git describe and git status). A plain `go build` leaves them empty:
// the version is then the main module's as the toolchain recorded it
// ("(devel)" from a work tree), and the revision is the toolchain's
// vcs.revision and vcs.modified where it stamped them (a build in a git
// checkout with -buildvcs), else unknown.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by the Makefile (-X ftpatch/internal/version.version=...).
var (
	version  string // git describe --tags --always --dirty
	revision string // git rev-parse HEAD
	modified string // "true" when git status showed changes
)

// Info is what a binary knows of its own build.
type Info struct {
	Version  string // e.g. v0.2.0-14-g4059e24-dirty, or (devel)
	Revision string // the commit, "" when unknown
	Modified bool   // the work tree had changes (Revision is then not all of it)
	Go       string // the toolchain: go1.26.8 linux/amd64
}

// Get returns this binary's Info: the Makefile's stamps, with the
// toolchain's build information where the build recorded it.
func Get() Info {
	i := Info{Version: version, Revision: revision, Modified: modified == "true",
		Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" {
			i.Version = bi.Main.Version
		}
		var rev, mod string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				mod = s.Value
			}
		}
		if rev != "" {
			i.Revision, i.Modified = rev, mod == "true"
		}
	}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	return i
}

// String is the version line and what follows it in every program's
// --version: "NAME VERSION", the revision, and the toolchain.
func (i Info) String(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", name, i.Version)
	switch {
	case i.Revision == "":
		fmt.Fprintf(&b, "revision: unknown (built without VCS information: make build stamps it)\n")
	case i.Modified:
		fmt.Fprintf(&b, "revision: %s, with uncommitted changes\n", i.Revision)
	default:
		fmt.Fprintf(&b, "revision: %s\n", i.Revision)
	}
	fmt.Fprintf(&b, "built with: %s\n", i.Go)
	return b.String()
}
