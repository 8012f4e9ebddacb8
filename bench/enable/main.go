// Command enable-bench measures `ftpatch enable` (`make bench`) on a
// generated executable of 200,000 functions, each with a site: wall time
// (process start to exit) and peak memory (the child's max RSS, from
// getrusage) against the file's size, for the post-link commands a build
// system runs:
//
//	enable 10%    --funcs choosing one function in ten (f1*... and more)
//	enable all    every site becomes a call
//	enable again  the same list on the enabled file: nothing to write
//	verify        every site decoded, the text hashed
//	disable       every site back to a NOP
//	sites         the site list, read from the table (__mcount_loc)
//	sites decoded the site list of a copy without the table, found by
//	              decoding every function's entry (sites.FindDecoded)
//
// Targets: under 1 s wall and under 10x the file's size in memory, for
// each. The program is generated as assembly (a C compiler takes minutes
// over 200,000 functions), in two shapes: `call __fentry__` linked
// -no-pie, and the PIE form `call *__fentry__@GOTPCREL(%rip)` that the
// linker relaxes to `addr32 call`, whose table is filled by 200,000
// RELATIVE relocations. Builds are cached in the user cache directory,
// keyed by the runtime's version; every timed run works on a fresh copy.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"ftpatch/internal/machine"
	"ftpatch/internal/measure"
	ftrt "ftpatch/runtime"
)

const (
	funcs     = 200_000
	genFormat = 1 // bump when the generated program changes
)

func main() {
	bin := flag.String("bin", "bin", "directory holding recordmcount and ftpatch")
	runs := flag.Int("runs", 7, "timed runs per case")
	flag.Parse()
	if err := run(*bin, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "enable-bench:", err)
		os.Exit(1)
	}
}

// A shape is one way of generating the program.
type shape struct {
	name string
	call string // the site instruction
	link string
	as   []string
}

var shapes = []shape{
	{"no-pie", "call __fentry__", "-no-pie", nil},
	{"pie", "call *__fentry__@GOTPCREL(%rip)", "-pie", nil},
}

// program returns the cached program of shape s, generating it first if
// needed.
func program(bin string, s shape) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "ftpatch", "bench-enable", fmt.Sprintf("v%d-%s-%s", genFormat, ftrt.Version(), s.name))
	prog := filepath.Join(dir, "prog")
	if _, err := os.Stat(prog); err == nil {
		return prog, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "generating %s (%d functions, %s)...\n", prog, funcs, s.name)
	if err := writeAsm(filepath.Join(dir, "many.s"), s.call); err != nil {
		return "", err
	}
	libs, err := exec.Command(filepath.Join(bin, "ftpatch"), "flags", "--libs").Output()
	if err != nil {
		return "", fmt.Errorf("ftpatch flags --libs: %w", err)
	}
	for _, step := range [][]string{
		{"as", "-o", "many.o", "many.s"},
		{filepath.Join(bin, "recordmcount"), "many.o"},
		append([]string{"gcc", s.link, "many.o", "-o", "prog.tmp"}, strings.Fields(string(libs))...),
		{"mv", "prog.tmp", "prog"},
	} {
		if err := measure.Sh(dir, step...); err != nil {
			return "", err
		}
	}
	os.Remove(filepath.Join(dir, "many.s"))
	os.Remove(filepath.Join(dir, "many.o"))
	return prog, nil
}

// writeAsm writes the program's assembly to path, streamed: the timed
// commands' peak RSS, as the kernel reports it, starts from this
// process's own high-water mark (they are started by vfork), so this
// process must never hold the whole program in memory.
func writeAsm(path, call string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.WriteString("\t.text\n")
	for i := 0; i < funcs; i++ {
		fmt.Fprintf(w, "\t.globl f%d\n\t.type f%d, @function\n\t.p2align 4\nf%d:\n\t%s\n\tleal 1(%%rdi), %%eax\n\tret\n\t.size f%d, .-f%d\n", i, i, i, call, i, i)
	}
	fmt.Fprintf(w, "\t.globl main\n\t.type main, @function\nmain:\n\t%s\n\txorl %%eax, %%eax\n\tret\n\t.size main, .-main\n", call)
	w.WriteString("\t.section .note.GNU-stack,\"\",@progbits\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// A benchCase is one command, run on a fresh copy of its input each time.
type benchCase struct {
	name  string
	args  []string // ftpatch arguments; PROG is replaced by the copy
	input string   // the file copied before each run
	quiet bool     // its standard output is discarded (a listing of every site)
	walls []time.Duration
	cpus  []time.Duration // user + system
	rss   int64           // KB, the largest of the runs
}

func (c *benchCase) run(ftpatch, work string) error {
	prog := filepath.Join(work, "prog")
	if err := copyFile(c.input, prog); err != nil {
		return err
	}
	args := slices.Clone(c.args)
	for i, a := range args {
		if a == "PROG" {
			args[i] = prog
		}
	}
	cmd := exec.Command(ftpatch, args...)
	cmd.Dir = work
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if c.quiet {
		cmd.Stdout = io.Discard
	}
	wall, err := measure.Run(cmd)
	if err != nil {
		return fmt.Errorf("ftpatch %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	c.walls = append(c.walls, wall)
	c.rss = max(c.rss, measure.MaxRSS(cmd.ProcessState))
	c.cpus = append(c.cpus, measure.CPU(cmd.ProcessState))
	return nil
}

// copyFile copies from to to, streamed (see writeAsm).
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	os.Remove(to)
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func run(bin string, runs int) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	ftpatch := filepath.Join(bin, "ftpatch")
	work, err := os.MkdirTemp("", "enable-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// One function in ten, by globs as a user writes them: f1, f1x, f1xx,
	// ... (11,111 names below 200,000) and f2[0-9][0-9][0-9][0-9]
	// (10,000) minus f25*.
	list := filepath.Join(work, "list.txt")
	if err := os.WriteFile(list, []byte("# a tenth of the program\nf1\nf1?\nf1??\nf1???\nf2????\n!f25*\nmain\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("ftpatch enable on a generated executable of %d functions; %d runs per case, fresh copy each, interleaved\n\n", funcs, runs)
	fmt.Printf("load average at start: %s\n", machine.LoadAvg())
	fmt.Printf("%-8s %-14s %10s %10s %10s %10s %10s %8s  %s\n", "program", "case", "size", "median", "best", "cpu", "max RSS", "RSS/size", "targets (1 s, 10x)")
	missed := 0
	for _, s := range shapes {
		prog, err := program(bin, s)
		if err != nil {
			return err
		}
		enabled := filepath.Join(work, "enabled-"+s.name)
		if err := measure.Sh(work, ftpatch, "enable", "--funcs", list, "-o", enabled, prog); err != nil {
			return err
		}
		noTable := filepath.Join(work, "notable-"+s.name)
		if err := measure.Sh(work, "objcopy", "--remove-section", "__mcount_loc", prog, noTable); err != nil {
			return err
		}
		cases := []*benchCase{
			{name: "enable 10%", args: []string{"enable", "--funcs", list, "PROG"}, input: prog},
			{name: "enable all", args: []string{"enable", "PROG", "*"}, input: prog},
			{name: "enable again", args: []string{"enable", "--funcs", list, "PROG"}, input: enabled},
			{name: "verify", args: []string{"verify", "PROG"}, input: enabled},
			{name: "disable", args: []string{"disable", "PROG"}, input: enabled},
			{name: "sites", args: []string{"sites", "PROG"}, input: prog, quiet: true},
			{name: "sites decoded", args: []string{"sites", "PROG"}, input: noTable, quiet: true},
		}
		for i := 0; i < runs+1; i++ {
			for _, c := range cases {
				if err := c.run(ftpatch, work); err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				if i == 0 { // warm-up
					c.walls, c.cpus, c.rss = nil, nil, 0
				}
			}
		}
		st, err := os.Stat(prog)
		if err != nil {
			return err
		}
		size := st.Size()
		for _, c := range cases {
			m := measure.Median(c.walls)
			best := slices.Min(c.walls)
			ratio := float64(c.rss*1024) / float64(size)
			verdict := "met"
			if m > time.Second || ratio > 10 {
				verdict = "MISSED"
				missed++
			}
			fmt.Printf("%-8s %-14s %8.1fMB %8.0fms %8.0fms %8.0fms %8.1fMB %8.1fx  %s\n", s.name, c.name, float64(size)/1e6,
				float64(m.Microseconds())/1000, float64(best.Microseconds())/1000, float64(measure.Median(c.cpus).Microseconds())/1000,
				float64(c.rss)/1024, ratio, verdict)
		}
	}
	if hwm := measure.SelfHWM(); hwm > 0 {
		fmt.Printf("\nthis process's own peak RSS: %.1f MB, the floor under every max RSS above (children start by vfork)\n", float64(hwm)/1024)
	}
	fmt.Printf("\nload average at end: %s (this machine's 2 cores are shared: with a load above 2, wall time is\nmostly waiting for a core; cpu is the command's own user+system time)\n", machine.LoadAvg())
	if missed > 0 {
		fmt.Printf("%d cases MISSED a target\n", missed)
	}
	return nil
}
