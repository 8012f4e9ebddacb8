package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"ftpatch/trace"
)

// manyCalls is the calls progs/exits.c many makes: main, work, 100,000
// of twice, 200,000 of leaf.
const manyCalls = 300_002

// callBytes is the least its records take under either tracer: 16 bytes
// a call (function: a CALL; function_graph: an ENTRY and an EXIT of 8
// each) where the time since the record before fits the short record,
// as it does within a loop of calls; more where it does not (a flush's
// write, a preemption in between), which the runtime counts with the
// rest (recorded_bytes). Never as much as 24 bytes a call, the size of
// the format before.
const callBytes = manyCalls * 16

// recordedBytes checks the metadata's count of the bytes of records the
// runtime flushed, which a run of progs/exits.c many makes, and returns
// it.
func recordedBytes(t *testing.T, tr *trace.Trace) int64 {
	t.Helper()
	n := int64(tr.Meta.RecordedBytes)
	if n < callBytes || n >= manyCalls*24 {
		t.Errorf("%d bytes of records recorded for %d calls; want at least %d, less than 24 a call", n, manyCalls, callBytes)
	}
	return n
}

// TestBytesPerCall: under either tracer, a program making many calls in
// a loop (progs/exits.c many) writes 16 bytes of trace a call, and the
// trace reads every call, each within the run. Beyond that only what a
// trace has once (its metadata, a stream's header and first TIME: under
// 1 KiB) and the few longer records where the time since the one before
// does not fit a short one (after a flush's write, a preemption: 8 bytes
// more each), all told at most overhead: 0.05 bytes a call here.
func TestBytesPerCall(t *testing.T) {
	t.Parallel()
	const overhead = 16 << 10
	exitsTraced(t, "many", func(t *testing.T, out string) {
		size := dirSize(t, out)
		if size > callBytes+overhead {
			t.Errorf("%d bytes of trace for %d calls: %.3f a call; want 16 a call and at most %d bytes more", size, manyCalls, float64(size)/manyCalls, overhead)
		}
		tr, err := trace.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		checkClock(t, tr)
		counts, _ := reportCounts(t, out)
		if n := counts["main"] + counts["work"] + counts["twice"] + counts["leaf"]; n != manyCalls {
			t.Errorf("report: %d calls (%v), want %d", n, counts, manyCalls)
		}
	})
}

// exitsTraced builds progs/exits.c traced (gcc -O2 -pg -mfentry) and
// untraced, runs it with the argument how untraced (it must exit 0) and
// under each tracer, into a trace directory each, checking that the
// output and exit status are the untraced run's, and then check on each
// trace, in a subtest named for the tracer.
func exitsTraced(t *testing.T, how string, check func(t *testing.T, out string)) {
	t.Helper()
	need(t, x86GCC.tools...)
	dir, prog, plain, _ := exitsBuilds(t, x86GCC, "-O2 -pg -mfentry", linkedMode)
	wantOut, _, wantCode, err := runStatus(filepath.Dir(plain), plain, how)
	if err != nil || wantCode != 0 {
		t.Fatalf("untraced: exit %d, %v", wantCode, err)
	}
	for _, mode := range []string{"function", "function_graph"} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(dir, mode)
			got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}, prog, how)
			if err != nil || got != wantOut || code != wantCode {
				t.Fatalf("exit %d, %v, output %q; want exit %d, output %q\n%s", code, err, got, wantCode, wantOut, errOut)
			}
			check(t, out)
		})
	}
}

// streamBytes sums the records in the streams of the trace in dir (their
// 16-byte headers left out), checking each is a stream.
func streamBytes(t *testing.T, dir string) int64 {
	t.Helper()
	streams, _ := filepath.Glob(filepath.Join(dir, "*.trace"))
	inside, _ := filepath.Glob(filepath.Join(dir, "*@*", "*.trace")) // a session's images'
	streams = append(streams, inside...)
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
	t.Parallel()
	const limit = 200 * 1024
	need(t, append([]string{"prlimit"}, x86GCC.tools...)...)
	dir, prog, plain, _ := exitsBuilds(t, x86GCC, "-O2 -pg -mfentry", linkedMode)
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
			written, recorded := streamBytes(t, out), recordedBytes(t, tr)
			if tr.Meta.Unended || written+16 > limit || written+int64(tr.Meta.LostBytes) != recorded || tr.Meta.LostBytes == 0 {
				t.Errorf("unended %v, %d bytes of records written (limit %d with the header), %d lost; want an ended trace, %d bytes in all",
					tr.Meta.Unended, written, limit, tr.Meta.LostBytes, recorded)
			}
		})
	}
}

// TestStreamAfterLoss: a thread whose buffer's flushes found no room
// for its stream (its file size limit below a stream's header: the
// records counted lost), and whose limit is raised again, has its stream
// made at a later flush, which decodes from its own start: every
// record's time within the run, the calls made after the loss there, and
// what was lost counted to the byte.
func TestStreamAfterLoss(t *testing.T) {
	t.Parallel()
	exitsTraced(t, "regain", func(t *testing.T, out string) {
		tr, _ := eventsByThread(t, out) // checks the clock
		written, recorded := streamBytes(t, out), int64(tr.Meta.RecordedBytes)
		if tr.Meta.LostBytes == 0 || written == 0 || written+int64(tr.Meta.LostBytes) != recorded {
			t.Errorf("%d bytes of records written, %d lost, %d recorded; want some of each, written + lost = recorded", written, tr.Meta.LostBytes, recorded)
		}
		if counts, _ := reportCounts(t, out); counts["twice"] < 10 || counts["leaf"] < 20 {
			t.Errorf("report: %v; want the calls made after the limit was raised, at least", counts)
		}
	})
}

// TestDiskFullKeepsMeta: a traced program whose trace fills its file
// system (a 64 KiB tmpfs) leaves a trace that reads, whose files are
// whole: its metadata is never replaced by one written short, and the
// final one, written into room set aside when the trace opened, is there
// with the bytes that did not fit counted; no stream lacks its header,
// no temporary file is left.
func TestDiskFullKeepsMeta(t *testing.T) {
	t.Parallel()
	need(t, x86GCC.tools...)
	dir, prog, plain, _ := exitsBuilds(t, x86GCC, "-O2 -pg -mfentry", linkedMode)
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
			written, recorded := streamBytes(t, out), recordedBytes(t, tr)
			if written == 0 || written >= recorded {
				t.Errorf("%d bytes of records written in 64 KiB; want some, not all %d", written, recorded)
			}
			// The end's metadata, in the room set aside when the trace
			// opened, counts what did not fit.
			if tr.Meta.Unended || tr.Meta.LostBytes == 0 || written+int64(tr.Meta.LostBytes) != recorded {
				t.Errorf("metadata: unended %v, %d bytes lost; want the end's, with %d + lost = %d", tr.Meta.Unended, tr.Meta.LostBytes, written, recorded)
			}
			for _, pat := range []string{"*.tmp", "meta.end"} {
				if tmps, _ := filepath.Glob(filepath.Join(out, pat)); len(tmps) != 0 {
					t.Errorf("temporary files left: %v", tmps)
				}
			}
		})
	}
}
