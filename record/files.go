package record

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"text/tabwriter"

	"ftpatch/outfile"
)

// Files runs File on every path, using up to workers goroutines, and
// returns the results in the order of paths. Each directory written to is
// synced once, after its last file.
//
// workers < 1 means 4 per CPU: with small objects most of the time is the
// wait for fsync, and concurrent fsyncs are committed together by the file
// system, so more files in flight than CPUs keeps the CPUs busy.
func Files(paths []string, opts Options, workers int) []Result {
	if workers < 1 {
		workers = 4 * runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(paths))
	out := make([]Result, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = file(paths[i], "", opts)
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	synced := map[string]bool{}
	for i := range out {
		if out[i].written == "" {
			continue
		}
		dir := filepath.Dir(out[i].written)
		if !synced[dir] {
			synced[dir] = true
			if err := outfile.SyncDir(dir); err != nil && out[i].Err == nil {
				out[i].Err = err
			}
		}
	}
	return out
}

// WriteList prints the sites of the results as a table: object, section,
// offset, function (+offset), kind, length, state.
func WriteList(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tSECTION\tOFFSET\tFUNCTION\tKIND\tLEN\tSTATE")
	for _, r := range results {
		if r.Err != nil || r.Object == nil {
			continue
		}
		for _, s := range r.Object.Sites {
			fn := s.Func
			if s.FuncOff != 0 {
				fn = fmt.Sprintf("%s+0x%x", s.Func, s.FuncOff)
			}
			fmt.Fprintf(tw, "%s\t%s\t0x%x\t%s\t%s\t%d\t%s\n", r.Path, s.SecName, s.Off, fn, s.Kind, s.Len, s.State.Insn())
		}
	}
	return tw.Flush()
}

// WriteJSON prints the results as a JSON array, one object per file.
func WriteJSON(w io.Writer, results []Result) error {
	type file struct {
		Object string   `json:"object"`
		Arch   string   `json:"arch,omitempty"`
		Table  string   `json:"table,omitempty"`
		Sites  any      `json:"sites"`
		Notes  []string `json:"notes,omitempty"`
		Warn   []string `json:"warnings,omitempty"`
		Error  string   `json:"error,omitempty"`
	}
	out := make([]file, 0, len(results))
	for _, r := range results {
		fl := file{Object: r.Path, Sites: []any{}}
		if r.Err != nil {
			fl.Error = r.Err.Error()
		}
		if r.Object != nil {
			fl.Arch, fl.Table, fl.Sites = r.Object.Arch.String(), r.Object.Table.String(), r.Object.Sites
			fl.Notes, fl.Warn = r.Object.Notes, r.Object.Warnings
		}
		out = append(out, fl)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
