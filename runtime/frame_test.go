package runtime

import (
	"bufio"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// frameHarness runs arch/arm64/frame.h's arm64_frame_shape on code read
// from stdin, a line per case: hex bytes ending with the -pg site's bl (the
// code before it as the program has it), and prints the entry sp's
// distance above x29 and the signing key (0 none, 1 A, 2 B), or "-".
const frameHarness = `#include <stdio.h>
#include <string.h>
#include "arch/arm64/frame.h"

int main(void)
{
	static char line[8192];
	while (fgets(line, sizeof line, stdin)) {
		static unsigned char code[4096];
		size_t n = 0;
		for (; line[2 * n] && line[2 * n] != '\n' && n < sizeof code; n++)
			sscanf(line + 2 * n, "%2hhx", &code[n]);
		struct frame_shape fs;
		if (arm64_frame_shape((uintptr_t)code + n - 4, &fs))
			printf("%lu %d\n", (unsigned long)fs.cfa, fs.key);
		else
			printf("-\n");
	}
	return 0;
}
`

// TestFrameShape: what the runtime reads from a -pg function's prologue
// on arm64 (arch/arm64/frame.h: where x29 lies below the entry sp, and the
// key the return address was signed with) is what the compiler's own
// unwind info says (the saved x30's place in each function's frame, as
// readelf interprets .eh_frame at the site), for every -pg function
// gcc and clang make of the tests' C and C++ programs, at -O0 and -O2,
// without pointer authentication and with it by either key; a prologue it does not
// understand would be a call recorded unhooked, and may be no more than
// a few.
func TestFrameShape(t *testing.T) {
	for _, tool := range []string{"gcc", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "aarch64-linux-gnu-readelf", "aarch64-linux-gnu-objdump", "clang"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: run `make deps`", tool)
		}
	}
	bin := buildHarness(t, frameHarness)
	dir := t.TempDir()
	progs, err := filepath.Abs(filepath.Join("..", "tests", "progs"))
	if err != nil {
		t.Fatal(err)
	}
	compilers := map[string][]string{
		"gcc":   {"aarch64-linux-gnu-g++"},
		"clang": {"clang++", "--target=aarch64-linux-gnu"},
	}
	for name, cc := range compilers {
		for _, opt := range []string{"-O0", "-O2"} {
			// The key each build signs with: none, A (paciasp), B (pacibsp).
			for key, protect := range []string{"none", "standard", "pac-ret+b-key"} {
				flags := []string{opt, "-pg", "-pthread", "-mbranch-protection=" + protect}
				t.Run(fmt.Sprintf("%s/%s/%s", name, opt, protect), func(t *testing.T) {
					t.Parallel()
					prog := filepath.Join(dir, fmt.Sprintf("%s%s%d", name, opt, key))
					checkFrames(t, bin, cc, flags, prog, progs, key)
				})
			}
		}
	}
}

// checkFrames builds each of the tests' programs with cc and flags, and
// compares the harness's answer at each -pg site with the unwind info.
func checkFrames(t *testing.T, harness string, cc, flags []string, prog, progs string, key int) {
	t.Helper()
	total, unknown := 0, 0
	for _, srcs := range [][]string{{"unwind.cc"}, {"-xc", "edge.c"}, {"-xc", "contexts.c"}, {"-xc", "backtrace.c", "-ldl"}} {
		var files []string
		for _, s := range srcs {
			if strings.HasPrefix(s, "-") {
				files = append(files, s)
			} else {
				files = append(files, filepath.Join(progs, s))
			}
		}
		argv := append(append(append(append([]string{}, cc...), flags...), "-o", prog), files...)
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
		sites, codes := mcountSites(t, prog)
		want := cfiAt(t, prog, sites)
		cmd := exec.Command(harness)
		cmd.Stdin = strings.NewReader(strings.Join(codes, "\n") + "\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("harness: %v", err)
		}
		got := strings.Fields(strings.ReplaceAll(string(out), " ", ":"))
		if len(got) != len(sites) {
			t.Fatalf("%s: %d answers for %d sites", srcs, len(got), len(sites))
		}
		for i, site := range sites {
			total++
			if got[i] == "-" {
				unknown++
				t.Logf("%s: site %#x: prologue not understood", srcs, site)
				continue
			}
			if w := fmt.Sprintf("%d:%d", want[i], key); got[i] != w {
				t.Errorf("%s: site %#x: the runtime reads %s (cfa:key), the unwind info says %s", srcs, site, got[i], w)
			}
		}
	}
	if total < 40 {
		t.Errorf("only %d -pg sites looked at", total)
	}
	if unknown > total/20 {
		t.Errorf("%d of %d prologues not understood", unknown, total)
	}
}

var blMcount = regexp.MustCompile(`^\s*([0-9a-f]+):\s+[0-9a-f]{8}\s+bl\s+[0-9a-f]+ <_mcount(@plt)?>`)

// mcountSites are prog's -pg sites (its bl _mcount), and for each the
// program's code from up to 256 bytes before it to its end, in hex.
func mcountSites(t *testing.T, prog string) ([]uint64, []string) {
	t.Helper()
	out, err := exec.Command("aarch64-linux-gnu-objdump", "-d", prog).Output()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	var sites []uint64
	var codes []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		m := blMcount.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, _ := strconv.ParseUint(m[1], 16, 64)
		if at < text.Addr || at+4 > text.Addr+text.Size {
			continue
		}
		end := at + 4 - text.Addr
		start := uint64(0)
		if end > 260 {
			start = end - 260
		}
		sites = append(sites, at)
		codes = append(codes, hex.EncodeToString(data[start:end]))
	}
	return sites, codes
}

var (
	fdeLine = regexp.MustCompile(`FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	rowLine = regexp.MustCompile(`^([0-9a-f]{16}) `)
)

// cfiAt gives, for each site, the entry sp's distance above x29 that
// prog's unwind info says at that address: x29 points at the frame
// record, whose second word is the saved return address, at CFA - N
// (readelf's c-N in the ra column): x29 = CFA - N - 8.
func cfiAt(t *testing.T, prog string, sites []uint64) []uint64 {
	t.Helper()
	out, err := exec.Command("aarch64-linux-gnu-readelf", "--debug-dump=frames-interp", prog).Output()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		loc uint64
		ra  string
	}
	type fde struct {
		lo, hi uint64
		rows   []row
	}
	var fdes []*fde
	var cur *fde
	raCol := -1
	for _, line := range strings.Split(string(out), "\n") {
		if m := fdeLine.FindStringSubmatch(line); m != nil {
			lo, _ := strconv.ParseUint(m[1], 16, 64)
			hi, _ := strconv.ParseUint(m[2], 16, 64)
			cur = &fde{lo: lo, hi: hi}
			fdes = append(fdes, cur)
			continue
		}
		fields := strings.Fields(line)
		if cur == nil || len(fields) == 0 {
			continue
		}
		if fields[0] == "LOC" {
			raCol = -1
			for i, h := range fields {
				if h == "ra" {
					raCol = i
				}
			}
			continue
		}
		if rowLine.MatchString(line) && raCol >= 0 && raCol < len(fields) {
			loc, _ := strconv.ParseUint(fields[0], 16, 64)
			cur.rows = append(cur.rows, row{loc, fields[raCol]})
		}
	}
	want := make([]uint64, len(sites))
	for i, site := range sites {
		k := 0
		for ; k < len(fdes) && !(fdes[k].lo <= site && site < fdes[k].hi); k++ {
		}
		if k == len(fdes) {
			t.Fatalf("site %#x: no FDE", site)
		}
		ra := ""
		for _, r := range fdes[k].rows {
			if r.loc <= site {
				ra = r.ra
			}
		}
		n, err := strconv.ParseUint(strings.TrimPrefix(ra, "c-"), 10, 64)
		if !strings.HasPrefix(ra, "c-") || err != nil {
			t.Fatalf("site %#x: the return address is %q in the unwind info, not saved in the frame", site, ra)
		}
		want[i] = n + 8
	}
	return want
}
