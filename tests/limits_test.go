package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"ftpatch/trace"
)

// traceBytes is what progs/exits.c many records under either tracer:
// 300,002 calls (main, work, 100,000 of twice, 200,000 of leaf) of 24
// bytes each (function: one record; function_graph: an entry of 16 and
// an exit of 8).
const traceBytes = 300_002 * 24

// streamBytes sums the records in the streams of the trace in dir (their
// 16-byte headers left out), checking each is a stream.
func streamBytes(t *testing.T, dir string) int64 {
	t.Helper()
	streams, _ := filepath.Glob(filepath.Join(dir, "*.trace"))
	var n int64
	for _, s := range streams {
		fi, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() < 16 {
			t.Errorf("%s: %d bytes: not even a stream's header", s, fi.Size())
		}
		n += fi.Size() - 16
	}
	return n
}

// TestFileSizeLimit: under RLIMIT_FSIZE (ulimit -f 200: 204,800 bytes) a
// traced program that records more than that is neither killed by
// SIGXFSZ nor changed: its output and exit status are the untraced
// one's under the same limit. Its stream stops short of the limit with
// whole records; what it could not write is counted in lost_bytes, to the
// byte; the final metadata is written.
func TestFileSizeLimit(t *testing.T) {
	const limit = 200 * 1024
	need(t, append([]string{"prlimit"}, x86GCC.tools...)...)
	dir, prog, plain := exitsBuilds(t, x86GCC, "-O2 -pg -mfentry")
	limited := []string{"prlimit", "--fsize=" + strconv.Itoa(limit), "--"}
	wantOut, _, wantCode, err := runStatus(filepath.Dir(plain), append(limited, plain, "many")...)
	if err != nil || wantCode != 0 {
		t.Fatalf("untraced: exit %d, %v", wantCode, err)
	}
	for _, mode := range []string{"function", "function_graph"} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(dir, mode)
			got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}, append(limited, prog, "many")...)
			if err != nil || got != wantOut || code != wantCode {
				t.Fatalf("exit %d, %v, output %q; want exit %d, output %q\n%s", code, err, got, wantCode, wantOut, errOut)
			}
			tr, err := trace.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			written := streamBytes(t, out)
			if tr.Meta.Unended || written+16 > limit || written+int64(tr.Meta.LostBytes) != traceBytes || tr.Meta.LostBytes == 0 {
				t.Errorf("unended %v, %d bytes of records written (limit %d with the header), %d lost; want an ended trace, %d bytes in all",
					tr.Meta.Unended, written, limit, tr.Meta.LostBytes, traceBytes)
			}
		})
	}
}

// TestDiskFullKeepsMeta: a traced program whose trace fills its file
// system (a 64 KiB tmpfs) leaves a trace that reads, whose files are
// whole: its metadata is never replaced by one written short, and the
// final one, written into room set aside when the trace opened, is there
// with the bytes that did not fit counted; no stream lacks its header,
// no temporary file is left.
func TestDiskFullKeepsMeta(t *testing.T) {
	need(t, x86GCC.tools...)
	dir, prog, plain := exitsBuilds(t, x86GCC, "-O2 -pg -mfentry")
	wantOut, _, wantCode, err := runStatus(filepath.Dir(plain), plain, "many")
	if err != nil || wantCode != 0 {
		t.Fatalf("untraced: exit %d, %v", wantCode, err)
	}
	for _, mode := range []string{"function", "function_graph"} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(smallFS(t, "64k"), "t")
			got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}, prog, "many")
			if err != nil || got != wantOut || code != wantCode {
				t.Fatalf("exit %d, %v, output %q; want exit %d, output %q\n%s", code, err, got, wantCode, wantOut, errOut)
			}
			tr, err := trace.Read(out)
			if err != nil {
				t.Fatalf("the trace does not read: %v", err)
			}
			written := streamBytes(t, out)
			if written == 0 || written >= traceBytes {
				t.Errorf("%d bytes of records written in 64 KiB; want some, not all %d", written, traceBytes)
			}
			// The end's metadata, in the room set aside when the trace
			// opened, counts what did not fit.
			if tr.Meta.Unended || tr.Meta.LostBytes == 0 || written+int64(tr.Meta.LostBytes) != traceBytes {
				t.Errorf("metadata: unended %v, %d bytes lost; want the end's, with %d + lost = %d", tr.Meta.Unended, tr.Meta.LostBytes, written, traceBytes)
			}
			for _, pat := range []string{"*.tmp", "meta.end"} {
				if tmps, _ := filepath.Glob(filepath.Join(out, pat)); len(tmps) != 0 {
					t.Errorf("temporary files left: %v", tmps)
				}
			}
		})
	}
}
