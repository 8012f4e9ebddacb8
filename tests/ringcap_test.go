package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRingCap: FTRACE_BUFFER=ring:SIZE asking for more than a thread's
// ring holds (96 GiB) gets that much, and is told so: one line on the
// program's stderr, and ftpatch info names the size asked beside the one
// granted. A SIZE a ring holds (rounded up to a 1.5 MiB segment, or
// exactly the largest) is said nowhere.
func TestRingCap(t *testing.T) {
	t.Parallel()
	tg, dir := gccTest(t)
	prog := traced(t, tg, dir, "-O2 -pg -mfentry", true, "spin.c")
	const segment, max = 3 << 19, 96 << 30 // 1.5 MiB; 65,536 of them
	for _, c := range []struct {
		size        string
		asked, ring uint64
		cut         bool
	}{
		{"1024g", 1 << 40, max, true},
		{"200000000000", 200000000000, max, true},
		{"96g", max, max, false},
		{"64m", 64 << 20, 43 * segment, false},
		{"1000", 1000, segment, false},
	} {
		t.Run(c.size, func(t *testing.T) {
			t.Parallel()
			data := filepath.Join(dir, "ring-"+c.size)
			_, stderr := run(t, dir, "env", "FTRACE=function_graph", "FTRACE_BUFFER=ring:"+c.size, "FTRACE_OUT="+data, prog, "10", "3")
			warning := fmt.Sprintf("ftrt: FTRACE_BUFFER asks for a ring of %d bytes a thread, more than one holds: each thread keeps its last 96 GiB of records\n", c.asked)
			if c.cut && stderr != warning || !c.cut && stderr != "" {
				t.Errorf("the program's stderr:\n%s\nwant %q", stderr, map[bool]string{true: warning}[c.cut])
			}
			info, _ := run(t, dir, tool("ftpatch"), "info", data)
			cut := ""
			if c.cut {
				cut = fmt.Sprintf(` \(FTRACE_BUFFER asked for %d: more than a ring holds\)`, c.asked)
			}
			want := fmt.Sprintf(`(?m)^buffer: +the flight recorder: each thread's last %d bytes%s of records kept in memory`, c.ring, cut)
			if !regexp.MustCompile(want).MatchString(info) {
				line := ""
				for _, l := range strings.Split(info, "\n") {
					if strings.HasPrefix(l, "buffer:") {
						line = l
					}
				}
				t.Errorf("info's buffer line:\n%s\nwant it to match %s", line, want)
			}
		})
	}
}
