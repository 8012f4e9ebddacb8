package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"ftpatch/internal/fixture"
	"ftpatch/internal/golden"
)

// TestSitesGolden lists the sites of every linked fixture as the user
// sees them, as text and as JSON, against the goldens beside the
// fixtures (<fixture>.sites.golden, <fixture>.sites.json.golden). An
// error (the stripped fixture's) is part of the output. Listing leaves
// the file byte-identical.
func TestSitesGolden(t *testing.T) {
	for _, o := range fixture.Linked(t, filepath.Join("..", "..")) {
		t.Run(o.Base, func(t *testing.T) {
			before, err := os.ReadFile(o.Path)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ suffix, flag string }{{".sites.golden", ""}, {".sites.json.golden", "--json"}} {
				args := []string{"sites", o.Path}
				if c.flag != "" {
					args = []string{"sites", c.flag, o.Path}
				}
				out, err := ftpatch(args...)
				if err != nil {
					out += "error: " + err.Error() + "\n"
				}
				golden.Check(t, o.Path+c.suffix, []byte(out))
			}
			after, err := os.ReadFile(o.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("%s changed while its sites were listed", o.Path)
			}
		})
	}
}
