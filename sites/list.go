package sites

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteLinked prints a linked file's sites as a table (address, function,
// kind, length, state) and a closing count line.
func WriteLinked(w io.Writer, l *Linked) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tFUNCTION\tKIND\tLEN\tSTATE")
	for _, s := range l.Sites {
		fn := s.Func
		if s.FuncOff != 0 {
			fn = fmt.Sprintf("%s+0x%x", s.Func, s.FuncOff)
		}
		fmt.Fprintf(tw, "0x%x\t%s\t%s\t%d\t%s\n", s.Off, fn, s.Kind, s.Len, s.State)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d sites; skipped: %d in discarded weak functions, %d empty entries, %d duplicates\n", len(l.Sites), l.Dead, l.Zero, l.Dups)
	return err
}

// WriteLinkedJSON prints a linked file's sites as JSON.
func WriteLinkedJSON(w io.Writer, l *Linked) error {
	type site struct {
		Addr string `json:"address"`
		Site
	}
	out := struct {
		Arch  string `json:"arch"`
		Sites []site `json:"sites"`
		Dead  int    `json:"dead"`
		Zero  int    `json:"zero"`
		Dups  int    `json:"duplicates"`
	}{Arch: l.Arch.String(), Sites: []site{}, Dead: l.Dead, Zero: l.Zero, Dups: l.Dups}
	for _, s := range l.Sites {
		out.Sites = append(out.Sites, site{fmt.Sprintf("0x%x", s.Off), s})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
