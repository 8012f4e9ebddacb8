package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"ftpatch/internal/version"
	ftrt "ftpatch/runtime"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// versionText is what `ftpatch version` and `ftpatch --version` print:
// the build (version, revision, toolchain), the runtime this binary
// builds and links (its sources' version, and the config record ftpatch
// enable rewrites), and the trace formats: the one the runtime writes
// and those the trace commands read.
func versionText() string {
	return version.Get().String("ftpatch") +
		fmt.Sprintf("runtime: %s (its sources' hash), config record %s\n", ftrt.Version(), abi.ConfigMagic) +
		fmt.Sprintf("trace format: writes %s; reads %s\n", abi.MetaFormat, strings.Join(trace.Formats(), ", "))
}

func newVersion(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the revision built from, and the runtime and trace formats",
		Long: `version prints what ftpatch --version prints: the version (from git
describe, stamped by make build; "(devel)" for a plain go build), the VCS
revision it was built from (and whether the work tree had changes), the
Go toolchain, the version of the runtime it builds and links (a hash of
its sources: a program linked with another runtime is read by the
ftpatch that built it) with the config record ftpatch enable writes, and
the trace format the runtime writes and the formats replay, report and
the other trace commands read.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := io.WriteString(stdout, versionText())
			return err
		},
	}
}

// installPrefix is the prefix ftpatch runs from (/usr/local for
// /usr/local/bin/ftpatch): where make install put the runtime beside it.
// Empty when the executable cannot be found.
func installPrefix() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	return filepath.Dir(filepath.Dir(exe))
}
