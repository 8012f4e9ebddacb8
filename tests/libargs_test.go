package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/argspec"
	"ftpatch/internal/golden"
	"ftpatch/protos"
	"ftpatch/trace"
)

// libArgsOut is progs/libargs.c's output, traced or not: 6 written, 6
// the file's size, 1 FD_CLOEXEC, 3 strlen's, 0 munmap's, 1 a socket,
// 10 SIGUSR1.
const libArgsOut = "27\n"

// maskedAddrs is masked with the addresses a run chooses (malloc's,
// mmap's, a handler's) as 0xADDR.
func maskedAddrs(b []byte) []byte {
	return regexp.MustCompile(`0x[0-9a-f]{6,}`).ReplaceAll(masked(b), []byte("0xADDR"))
}

// functionLines is a function tracer's replay reduced to its calls,
// without their times, threads and callers (a compiler's offsets).
func functionLines(out string) []byte {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && !strings.HasPrefix(line, "#") {
			call, _, _ := strings.Cut(strings.Join(f[2:], " "), " <- ")
			line = call
		}
		b.WriteString(line + "\n")
	}
	return maskedAddrs([]byte(b.String()))
}

// TestLibCallArgs: the arguments and return values of a program's
// library calls (progs/libargs.c), typed by the prototype table
// (package protos): strings, sizes, pointers, and flags and enums by
// name (open's O_RDONLY|O_CLOEXEC, creat's mode 0644, mmap's
// PROT_READ|PROT_WRITE and MAP_PRIVATE|MAP_ANONYMOUS, lseek's SEEK_END,
// fcntl's F_GETFD, socket's AF_UNIX and SOCK_STREAM|SOCK_CLOEXEC,
// signal's SIGUSR1), each call's line of replay as C would write it
// (testdata/libargs-graph.golden: function_graph, with the return
// values; testdata/libargs-function.golden: the function tracer, the
// arguments alone), with the program's output as untraced; and -A and
// -R's entries for a library function win over the table's. On x86-64
// (gcc, clang) through ftpatch record --auto-args; on arm64 (gcc,
// clang, under qemu) with the table given as record gives it
// (FTRACE_LIBARGS, FTRACE_LIBRETVAL, the enums file).
func TestLibCallArgs(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			objs := buildSrc(t, tg, dir, preferred[tg.arch]+" -O2 -g", true, "libargs.c")
			prog := linkRecordedOn(t, tg, dir, objs, picLink(true))
			if out, _, code, err := runStatus(dir, tg.on(prog)...); err != nil || code != 0 || out != libArgsOut {
				t.Fatalf("untraced: exit %d, %v, output %q", code, err, out)
			}
			record := func(name, tracer string, flags ...string) string {
				t.Helper()
				tdir := filepath.Join(dir, name)
				if tg.arch == "x86_64" {
					// --no-sched: the goldens hold no times off the CPU, which vary from run to run.
					argv := append(append([]string{tool("ftpatch"), "record", "--no-sched", "--tracer", tracer, "--auto-args", "--filter", "*", "-d", tdir}, flags...), prog)
					out, stderr, code, err := runStatus(dir, argv...)
					if err != nil || code != 0 || out != libArgsOut {
						t.Fatalf("record %v: exit %d, %v, output %q\n%s", flags, code, err, out, stderr)
					}
					return tdir
				}
				// libgcc's outline atomics, linked into the program, ask
				// __getauxval from a constructor: a call of the
				// program's before main, left out.
				var notes bytes.Buffer
				enums := argspec.NewEnums()
				srv, err := argspec.Serve([]string{"*", "!__getauxval"}, enums, &notes)
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				env := []string{"FTRACE=" + tracer, "FTRACE_LIBCALL=1", "FTRACE_FILTER=*,!__getauxval", "FTRACE_OUT=" + tdir, "FTRACE_ARGS_SOCKET=" + srv.Path(),
					"FTRACE_LIBARGS=" + protos.Args(), "FTRACE_LIBRETVAL=" + protos.Retval()}
				for i := 0; i+1 < len(flags); i += 2 {
					env = append(env, map[string]string{"-A": "FTRACE_ARGS=", "-R": "FTRACE_RETVAL="}[flags[i]]+flags[i+1])
				}
				out, stderr, code, err := runStatusEnv(dir, env, tg.on(prog)...)
				srv.Close()
				if err != nil || code != 0 || out != libArgsOut || stderr != "" || notes.Len() > 0 {
					t.Fatalf("traced %v: exit %d, %v, output %q\n%s%s", flags, code, err, out, stderr, notes.String())
				}
				for _, set := range protos.Sets(arch.ARM64) {
					enums.Add(set)
				}
				var b bytes.Buffer
				if err := trace.WriteEnums(&b, enums.List()); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(tdir, trace.EnumsFile), b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return tdir
			}
			replay := func(tdir string) string {
				t.Helper()
				out, stderr := run(t, dir, tool("ftpatch"), "replay", tdir)
				if stderr != "" {
					t.Errorf("replay: %s", stderr)
				}
				return out
			}
			golden.Check(t, filepath.Join("testdata", "libargs-graph.golden"), maskedAddrs([]byte(replay(record("graph", "function_graph")))))
			golden.Check(t, filepath.Join("testdata", "libargs-function.golden"), functionLines(replay(record("function", "function"))))
			// The user's entries first: open's flags in hex, strlen's
			// return value in hex; the table's for the rest.
			out := replay(record("user", "function_graph", "-A", "open@arg1/s,arg2/x", "-R", "strlen/x"))
			for _, want := range []string{`open("libargs.txt", 0x80000) = 3;`, `strlen("abc") = 0x3;`, `malloc(64) = 0x`, `lseek(3, 0, SEEK_END) = 6;`} {
				if !strings.Contains(out, want) {
					t.Errorf("-A open@arg1/s,arg2/x -R strlen/x: no %q in\n%s", want, out)
				}
			}
		})
	}
}

// TestLibCallArgsDWARF: ftpatch record --auto-args types a library
// function the prototype table does not know from the library's own
// DWARF (progs/libdw.c, built with -g, without sites): dw_scale(3,
// "abc") = 9 and dw_ratio(7, 2) = 3.5 in the replay, where without
// the DWARF (the library stripped) they show no arguments. x86-64 (record
// runs the program), gcc and clang.
func TestLibCallArgsDWARF(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang} {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			lib := filepath.Join(dir, "libdw.so")
			run(t, dir, append(append([]string{}, tg.cc...), "-O2", "-g", "-fPIC", "-shared", "-o", lib, progPath(t, "libdw.c"))...)
			objs := buildSrc(t, tg, dir, preferred[tg.arch], true, "libdwmain.c")
			prog := linkRecordedOn(t, tg, dir, objs, picLink(true), "-L"+dir, "-Wl,-rpath,"+dir, "-Wl,--no-as-needed", "-ldw")
			for _, c := range []struct {
				name  string
				strip bool
				want  []string
			}{
				{"dwarf", false, []string{`dw_scale(3, "abc") = 9;`, `dw_ratio(7, 2) = 3.5;`}},
				{"stripped", true, []string{`dw_scale();`, `dw_ratio();`}},
			} {
				if c.strip {
					run(t, dir, "strip", "--strip-debug", lib)
				}
				tdir := filepath.Join(dir, c.name)
				out, stderr, code, err := runStatus(dir, tool("ftpatch"), "record", "--auto-args", "--filter", "main,dw_*", "-d", tdir, prog)
				if err != nil || code != 0 || out != "9 3.50\n" {
					t.Fatalf("record: exit %d, %v, output %q\n%s", code, err, out, stderr)
				}
				replay, _ := run(t, dir, tool("ftpatch"), "replay", tdir)
				for _, w := range c.want {
					if !strings.Contains(replay, w) {
						t.Errorf("%s: no %q in\n%s", c.name, w, replay)
					}
				}
			}
		})
	}
}
