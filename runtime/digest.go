package runtime

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"ftpatch/outfile"
)

// A runtime's files are checked against the digests recorded when they
// were built, in a file SHA256SUMS beside the archives (sha256sum's
// format: the digest, two spaces, the name relative to the file's
// directory, a line each), so that a runtime is linked only as it was
// built: neither cut short nor changed since. The header, ftrace.h, is
// also checked against the one embedded in ftpatch. A cache entry's
// SHA256SUMS lists its archives and header, an installed runtime's its
// archives (its header lies in another directory).
const (
	sumsFile = "SHA256SUMS"
	maxSums  = 4096 // bytes: SHA256SUMS is a few lines
)

// errDigest: a runtime's file is not what was built there.
var errDigest = errors.New("its SHA-256 digest is not the one recorded when it was built")

// An opener opens a runtime's regular file to read it, when it is one to
// trust (openOwned for a cache entry's), and returns its status.
type opener func(path string) (*os.File, fs.FileInfo, error)

// writeSums writes dir/SHA256SUMS, atomically: the digests of names, from
// sums.
func writeSums(dir string, names []string, sums map[string][sha256.Size]byte) error {
	var b bytes.Buffer
	for _, name := range names {
		fmt.Fprintf(&b, "%x  %s\n", sums[name], name)
	}
	return outfile.WriteFile(filepath.Join(dir, sumsFile), 0o644, b.Bytes())
}

// checkSums checks that each of names, a file under dir, has the digest
// dir/SHA256SUMS records for it, every file opened by open. The error
// wraps errDigest for a file not as built.
func checkSums(dir string, names []string, open opener) error {
	want, err := readSums(filepath.Join(dir, sumsFile), open)
	if err != nil {
		return err
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		got, err := digest(p, open)
		if err != nil {
			return err
		}
		if w, ok := want[name]; !ok {
			return fmt.Errorf("%s: no digest of %s", filepath.Join(dir, sumsFile), name)
		} else if got != w {
			return fmt.Errorf("%s: %w", p, errDigest)
		}
	}
	return nil
}

// checkHeader checks that the header at path, opened by open, is the one
// embedded in ftpatch.
func checkHeader(path string, open opener) error {
	got, err := digest(path, open)
	if err != nil {
		return err
	}
	b, _ := sources.ReadFile(headerSource)
	if got != sha256.Sum256(b) {
		return fmt.Errorf("%s: %w (not this ftpatch's %s)", path, errDigest, Header)
	}
	return nil
}

// digest is the SHA-256 digest of the file path, opened by open, as much
// of it as its size when opened.
func digest(path string, open opener) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, fi, err := open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.Copy(h, io.LimitReader(f, fi.Size())); err != nil {
		return sum, err
	} else if n != fi.Size() {
		return sum, fmt.Errorf("%s: shrank while read", path)
	}
	h.Sum(sum[:0])
	return sum, nil
}

// readSums reads a SHA256SUMS file, opened by open: a digest and a name
// a line, as sha256sum writes them.
func readSums(path string, open opener) (map[string][sha256.Size]byte, error) {
	f, fi, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > maxSums {
		return nil, fmt.Errorf("%s: %d bytes, more than a list of digests", path, fi.Size())
	}
	sums := map[string][sha256.Size]byte{}
	sc := bufio.NewScanner(io.LimitReader(f, maxSums))
	for n := 1; sc.Scan(); n++ {
		hexSum, name, ok := strings.Cut(sc.Text(), "  ")
		var sum [sha256.Size]byte
		if b, err := hex.DecodeString(hexSum); !ok || err != nil || len(b) != len(sum) {
			return nil, fmt.Errorf("%s: line %d: not a digest and a name", path, n)
		} else {
			copy(sum[:], b)
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}
