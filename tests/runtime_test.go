package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"ftpatch/elfx"
	ftrt "ftpatch/runtime"
	"ftpatch/sites"
)

var (
	runtimeOnce sync.Once
	runtimeLib  string
	runtimeErr  error
)

// runtimeArchive builds libftrt.a once for the whole test run.
func runtimeArchive(t *testing.T) string {
	t.Helper()
	runtimeOnce.Do(func() {
		runtimeLib, runtimeErr = ftrt.Build(context.Background(), ftrt.Options{Dir: filepath.Join(toolDir, "ftrt")})
	})
	if runtimeErr != nil {
		t.Fatal(runtimeErr)
	}
	return runtimeLib
}

var (
	ftrtLine      = regexp.MustCompile(`ftrt: (\d+) sites: (\d+) patched to NOPs, (\d+) NOPs already, (\d+) skipped, (\d+) failed; (\d+) empty and (\d+) duplicate`)
	sitecheckLine = regexp.MustCompile(`sitecheck: (\d+) sites, (\d+) nops, (\d+) other, (\d+) writable code mappings`)
)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestLoadTimeNops: a program linked with the runtime, run with nothing
// set, has every site turned into a NOP before main (checked from inside
// the process at exit), no writable code mapping, and the same output and
// exit status as the program built without instrumentation. A program
// whose sites are NOPs already (recordmcount --nop) is not written at all.
func TestLoadTimeNops(t *testing.T) {
	type variant struct {
		flags string
		pie   bool
		rec   []string // recordmcount flags; nil: gcc writes the table itself
		nop   string   // FTRACE_NOP: force a NOP style (the fallbacks no x86-64 CPU needs)
	}
	variants := []variant{
		{"-pg -mfentry", true, []string{}, ""},
		{"-pg -mfentry", false, []string{}, ""},
		{"-pg", true, []string{}, ""},
		{"-fpatchable-function-entry=5", true, []string{}, ""},
		{"-pg -mfentry -fcf-protection", true, []string{}, ""},
		{"-pg -mfentry", true, []string{"--nop"}, ""},
		{"-pg -mfentry -mrecord-mcount", false, nil, ""},
		{"-pg -mfentry", true, []string{}, "k8"},
		{"-pg -mfentry", true, []string{"--nop"}, "jmp"},
	}
	for _, tg := range []target{x86GCC, x86Clang} {
		for _, b := range variants {
			if b.rec == nil && tg.name != "gcc" {
				continue
			}
			name := fmt.Sprintf("%s/%s/%s/%s", tg.name, slug(b.flags+" "+strings.Join(b.rec, " ")), picFlag(b.pie), "nop_"+b.nop)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				lib := runtimeArchive(t)
				plainDir, dir := t.TempDir(), t.TempDir()
				plain, _ := link(t, tg, plainDir, "plain", build(t, tg, plainDir, "", b.pie), b.pie, "bfd", false)
				wantOut, wantCode := execute(t, tg, plain)

				objs := build(t, tg, dir, b.flags, b.pie)
				if b.rec != nil {
					run(t, dir, append(append([]string{tool("recordmcount")}, b.rec...), objs...)...)
				}
				check, err := filepath.Abs(filepath.Join("progs", "sitecheck.c"))
				if err != nil {
					t.Fatal(err)
				}
				prog := filepath.Join(dir, "prog")
				argv := append(append([]string{}, tg.link...), "-o", prog, picLink(b.pie))
				argv = append(append(append(argv, objs...), check), ftrt.LinkFlags(lib)...)
				run(t, dir, argv...)

				f, err := elfx.Open(prog)
				if err != nil {
					t.Fatal(err)
				}
				l, err := sites.FindLinked(f)
				if err != nil {
					t.Fatal(err)
				}
				live := len(l.Sites) + l.Dead

				out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE_DEBUG=1", "FTRACE_NOP=" + b.nop}, prog)
				if err != nil {
					t.Fatal(err)
				}
				if out != wantOut || code != wantCode {
					t.Errorf("exit %d, output\n%s\nwant exit %d, output\n%s", code, out, wantCode, wantOut)
				}
				m := ftrtLine.FindStringSubmatch(errOut)
				c := sitecheckLine.FindStringSubmatch(errOut)
				if m == nil || c == nil {
					t.Fatalf("no report from the runtime or the checker in stderr:\n%s", errOut)
				}
				total, patched, already, skipped, failed := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4]), atoi(m[5])
				if total != live || patched+already != live || skipped != 0 || failed != 0 {
					t.Errorf("runtime: %s; the table lists %d sites (%d in live functions, %d dead)", m[0], live, len(l.Sites), l.Dead)
				}
				if b.nop == "" && len(b.rec) > 0 && b.rec[0] == "--nop" && patched != 0 {
					t.Errorf("a program recorded with --nop had %d sites written at load; want none", patched)
				}
				if atoi(c[1]) != live || atoi(c[2]) != live || atoi(c[3]) != 0 || atoi(c[4]) != 0 {
					t.Errorf("checker: %s; want %d sites, all NOPs, no writable code", c[0], live)
				}
				if b.nop != "" {
					// A forced fallback: every site rewritten to it, even
					// those --nop made P6 NOPs, and tracing still works.
					if !strings.Contains(errOut, " "+b.nop+" NOPs;") || patched != live {
						t.Errorf("FTRACE_NOP=%s: %s", b.nop, m[0])
					}
					got, _, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_NOP=" + b.nop, "FTRACE_OUT=" + filepath.Join(dir, "t")}, prog)
					if err != nil || got != wantOut || code != wantCode {
						t.Errorf("traced from %s NOPs: exit %d, %v, output\n%s", b.nop, code, err, got)
					}
				}
			})
		}
	}
}

func picLink(pie bool) string {
	if pie {
		return "-pie"
	}
	return "-no-pie"
}
