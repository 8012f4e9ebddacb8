package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name, want, got, diff string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"changed line", "a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nD\ne\nf\ng\n",
			"@@ -1,4 +1,4 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n"},
		{"added line", "a\n", "a\nb\n", "@@ -1,1 +1,2 @@\n a\n+b\n"},
		{"removed line", "a\nb\nc\n", "a\nc\n", "@@ -1,2 +1,1 @@\n a\n-b\n c\n"},
		{"missing final newline", "a\n", "a", "@@ -1,1 +1,1 @@\n-a\n+a (no newline at end)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff(tt.want, tt.got); got != tt.diff {
				t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", tt.want, tt.got, got, tt.diff)
			}
		})
	}
}

func TestDiffBounded(t *testing.T) {
	var want, got []byte
	for i := 0; i < 100; i++ {
		want = append(want, "w\n"...)
		got = append(got, "g\n"...)
	}
	d := Diff(string(want), string(got))
	if n := len(d); n > 200 {
		t.Errorf("Diff of two 100-line inputs is %d bytes, want it bounded:\n%s", n, d)
	}
}

func TestCheck(t *testing.T) {
	if Update() {
		t.Skip("-update rewrites goldens; this test checks comparing them")
	}
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Check(t, path, []byte("same\n"))

	var ft fakeT
	Check(&ft, path, []byte("other\n"))
	if !ft.failed {
		t.Error("Check passed output that differs from the golden file")
	}
	ft = fakeT{}
	Check(&ft, filepath.Join(t.TempDir(), "missing.golden"), []byte("x\n"))
	if !ft.failed {
		t.Error("Check passed with no golden file")
	}
}

// fakeT records failures instead of failing the real test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
func (f *fakeT) Fatal(...any)          { f.failed = true }
