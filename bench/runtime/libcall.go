package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"ftpatch/internal/measure"
)

// libC is a shared object built without sites: an empty function the
// programs below call through the PLT, and many more whose slots the
// load-time pass redirects (libSlots).
const libC = `int lf(int x) { return x + 1; }
`

// libMainC calls lf calls times through the PLT (-DSITE: lf is the
// program's own, with a site, for function_graph's cost at a site).
const libMainC = `#include <stdio.h>
int lf(int x);
int main(void)
{
	int s = 0;
	for (int i = 0; i < 5000000; i++)
		s += lf(i);
	printf("%d\n", s);
	return 0;
}
`

// libSlots is how many functions the slots program imports.
const libSlots = 5000

// libcallBench measures library calls (FTRACE_LIBCALL): what a call
// through a redirected GOT slot costs under each tracer, beside what
// function_graph costs at a site and what uftrace costs per library
// call, in one run; and the load-time pass's cost per redirected slot,
// for slots bound at start (-z now) and lazy ones (whose function the
// runtime looks up).
func libcallBench(work, bin string, libs []byte, runs int) error {
	for name, text := range map[string]string{"lf.c": libC, "lfmain.c": libMainC} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	var many, use strings.Builder
	use.WriteString("#include <stdio.h>\n")
	for i := 0; i < libSlots; i++ {
		fmt.Fprintf(&many, "int g%d(void) { return %d; }\n", i, i)
		fmt.Fprintf(&use, "int g%d(void);\n", i)
	}
	use.WriteString("int (*volatile pick)(void);\nint main(int argc, char **argv)\n{\n\t(void)argv;\n\tif (argc > 5) {\n")
	for i := 0; i < libSlots; i++ {
		fmt.Fprintf(&use, "\t\tpick = g%d; pick();\n\t\tg%d();\n", i, i)
	}
	use.WriteString("\t}\n\treturn 0;\n}\n")
	if err := os.WriteFile(filepath.Join(work, "gmany.c"), []byte(many.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "guse.c"), []byte(use.String()), 0o644); err != nil {
		return err
	}
	rpath := "-Wl,-rpath," + work
	lib := strings.Fields(string(libs))
	steps := [][]string{
		{"gcc", "-O2", "-fPIC", "-shared", "lf.c", "-o", "liblf.so"},
		{"gcc", "-O2", "-pg", "-mfentry", "-c", "lfmain.c", "-o", "lfmain.o"},
		{filepath.Join(bin, "recordmcount"), "lfmain.o"},
		append([]string{"gcc", "lfmain.o", "-o", "lfcall", "-L.", "-llf", rpath}, lib...),
		{"gcc", "-O2", "-pg", "-mfentry", "-c", "lf.c", "-o", "lfsite.o"},
		{filepath.Join(bin, "recordmcount"), "lfsite.o"},
		append([]string{"gcc", "lfmain.o", "lfsite.o", "-o", "lfsite"}, lib...),
		{"gcc", "-O2", "-pg", "lfmain.c", "-o", "lfupg", "-L.", "-llf", rpath},
		{"gcc", "-O2", "-fPIC", "-shared", "gmany.c", "-o", "libgmany.so"},
		{"gcc", "-O2", "-pg", "-mfentry", "-c", "guse.c", "-o", "guse.o"},
		{filepath.Join(bin, "recordmcount"), "guse.o"},
		append([]string{"gcc", "guse.o", "-o", "glazy", "-L.", "-lgmany", rpath}, lib...),
		append([]string{"gcc", "guse.o", "-o", "gnow", "-L.", "-lgmany", rpath, "-Wl,-z,now,-z,relro"}, lib...),
	}
	if err := measure.Steps(work, steps...); err != nil {
		return err
	}
	abs := func(p string) string { return filepath.Join(work, p) }
	graph := func(out string) []string {
		return []string{"FTRACE=function_graph", "FTRACE_FILTER=lf", "FTRACE_OUT=" + abs(out)}
	}
	cases := []*benchCase{
		{name: "library call, untraced", argv: []string{abs("lfcall")}},
		{name: "library call, function", argv: []string{abs("lfcall")}, env: []string{"FTRACE=function", "FTRACE_FILTER=lf", "FTRACE_LIBCALL=1", "FTRACE_OUT=" + abs("t-lf")}, outDir: abs("t-lf")},
		{name: "library call, function_graph", argv: []string{abs("lfcall")}, env: append(graph("t-lg"), "FTRACE_LIBCALL=1"), outDir: abs("t-lg")},
		{name: "site call, untraced", argv: []string{abs("lfsite")}},
		{name: "site call, function_graph", argv: []string{abs("lfsite")}, env: graph("t-sg"), outDir: abs("t-sg")},
	}
	u := &benchCase{name: "library call, uftrace record", argv: []string{"uftrace", "record", "-d", abs("t-ulf"), abs("lfupg")}, outDir: abs("t-ulf")}
	if _, err := exec.LookPath("uftrace"); err != nil {
		u.skipped = "uftrace not installed (scripts/deps.sh bench)"
	}
	cases = append(cases, u)
	if err := interleave(cases, runs); err != nil {
		return err
	}
	const n = 5_000_000
	per := func(c, base *benchCase) float64 {
		return float64(measure.Median(c.walls)-measure.Median(base.walls)) / n
	}
	fmt.Printf("\nlibrary calls: %d calls of an empty function in a shared object without sites, through the PLT; median of %d runs each, cases interleaved\n\n", n, runs)
	fmt.Printf("%-34s %10s %10s %10s\n", "case", "median", "ns/call", "max RSS")
	for i, c := range cases {
		if c.skipped != "" {
			fmt.Printf("%-34s %s\n", c.name, c.skipped)
			continue
		}
		base := cases[0]
		if i >= 3 && i <= 4 {
			base = cases[3]
		}
		fmt.Printf("%-34s %8.1fms %10.2f %8d KB\n", c.name, float64(measure.Median(c.walls).Microseconds())/1000, per(c, base), c.rss)
	}
	lg, sg := per(cases[2], cases[0]), per(cases[4], cases[3])
	verdict := "met"
	if lg > sg+5 {
		verdict = "MISSED"
	}
	fmt.Printf("\ntarget: a library call under function_graph at most a site's cost + 5 ns: %.2f ns/call against a site's %.2f (%+.2f): %s\n", lg, sg, lg-sg, verdict)
	if u.skipped == "" {
		fmt.Printf("uftrace record per library call: %.2f ns/call; ftpatch function_graph is %.1fx faster\n", per(u, cases[0]), per(u, cases[0])/lg)
	}

	// The pass: its time per slot, from FTRACE_DEBUG's line.
	re := regexp.MustCompile(`ftrt: (\d+) library-call slots in the program: (\d+) redirected, \d+ not found, \d+ failed, in (\d+) ns`)
	for _, p := range []struct{ prog, what string }{{"gnow", "bound at start (-z now, RELRO)"}, {"glazy", "lazy (looked up by the runtime)"}} {
		var ns []float64
		hooked := 0
		for i := 0; i < runs; i++ {
			out := abs("t-" + p.prog)
			os.RemoveAll(out)
			os.RemoveAll(out + ".old")
			cmd := exec.Command(abs(p.prog))
			cmd.Env = append(os.Environ(), "FTRACE=function", "FTRACE_LIBCALL=1", "FTRACE_DEBUG=1", "FTRACE_OUT="+out)
			b, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s: %w\n%s", p.prog, err, b)
			}
			m := re.FindSubmatch(b)
			if m == nil {
				return fmt.Errorf("%s: no library-call line in %q", p.prog, b)
			}
			hooked, _ = strconv.Atoi(string(m[2]))
			t, _ := strconv.ParseFloat(string(m[3]), 64)
			ns = append(ns, t/float64(hooked))
		}
		slices.Sort(ns)
		verdict := "met"
		if ns[len(ns)/2] > 50 {
			verdict = "MISSED"
		}
		fmt.Printf("target: the load-time pass, %d slots %s, at most 50 ns a slot: %.1f ns/slot (median of %d): %s\n", hooked, p.what, ns[len(ns)/2], runs, verdict)
	}
	return nil
}
