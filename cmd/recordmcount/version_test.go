package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/cmddoc"
)

// TestVersion: --version prints the version and the revision, and needs
// no file argument.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	cmd := newCommand(&out, io.Discard)
	cmd.SetArgs([]string{"--version"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("recordmcount --version: %v", err)
	}
	if !strings.HasPrefix(out.String(), "recordmcount (devel)\nrevision: ") {
		t.Errorf("recordmcount --version printed\n%s", out.String())
	}
}

// TestCommandPages: recordmcount's page in docs/commands is what the
// command makes now (make docs writes it).
func TestCommandPages(t *testing.T) {
	diffs, err := cmddoc.Diff(newCommand(io.Discard, io.Discard), filepath.Join("..", "..", "docs", "commands"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("%s: run make docs", d)
	}
}
