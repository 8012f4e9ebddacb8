package protos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/argspec"
)

// TestGenerated: table.go is what internal/cmd/protogen makes of
// libc.txt (after an edit of libc.txt: go generate ./protos).
func TestGenerated(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go: %v", err)
	}
	cmd := exec.Command("go", "run", "../internal/cmd/protogen", "-in", "libc.txt", "-out", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("protogen: %v\n%s", err, stderr.String())
	}
	want, err := os.ReadFile("table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("table.go is not what protogen makes of libc.txt: run go generate ./protos")
	}
}

// TestSpecs: the table's texts are what the runtime's grammar reads, on
// each architecture, every set an item names is there, and the common
// cases record as they should.
func TestSpecs(t *testing.T) {
	for _, a := range []arch.Arch{arch.X86_64, arch.ARM64} {
		args, err := argspec.ParseArgs(Args(), a)
		if err != nil {
			t.Fatalf("%v: FTRACE_LIBARGS: %v", a, err)
		}
		if _, err := argspec.ParseRetval(Retval(), a); err != nil {
			t.Fatalf("%v: FTRACE_LIBRETVAL: %v", a, err)
		}
		for _, e := range args {
			for _, it := range e.Items {
				if it.Fmt != argspec.Enum {
					continue
				}
				if _, ok := Set(a, it.Enum); !ok {
					t.Errorf("%v: %s: e:%s: no such set", a, e.Glob, it.Enum)
				}
			}
		}
	}
	for _, c := range []Func{
		{"open", "arg1/s,arg2/e:open_flags", "i32"},
		{"malloc", "arg1/u64", "p"},
		{"strlen", "arg1/s", "u64"},
		{"free", "arg1/p", ""},
		{"mmap", "arg1/p,arg2/u64,arg3/e:mmap_prot,arg4/e:mmap_flags,arg5/i32,arg6/i64", "p"},
		{"socket", "arg1/e:socket_domain,arg2/e:socket_type,arg3/i32", "i32"},
		{"strtod", "arg1/s,arg2/p", "f64"},
		{"getpid", "", "i32"},
	} {
		if f, ok := Lookup(c.Name); !ok || f != c {
			t.Errorf("%s: %+v, %v; want %+v", c.Name, f, ok, c)
		}
	}
}

// TestShow: the sets name the values programs pass, on each
// architecture's values.
func TestShow(t *testing.T) {
	for _, c := range []struct {
		a    arch.Arch
		set  string
		v    uint64
		want string
	}{
		{arch.X86_64, "open_flags", 0o2000000, "O_RDONLY|O_CLOEXEC"},
		{arch.X86_64, "open_flags", 0o2200301, "O_WRONLY|O_CREAT|O_EXCL|O_DIRECTORY|O_CLOEXEC"},
		{arch.ARM64, "open_flags", 0o2040301, "O_WRONLY|O_CREAT|O_EXCL|O_DIRECTORY|O_CLOEXEC"},
		{arch.X86_64, "open_flags", 0o20200002, "O_RDWR|O_TMPFILE"},
		{arch.X86_64, "open_flags", 0o4010000, "O_RDONLY|O_SYNC"},
		{arch.X86_64, "open_flags", 0x1_4000_0000, "O_RDONLY|0x40000000"},
		{arch.X86_64, "mode", 0o644, "0644"},
		{arch.X86_64, "mmap_prot", 3, "PROT_READ|PROT_WRITE"},
		{arch.X86_64, "mmap_prot", 0, "0"},
		{arch.X86_64, "mmap_flags", 0x22, "MAP_PRIVATE|MAP_ANONYMOUS"},
		{arch.X86_64, "socket_domain", 2, "AF_INET"},
		{arch.X86_64, "socket_type", 0x80801, "SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC"},
		{arch.X86_64, "fcntl_cmd", 1030, "F_DUPFD_CLOEXEC"},
		{arch.X86_64, "seek_whence", 2, "SEEK_END"},
		{arch.ARM64, "signal", 15, "SIGTERM"},
		{arch.X86_64, "signal", 99, "99"},
	} {
		e, ok := Set(c.a, c.set)
		if !ok {
			t.Errorf("%v: no set %s", c.a, c.set)
			continue
		}
		if got := e.Show(c.v); got != c.want {
			t.Errorf("%v %s %#o: %q, want %q", c.a, c.set, c.v, got, c.want)
		}
	}
}

// TestValues: each set's values are the C library's, as this machine's
// headers define them: for x86-64 with cc, for arm64 with
// aarch64-linux-gnu-gcc, the program run under qemu-aarch64 (each
// checked where its tools are installed, and at least one).
func TestValues(t *testing.T) {
	ran := 0
	for _, c := range []struct {
		a   arch.Arch
		cc  string
		run []string
	}{
		{arch.X86_64, "gcc", nil},
		{arch.ARM64, "aarch64-linux-gnu-gcc", []string{"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"}},
	} {
		if _, err := exec.LookPath(c.cc); err != nil {
			continue
		}
		if c.run != nil {
			if _, err := exec.LookPath(c.run[0]); err != nil {
				continue
			}
		} else if out, err := exec.Command("uname", "-m").Output(); err != nil || strings.TrimSpace(string(out)) != "x86_64" {
			continue
		}
		ran++
		t.Run(c.a.String(), func(t *testing.T) {
			dir := t.TempDir()
			var src strings.Builder
			src.WriteString("#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <fcntl.h>\n#include <signal.h>\n#include <stdio.h>\n#include <sys/mman.h>\n#include <sys/socket.h>\n#include <sys/stat.h>\n#include <sys/wait.h>\n#include <time.h>\n#include <unistd.h>\nint main(void)\n{\n")
			want := map[string]int64{}
			for _, e := range Sets(c.a) {
				for _, v := range e.Values {
					fmt.Fprintf(&src, "#ifdef %[1]s\n\tprintf(\"%[1]s %%lld\\n\", (long long)(%[1]s));\n#else\n\tprintf(\"%[1]s undefined\\n\");\n#endif\n", v.Name)
					want[v.Name] = v.Value
				}
			}
			src.WriteString("\treturn 0;\n}\n")
			c.cc = filepath.Base(c.cc)
			cfile, bin := filepath.Join(dir, "values.c"), filepath.Join(dir, "values")
			if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(c.cc, "-o", bin, cfile).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c.cc, err, out)
			}
			out, err := exec.Command(append(c.run, bin)[0], append(c.run, bin)[1:]...).Output()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				name, val, _ := strings.Cut(line, " ")
				v, err := strconv.ParseInt(val, 10, 64)
				switch {
				case val == "undefined":
					t.Logf("%s: not in this machine's headers", name)
				case err != nil:
					t.Errorf("%s: %q", name, line)
				case v != want[name]:
					t.Errorf("%s: %#o in the table, %#o in the headers", name, want[name], v)
				}
			}
		})
	}
	if ran == 0 {
		t.Fatal("no C compiler for either architecture")
	}
}
