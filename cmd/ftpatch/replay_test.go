package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/pty"
)

// byteCount counts the bytes written to it.
type byteCount int

func (c *byteCount) Write(p []byte) (int, error) {
	*c += byteCount(len(p))
	return len(p), nil
}

// traceCmd runs replay or report in-process, its standard output going
// to stdout, and returns its standard error.
func traceCmd(stdout io.Writer, args ...string) (string, error) {
	var errOut bytes.Buffer
	root := newRoot(stdout, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	return errOut.String(), err
}

// craftTrace writes a trace directory: meta (after a head naming a
// program built here, whose symbols name none of the crafted addresses,
// so they show bare) and the streams given as words (of format 3) after
// their header.
func craftTrace(t *testing.T, tracer, metaTail string, streams map[string][]uint64) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is not installed: apt-get install gcc")
	}
	src, exe := filepath.Join(t.TempDir(), "p.c"), filepath.Join(t.TempDir(), "p")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "ftrace.data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf("format ftrt-trace 3\nclock tsc\ntracer %s\nexe %s\nended 1\npid 7\nbias 0\n"+
		"tsc_start 100\ntsc_end 1000000\nmono_start_ns 1000\nmono_end_ns 1001000\n%s", tracer, exe, metaTail)
	if err := os.WriteFile(filepath.Join(dir, "meta"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for name, words := range streams {
		var tid uint32
		fmt.Sscanf(name, "7-%d.trace", &tid)
		b := append([]byte("ftrtrec3"), le.AppendUint32(le.AppendUint32(nil, 7), tid)...)
		for _, w := range words {
			b = le.AppendUint64(b, w)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReplayIncomplete: replay and report of a trace a full disk left
// incomplete (an empty stream, one cut in a record) whose runtime
// counted events it lost read what there is, exit 0, and say on stderr
// once each, naming the directory, what was lost; empty metadata is an
// error saying so, not a version mismatch.
func TestReplayIncomplete(t *testing.T) {
	calls := []uint64{
		3<<62 | 1<<58, 200, // TIME: the clock at 200
		0x10, 0x20, // a call of 0x10 from 0x20, at 200
		100<<47 | 0x10, 0x20, // another, at 300
	}
	dir := craftTrace(t, "function", "dropped 2\nlost_bytes 48\nlost_threads 1\n", map[string][]uint64{
		"7-1.trace": calls,
		"7-3.trace": calls[:5], // cut in its second call
	})
	if err := os.WriteFile(filepath.Join(dir, "7-2.trace"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"replay", "report"} {
		var out bytes.Buffer
		errOut, err := traceCmd(&out, cmd, dir)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, errOut)
		}
		if !strings.Contains(out.String(), "# 3 calls in 2 threads") {
			t.Errorf("%s: output\n%s\nwant the 3 whole calls of two streams", cmd, out.String())
		}
		for _, w := range []string{
			"incomplete trace: 7-2.trace empty or shorter than a stream's header",
			"incomplete trace: 7-3.trace cut short",
			"events lost: 2 calls dropped",
			"events lost: 48 bytes of records could not be written",
			"events lost: 1 thread's records were not written",
		} {
			if n := strings.Count(errOut, "ftpatch: warning: "+dir+": "+w); n != 1 {
				t.Errorf("%s: %d warnings %q naming %s in stderr:\n%s", cmd, n, w, dir, errOut)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "meta"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := traceCmd(io.Discard, "replay", dir)
	if err == nil || !strings.Contains(err.Error(), dir+"/meta: incomplete trace: the metadata is empty: the disk was full") || strings.Contains(err.Error(), "another version") {
		t.Errorf("replay of an empty meta: %v", err)
	}
}

// TestReplayDeep: a crafted trace of 30,000 nested entries (240 KB)
// replays to output linear in it, and reports.
func TestReplayDeep(t *testing.T) {
	const depth = 30000
	words := []uint64{3<<62 | 1<<58, 200} // TIME: the clock at 200
	for range depth {
		words = append(words, 1<<62|1<<47|0x10) // an entry of the site 0x10, a tick after the record before
	}
	dir := craftTrace(t, "function_graph", "", map[string][]uint64{"7-1.trace": words})
	var n byteCount
	errOut, err := traceCmd(&n, "replay", dir)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, errOut)
	}
	// Two lines a call of at most about 300 bytes; indenting each call
	// one more level would take 1.8 GB. (What the lines hold is the trace
	// package's test.)
	if n > 2*depth*300 {
		t.Errorf("replay wrote %d bytes for %d nested calls, want at most %d", n, depth, 2*depth*300)
	}
	var out bytes.Buffer
	errOut, err = traceCmd(&out, "report", dir)
	if err != nil || !strings.Contains(out.String(), fmt.Sprintf("%d  0x10", depth)) {
		t.Errorf("report: %v\n%s\n%s", err, out.String(), errOut)
	}
}

// TestProgressBar: a read that goes on past progressAfter draws a
// progress bar on stderr when stderr is a terminal, and clears it before
// the command ends; on a pipe it draws nothing.
func TestProgressBar(t *testing.T) {
	defer func(d time.Duration) { progressAfter = d }(progressAfter)
	progressAfter = 0
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(master)
		got <- string(b)
	}()
	root := newRoot(io.Discard, slave)
	root.SetArgs([]string{"report", "--exe", demoExe, demoGraph})
	err = root.Execute()
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	drawn := <-got
	if !strings.Contains(drawn, "\r[") || !strings.Contains(drawn, "] 0/1") {
		t.Errorf("report on a terminal drew no progress bar: %q", drawn)
	}
	if !strings.HasSuffix(drawn, "\r") {
		t.Errorf("the bar was not cleared at the end: %q", drawn)
	}
	if errOut, err := traceCmd(io.Discard, "report", "--exe", demoExe, demoGraph); err != nil || errOut != "" {
		t.Errorf("report with stderr not a terminal: %v, drew %q", err, errOut)
	}
}

// TestWarnedOnce: a flight-recorder trace whose ring wrapped is warned
// of once by every command that reads it, naming the stream that begins
// where its ring wrapped (which only reading the stream finds); replay,
// report (and its --diff, once per trace), graph and dump on stderr,
// info in its output.
func TestWarnedOnce(t *testing.T) {
	dir := craftTrace(t, "function_graph", "buffer ring\nring_bytes 65536\noverwritten_bytes 4096\n", map[string][]uint64{
		"7-1.trace": {
			3<<62 | 5<<58 | 512, // EXT_WRAPPED: 512 words overwritten before what follows
			3<<62 | 1<<58, 200,  // TIME: the clock at 200
			1<<62 | 1<<47 | 0x10, // an entry of 0x10
			2<<62 | 100,          // its exit, 100 ticks later
		},
	})
	const wrapped = "the flight recorder's ring wrapped: 4096 bytes of earlier records overwritten (rings of 65536 bytes a thread): the calls of 7-1.trace start where the ring wrapped"
	for _, c := range []struct {
		name string
		args []string
		n    int // warnings: the trace given twice to --diff is warned of twice
	}{
		{"replay", []string{"replay", dir}, 1},
		{"report", []string{"report", dir}, 1},
		{"report --diff", []string{"report", dir, "--diff", dir}, 2},
		{"graph", []string{"graph", dir}, 1},
		{"dump", []string{"dump", "--chrome", dir}, 1},
		{"info", []string{"info", dir}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			errOut, err := traceCmd(&out, c.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			said := errOut
			if c.args[0] == "info" {
				said = out.String()
			}
			if n := strings.Count(said, "warning: "+dir+": "+wrapped); n != c.n {
				t.Errorf("warned %d times that the ring wrapped, naming 7-1.trace, want %d:\n%s", n, c.n, said)
			}
			if n := strings.Count(errOut+out.String(), "the flight recorder's ring wrapped"); n != c.n {
				t.Errorf("said %d times that the ring wrapped, want %d:\nstdout:\n%s\nstderr:\n%s", n, c.n, out.String(), errOut)
			}
		})
	}
}
