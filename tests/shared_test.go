package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// shared holds what several tests make the same way (an object compiled
// from one source with the same flags, an untraced program's output)
// made once per test run, by whichever test asks first, in a directory
// that lasts the run. The tests that share a thing read it and never
// change it: buildSrc copies its objects, which recordmcount rewrites, and
// an untraced program is hard-linked (sharedProgram).
var shared = struct {
	mu sync.Mutex
	m  map[string]*sharedThing
}{m: map[string]*sharedThing{}}

// A sharedThing is one thing made once for every test that asks for it.
type sharedThing struct {
	once sync.Once
	v    any
	made bool   // build returned: v is good
	by   string // the test that made it (or failed to)
}

// once returns what build returns for key, calling it once per test run:
// the first test to ask runs it, in a new directory of the run's (a
// test's own temporary directory would go with that test), and the
// others wait and get the same value. key says everything the value
// depends on. build fails its test as any helper does (t.Fatal); the
// tests waiting for it then fail too, naming that test.
func once[V any](t testing.TB, key string, build func(dir string) V) V {
	t.Helper()
	shared.mu.Lock()
	s := shared.m[key]
	if s == nil {
		s = &sharedThing{}
		shared.m[key] = s
	}
	shared.mu.Unlock()
	s.once.Do(func() {
		s.by = t.Name()
		dir, err := os.MkdirTemp(toolDir, "shared-")
		if err != nil {
			t.Fatal(err)
		}
		s.v = build(dir)
		s.made = true
	})
	if !s.made {
		t.Fatalf("%s failed to make what this test shares with it (%q): see its failure", s.by, key)
	}
	return s.v.(V)
}

// sharedKey joins the parts of a key.
func sharedKey(parts ...string) string { return strings.Join(parts, "\x00") }

// sharedProgram gives a test the shared program src as dst, a hard link
// to it: a copy the test process wrote could fail to run (ETXTBSY) while
// a child another test forks at that moment still holds it open for
// writing, until that child execs (golang.org/issue/22315). The tests run
// such a program and never change it; the tools would replace a file
// they change, leaving the shared one alone.
func sharedProgram(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.Link(src, dst); err != nil {
		t.Fatal(err)
	}
}

// copyFile copies src to dst with the mode perm: a test's own copy of
// something shared, which it may change.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, perm); err != nil {
		t.Fatal(err)
	}
}

// compiled is the object that argv (a compile command without its -o)
// makes, compiled once per test run; name is the object's file name.
func compiled(t *testing.T, name string, argv []string) string {
	t.Helper()
	return once(t, sharedKey(append([]string{"compile"}, argv...)...), func(dir string) string {
		obj := filepath.Join(dir, name)
		run(t, dir, append(append([]string{}, argv...), "-o", obj)...)
		return obj
	})
}

// A ran is how a command ran: what it printed on stdout, its exit
// status, and runStatus's error.
type ran struct {
	out  string
	code int
	err  error
}

// A fakeT is a test whose failure is recorded rather than reported, for
// TestOnce to fail on purpose: its Fatal ends the goroutine, as
// testing.T's does.
type fakeT struct {
	testing.TB
	name   string
	failed string
}

func (f *fakeT) Name() string { return f.name }
func (f *fakeT) Helper()      {}
func (f *fakeT) Fatal(args ...any) {
	f.failed = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestOnce: tests asking at the same time for one key get what a single
// call of build made; another key is made apart; when build fails its
// test, the tests waiting for it fail, naming it.
func TestOnce(t *testing.T) {
	t.Parallel()
	var made atomic.Int32
	key := sharedKey("TestOnce", t.Name())
	asks := make([]*fakeT, 8)
	got := make([]string, len(asks))
	var wg sync.WaitGroup
	for i := range asks {
		asks[i] = &fakeT{TB: t, name: fmt.Sprintf("ask%d", i)}
		wg.Go(func() {
			got[i] = once(asks[i], key, func(dir string) string {
				made.Add(1)
				return dir
			})
		})
	}
	wg.Wait()
	if made.Load() != 1 {
		t.Errorf("made %d times for %d tests; want once", made.Load(), len(asks))
	}
	for i, g := range got {
		if g != got[0] || asks[i].failed != "" {
			t.Errorf("%s got %q (failed %q); want %q, as the others", asks[i].name, g, asks[i].failed, got[0])
		}
	}
	if fi, err := os.Stat(got[0]); err != nil || !fi.IsDir() {
		t.Errorf("build's directory %q: %v", got[0], err)
	}
	if other := once(t, key+"\x00other", func(dir string) string { return dir }); other == got[0] {
		t.Errorf("another key got the same directory %q", other)
	}

	bad := sharedKey("TestOnce", t.Name(), "failing")
	first, second := &fakeT{TB: t, name: "first"}, &fakeT{TB: t, name: "second"}
	for _, f := range []*fakeT{first, second} {
		wg.Go(func() {
			once(f, bad, func(string) int {
				f.Fatal("cannot make it")
				return 0
			})
		})
		wg.Wait()
	}
	if first.failed != "cannot make it" || !strings.Contains(second.failed, "first failed to make what this test shares") {
		t.Errorf("the failing test: %q; the one after it: %q", first.failed, second.failed)
	}
}

// TestSharedObjectsCopied: an object built once and shared is each
// test's own copy: recordmcount rewriting one test's leaves another's
// as the compiler made it.
func TestSharedObjectsCopied(t *testing.T) {
	t.Parallel()
	tg, a := gccTest(t)
	b := t.TempDir()
	objA := buildSrc(t, tg, a, "-pg -mfentry -DSHARED_COPY_TEST", true, "other.c")[0]
	before, err := os.ReadFile(objA)
	if err != nil {
		t.Fatal(err)
	}
	run(t, a, tool("recordmcount"), objA)
	recorded, err := os.ReadFile(objA)
	if err != nil || bytes.Equal(recorded, before) {
		t.Fatalf("recordmcount left %s as it was (%v): the test proves nothing", objA, err)
	}
	objB := buildSrc(t, tg, b, "-pg -mfentry -DSHARED_COPY_TEST", true, "other.c")[0]
	if got, err := os.ReadFile(objB); err != nil || !bytes.Equal(got, before) {
		t.Errorf("the second test's object is not the compiler's (%v): it shares the first one's file", err)
	}
}

// TestSharedProgramWhileForking: a test runs its name for a shared
// program while other tests start processes all the time, and every run
// starts (a copy written by the test process fails now and then with
// ETXTBSY).
func TestSharedProgramWhileForking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "true")
	run(t, dir, "cp", "/bin/true", src) // by another process: no file of ours open for writing
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					exec.Command("/bin/true").Run()
				}
			}
		})
	}
	for i := range 300 {
		dst := filepath.Join(dir, fmt.Sprint(i))
		sharedProgram(t, src, dst)
		if _, _, code, err := runStatus(dir, dst); err != nil || code != 0 {
			t.Fatalf("run %d of a shared program: exit %d, %v", i, code, err)
		}
	}
}
