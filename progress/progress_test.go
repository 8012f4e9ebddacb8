package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestBar(t *testing.T) {
	for _, c := range []struct {
		name    string
		updates [][2]int // done, total
		want    string   // everything written, \r shown as |
	}{
		{"below the minimum draws nothing", [][2]int{{0, 5}, {5, 5}}, ""},
		{"start and end", [][2]int{{0, 200}, {200, 200}}, "|[>         ] 0/200|[==========] 200/200"},
		{"half", [][2]int{{100, 200}}, "|[=====>    ] 100/200"},
		{"no redraw without change", [][2]int{{100, 200}, {100, 200}}, "|[=====>    ] 100/200"},
		{"clamped", [][2]int{{-3, 200}, {900, 200}}, "|[>         ] 0/200|[==========] 200/200"},
		{"a new total starts over", [][2]int{{200, 200}, {0, 300}}, "|[==========] 200/200|[>         ] 0/300"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			b := New(&buf, 10, 100)
			for _, u := range c.updates {
				b.Update(u[0], u[1])
			}
			if got := strings.ReplaceAll(buf.String(), "\r", "|"); got != c.want {
				t.Errorf("drew %q, want %q", got, c.want)
			}
		})
	}
}

func TestDone(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, 10, 0)
	b.Done()
	if buf.Len() != 0 {
		t.Errorf("Done with nothing drawn wrote %q", buf.String())
	}
	b.Update(1, 2)
	buf.Reset()
	b.Done()
	if s := buf.String(); !strings.HasPrefix(s, "\r") || !strings.HasSuffix(s, "\r") || strings.Trim(s, "\r ") != "" || len(s) < len("[==========] 2/2")+2 {
		t.Errorf("Done wrote %q, want the line blanked", s)
	}
	var nilBar *Bar
	nilBar.Update(1, 2) // a nil bar is a valid, silent one
	nilBar.Done()
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || ForTerminal(f, 0) != nil {
		t.Error("a regular file taken for a terminal")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null) {
		t.Error("/dev/null taken for a terminal")
	}
}
