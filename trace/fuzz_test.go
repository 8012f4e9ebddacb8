package trace_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/fuzzing"
	"ftpatch/model"
	"ftpatch/symbols"
	"ftpatch/trace"
	"ftpatch/views"
)

// FuzzRead writes arbitrary bytes as a trace directory's metadata and one
// stream, reads it, and, when it reads, names it (the modules it lists
// mapped over their times) and writes every view of it. Nothing may
// panic or hang; an error names a file of the directory; a trace read
// holds what the files held (no more records than their words, streams
// in order, modules the right way round, warnings naming the directory)
// and its views stay linear in its size, as does the work of those that
// read its streams as they go (a stream is read a few times at most,
// however many contexts its thread ran).
//
// Seeded from the real traces under testdata/traces (rebuilt by `make -C
// trace/testdata`) and from crafted ones: cut, empty, with modules and
// losses, records of every kind in every form, and of format 2. Crashers
// found are kept under testdata/fuzz/FuzzRead.
//
//	go test -run '^$' -fuzz '^FuzzRead$' -fuzztime 5m -fuzzminimizetime 5s ./trace
func FuzzRead(f *testing.F) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "traces", "*"))
	if err != nil || len(dirs) == 0 {
		f.Fatalf("no seed traces under testdata/traces (%v): make -C trace/testdata", err)
	}
	for _, dir := range dirs {
		meta := readSeed(f, filepath.Join(dir, "meta"))
		streams, err := filepath.Glob(filepath.Join(dir, "*.trace"))
		if err != nil || len(streams) == 0 {
			f.Fatalf("%s: no streams (%v)", dir, err)
		}
		for _, p := range streams {
			b := readSeed(f, p)
			f.Add(meta, b)
			f.Add(meta[:len(meta)/2], b[:len(b)-3])
		}
	}
	whole := trace.StreamBytes(1, 200, 300)
	withModules := trace.GoodMeta + "module 4096 4096 8192 150 250 2 2 none - a.so\nmodule 4096 4096 8192 300 0 2 2 none ab12 b.so\nmodule 0 0 1 0 1 0 0 none - c.so\n"
	graphMeta := strings.Replace(trace.GoodMeta, "tracer function", "tracer function_graph", 1)
	meta2 := strings.Replace(graphMeta, "format ftrt-trace 3", "format ftrt-trace 2", 1)
	for _, c := range []struct{ meta, stream string }{
		{trace.GoodMeta, string(whole)},
		{withModules, string(whole)},
		{graphMeta, string(trace.Stream3(7, 1, trace.EntryRec(200, 0x1000), trace.ExitRec(300)))},
		{graphMeta, string(trace.Stream3(7, 1, trace.EveryKind...))},
		{meta2, "ftrtrec2\x07\x00\x00\x00\x01\x00\x00\x00" +
			"\xc8\x00\x00\x00\x00\x00\x00\x40" + "\x00\x10\x00\x00\x00\x00\x00\x00" + // format 2: an entry at 200 of 0x1000
			"\x2c\x01\x00\x00\x00\x00\x00\x80"}, // its exit at 300
		{strings.Replace(trace.GoodMeta, "ended 1", "ended 0", 1) + "dropped 3\nlost_bytes 8\nlost_threads 1\noverflow 2\nstopped 1\n", string(whole[:len(whole)-2])},
		{"", ""},
		{trace.GoodMeta, "ftrtre"},
	} {
		f.Add([]byte(c.meta), []byte(c.stream))
	}
	// Threads that ran many contexts (makecontext): read once, not once
	// per context.
	for _, n := range []int{3, 40, 400} {
		meta, stream := trace.ContextSeed(n)
		f.Add([]byte(meta), stream)
		f.Add([]byte(strings.Replace(meta, "contexts ", "x ", 1)), stream) // the metadata does not count them
	}
	// One directory, its files rewritten for each input: a fuzzing
	// process runs one input at a time.
	dir := filepath.Join(f.TempDir(), "ftrace.data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, meta, stream []byte) {
		defer fuzzing.FailOnPanic(t)
		if err := os.WriteFile(filepath.Join(dir, "meta"), meta, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "1-1.trace"), stream, 0o600); err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Read(dir)
		if err != nil {
			if !strings.HasPrefix(err.Error(), dir+"/") || !(errors.Is(err, trace.ErrFormat) || errors.Is(err, trace.ErrIncomplete)) {
				t.Fatalf("error %q: want ErrFormat or ErrIncomplete naming a file of %s", err, dir)
			}
			return
		}
		trace.CheckTrace(t, tr, stream)
		syms := &symbols.Table{}
		named := symbols.New([]symbols.Func{{Start: 0x100, End: 0x200, Name: "f"}})
		syms.MapModules(tr.Meta.Modules, func(md trace.Module) *symbols.Table {
			if md.Path == "a.so" {
				return named
			}
			return nil
		})
		// The views: each line stems from a record (two from an entry,
		// 16 bytes), a function or the summary.
		limit := 64*len(stream) + 4096
		var out bytes.Buffer
		if tr.Meta.Tracer == "function_graph" {
			threads := model.Graph(tr, syms)
			if err := views.WriteTrees(&out, tr, threads); err != nil {
				t.Fatal(err)
			}
			if err := views.WriteStats(&out, tr, model.Stats(model.Apply(trace.Filter{Depth: 3, Threshold: 1}, threads)), false); err != nil {
				t.Fatal(err)
			}
		} else {
			events := model.Events(tr, syms)
			if err := views.WriteEvents(&out, tr, events); err != nil {
				t.Fatal(err)
			}
			if err := views.WriteCounts(&out, tr, model.Counts(events), len(events)); err != nil {
				t.Fatal(err)
			}
		}
		if out.Len() > 2*limit {
			t.Fatalf("%d bytes of views from a stream of %d bytes", out.Len(), len(stream))
		}
		streamed(t, tr, syms, len(stream), limit)
	})
}

// streamed writes the views the commands write as they read a trace's
// streams (replay, info, graph), each reading the stream once or twice:
// their work is linear in its size, however many contexts its thread
// ran; and so are their outputs.
func streamed(t *testing.T, tr *trace.Trace, syms *symbols.Table, size, limit int) {
	t.Helper()
	for _, view := range []string{"replay", "info", "graph"} {
		if view == "graph" && tr.Meta.Tracer != "function_graph" {
			continue
		}
		before, spooled := tr.BytesRead.Load(), trace.Spooled(tr)
		var readErr error
		f := &trace.Filter{}
		in := views.Input{Meta: &tr.Meta, Threads: tr.Threads(syms, f, &readErr), Counts: tr.Counts(&readErr), Trace: tr, Names: syms, Filter: f}
		var out bytes.Buffer
		err := views.Write(&out, view, in, views.Options{})
		if err == nil {
			err = readErr
		}
		if err != nil && !strings.HasPrefix(err.Error(), tr.Dir+"/") {
			t.Fatalf("%s: error %q does not name a file of %s", view, err, tr.Dir)
		}
		if n := tr.BytesRead.Load() - before; n > 3*int64(size) {
			t.Fatalf("%s: %d bytes of streams read for %d: more than a few passes", view, n, size)
		}
		if n := trace.Spooled(tr) - spooled; n > int64(limit) {
			t.Fatalf("%s: %d bytes of contexts' records read back for a stream of %d", view, n, size)
		}
		if out.Len() > 2*limit {
			t.Fatalf("%s: %d bytes from a stream of %d bytes", view, out.Len(), size)
		}
	}
}

// readSeed reads a seed file, which must be small: the fuzzer mutates
// inputs of a few KiB at most.
func readSeed(f *testing.F, path string) []byte {
	f.Helper()
	file, err := os.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	const most = 64 << 10
	b, err := io.ReadAll(io.LimitReader(file, most+1))
	if err != nil || len(b) > most {
		f.Fatalf("%s: %d bytes, %v: a seed is at most %d bytes", path, len(b), err, most)
	}
	return b
}
