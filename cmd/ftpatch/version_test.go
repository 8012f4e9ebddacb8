package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/cmddoc"
	ftrt "ftpatch/runtime"
)

// TestVersion: --version and the version command print the same: the
// version and revision lines, the runtime's sources' version with the
// config record, and the trace format written and those read.
func TestVersion(t *testing.T) {
	flag, err := ftpatch("--version")
	if err != nil {
		t.Fatalf("ftpatch --version: %v\n%s", err, flag)
	}
	cmd, err := ftpatch("version")
	if err != nil || cmd != flag {
		t.Errorf("ftpatch version: %v, printed\n%s\nftpatch --version printed\n%s", err, cmd, flag)
	}
	for _, want := range []string{
		"ftpatch (devel)\n", // a test binary has no stamp
		"\nrevision: ",
		"\nbuilt with: go1.",
		"\nruntime: " + ftrt.Version() + " (its sources' hash), config record ftrtcfg1\n",
		"\ntrace format: writes ftrt-trace 4; reads ftrt-trace 4, ftrt-trace 3, ftrt-trace 2\n",
	} {
		if !strings.Contains(flag, want) {
			t.Errorf("ftpatch --version does not say %q:\n%s", want, flag)
		}
	}
}

// TestUsageHints: every wrong use names the help of the command used, by
// its whole path (a subcommand's parents included, the root's name
// once), and exits with the usage status.
func TestUsageHints(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "unknown flag: --bogus (see ftpatch --help)"},
		{[]string{"sites", "--bogus"}, "unknown flag: --bogus (see ftpatch sites --help)"},
		{[]string{"sites"}, "accepts 1 arg(s), received 0 (see ftpatch sites --help)"},
		{[]string{"runtime", "build", "--bogus"}, "unknown flag: --bogus (see ftpatch runtime build --help)"},
		{[]string{"runtime", "build", "x"}, `unknown command "x" for "ftpatch runtime build" (see ftpatch runtime build --help)`},
		{[]string{"flags", "x"}, `unknown command "x" for "ftpatch flags" (see ftpatch flags --help)`},
		{[]string{"version", "x"}, `unknown command "x" for "ftpatch version" (see ftpatch version --help)`},
		{[]string{"completion", "bash", "--bogus"}, "unknown flag: --bogus (see ftpatch completion bash --help)"},
		{[]string{"ctl", "1"}, "(see ftpatch ctl --help)"},
		{[]string{"record"}, "no program to run (see ftpatch record --help)"},
		{[]string{"live", "--tracer", "function"}, "no program to run (see ftpatch live --help)"},
		{[]string{"recrod"}, `unknown command "recrod" for "ftpatch": did you mean record? (see ftpatch --help)`},
	} {
		out, err := ftpatch(c.args...)
		if err == nil || err.Error() != c.want && !strings.HasSuffix(err.Error(), c.want) || exitCode(err) != exitUsage {
			t.Errorf("ftpatch %s: %v (exit %d), want %q (exit %d)\n%s", strings.Join(c.args, " "), err, exitCode(err), c.want, exitUsage, out)
		}
	}
}

// TestCommandPages: the pages of docs/commands are what the commands
// make now (make docs writes them).
func TestCommandPages(t *testing.T) {
	diffs, err := cmddoc.Diff(newRoot(io.Discard, io.Discard), filepath.Join("..", "..", "docs", "commands"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("%s: run make docs", d)
	}
}
