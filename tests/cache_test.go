package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// evilC is what another user links into whoever builds with their cache
// entry: a constructor that runs before main, as the builder.
const evilC = `#include <unistd.h>
__attribute__((constructor)) static void evil(void) { write(2, "PLANTED CONSTRUCTOR RAN\n", 24); }
`

// TestCachePlanted: root builds with ftpatch cc and XDG_CACHE_HOME in a
// directory another user (nobody) can write, where nobody has laid out
// the runtime cache entry root's build would use, complete with its
// digests: its libftrt.a a linker script that adds an object of theirs
// (a constructor) to the real archive. Root's build takes none of it:
// it says so once and links a runtime of its own, built for the command
// alone and removed after; the program runs without nobody's
// constructor. The shared directory is writable by all (a shared CI
// cache), or sticky like /tmp, where nobody's directories in it are what
// gives the entry away.
func TestCachePlanted(t *testing.T) {
	t.Parallel()
	need(t, "setpriv", "gcc", "ar", "sha256sum")
	needRoot(t)
	base := traversable(t)
	// The key of the entry root's build looks for (ftpatch cc gcc builds
	// the runtime with gcc): the directory of that runtime in root's own
	// cache.
	out, _ := run(t, base, tool("ftpatch"), "flags", "--libs", "--cc", "gcc")
	fields := strings.Fields(out)
	entry := filepath.Dir(fields[len(fields)-1])
	key := filepath.Base(entry)
	// Its files, where nobody can read them.
	real := filepath.Join(base, "real")
	mkdirOwned(t, real, 0o755, 0)
	mkdirOwned(t, filepath.Join(real, "include"), 0o755, 0)
	for _, f := range []string{"libftrt.a", "libftrt-module.a", "include/ftrace.h"} {
		b, err := os.ReadFile(filepath.Join(entry, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(real, f), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(base, "src")
	mkdirOwned(t, src, 0o755, 0)
	prog := filepath.Join(src, "prog.c")
	if err := os.WriteFile(prog, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mode os.FileMode
	}{{"shared", 0o777}, {"sticky", 0o777 | os.ModeSticky}} {
		t.Run(c.name, func(t *testing.T) {
			shared := filepath.Join(base, c.name)
			mkdirOwned(t, shared, c.mode, 0)
			entry := filepath.Join(shared, "ftpatch", "runtime", key)
			// nobody lays out the entry: the real files, but libftrt.a
			// adding their object, and the digests to match.
			script := `set -e
mkdir -p "$ENTRY/include"
cp "$REAL/libftrt.a" "$ENTRY/real.a"
cp "$REAL/libftrt-module.a" "$ENTRY/"
cp "$REAL/include/ftrace.h" "$ENTRY/include/"
printf '%s' "$EVIL" > "$ENTRY/evil.c"
cc -c "$ENTRY/evil.c" -o "$ENTRY/evil.o"
echo "INPUT($ENTRY/evil.o $ENTRY/real.a)" > "$ENTRY/libftrt.a"
cd "$ENTRY" && sha256sum libftrt.a libftrt-module.a include/ftrace.h > SHA256SUMS
`
			if o, e, code := asNobody(t, shared, []string{"ENTRY=" + entry, "REAL=" + real, "EVIL=" + evilC}, "sh", "-c", script); code != 0 {
				t.Fatalf("nobody's entry: exit %d\n%s%s", code, o, e)
			}
			build := filepath.Join(base, "build-"+c.name)
			mkdirOwned(t, build, 0o755, 0)
			_, stderr, code, err := runStatusEnv(build, []string{"XDG_CACHE_HOME=" + shared},
				tool("ftpatch"), "cc", "gcc", "-O2", prog, "-o", "prog")
			if err != nil || code != 0 {
				t.Fatalf("ftpatch cc: exit %d, %v\n%s", code, err, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not using the runtime cache in "+shared) ||
				!strings.Contains(stderr, "another user could change or replace it") || !strings.Contains(stderr, "for this command alone") {
				t.Errorf("ftpatch cc said:\n%s\nwant one note: the cache is not used, and why", stderr)
			}
			_, progErr, code, err := runStatus(build, filepath.Join(build, "prog"))
			if err != nil || code != 0 || strings.Contains(progErr, "PLANTED") {
				t.Errorf("the program built: exit %d, %v, stderr:\n%s\nwant it clean of nobody's constructor", code, err, progErr)
			}
			if m := regexp.MustCompile(`built the runtime into (\S+) for this command alone`).FindStringSubmatch(stderr); m == nil {
				t.Errorf("the note does not say where the runtime was built")
			} else if _, err := os.Stat(m[1]); err == nil {
				t.Errorf("the runtime built for the command is still there: %s", m[1])
			}
		})
	}
}

// TestCacheConcurrentBuilds: two ftpatch cc at once (make -j), with an
// empty cache of root's own, both link the runtime the cache ends up
// holding, built once, with nothing said and nothing left behind.
func TestCacheConcurrentBuilds(t *testing.T) {
	t.Parallel()
	need(t, "gcc")
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	for _, p := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, p+".c"), []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, p := range []string{"a", "b"} {
		wg.Go(func() {
			_, stderr, code, err := runStatusEnv(dir, []string{"XDG_CACHE_HOME=" + cache}, tool("ftpatch"), "cc", "gcc", p+".c", "-o", p)
			if err != nil || code != 0 || stderr != "" {
				t.Errorf("ftpatch cc %s.c: exit %d, %v, stderr:\n%s", p, code, err, stderr)
			}
		})
	}
	wg.Wait()
	ents, err := os.ReadDir(filepath.Join(cache, "ftpatch", "runtime"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != ".lock" {
		t.Errorf("the cache holds %q; want the lock and one entry", names)
	}
	for _, p := range []string{"a", "b"} {
		if _, _, code, err := runStatus(dir, filepath.Join(dir, p)); err != nil || code != 0 {
			t.Errorf("%s: exit %d, %v", p, code, err)
		}
	}
}
