package runtime

import (
	"os/exec"
	"strings"
	"testing"
)

// mapNearHarness runs arch/arm64/veneer.c's ftrt_arm64_map_near for a
// "code" address in the middle of 512 MiB the harness holds (PROT_NONE),
// so every place within bl's reach (±128 MiB) is taken but those it
// frees: none; one page at 37 MiB and 12 KiB above (between the places
// map_near asks for in steps, found through /proc/self/maps); one 130
// MiB below (out of reach). It prints what each gave and whether the
// process's mappings were left as they were when it gave none.
const mapNearHarness = `#include <stdio.h>
#include <string.h>
#include "arch/arm64/veneer.c"
#include "arch/site.c"

static char before[1 << 16], after[1 << 16];

static void maps(char *to)
{
	FILE *f = fopen("/proc/self/maps", "r");
	size_t n = f ? fread(to, 1, (1 << 16) - 1, f) : 0;
	to[n] = 0;
	if (f)
		fclose(f);
}

static void try(const char *what, uintptr_t from, uintptr_t want)
{
	maps(before);
	uintptr_t m = ftrt_arm64_map_near(from);
	maps(after);
	if (!m)
		printf("%s: none, mappings %s\n", what, strcmp(before, after) ? "changed" : "as they were");
	else
		printf("%s: %s\n", what, m == want ? "the free page" : "another page");
}

int main(void)
{
	size_t held = 512ul << 20, page = 4096;
	char *base = mmap(NULL, held, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return 2;
	uintptr_t from = (uintptr_t)base + held / 2;
	try("full", from, 0);
	uintptr_t far = from - (130ul << 20);
	munmap((void *)far, page);
	try("out of reach", from, 0);
	uintptr_t hole = from + (37ul << 20) + 3 * page;
	munmap((void *)hole, page);
	try("between steps", from, hole);
	return 0;
}
`

// TestMapNear: a page for veneers and ops trampolines is found wherever
// bl's reach has one free, not only at the places asked for in steps
// (under qemu-user the emulator's own mappings now and then held every
// one of those around a shared object, and ops registered before it was
// loaded were never called at its functions), and none is made, nor any
// mapping left behind, when no place in reach is free. arm64, under
// qemu-user.
func TestMapNear(t *testing.T) {
	if _, err := exec.LookPath("qemu-aarch64"); err != nil {
		t.Fatal("qemu-aarch64 is not installed: run `make deps`")
	}
	bin := buildHarnessWith(t, "aarch64-linux-gnu-gcc", []string{"-static", "-mgeneral-regs-only"}, mapNearHarness)
	out, err := exec.Command("qemu-aarch64", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("the harness: %v\n%s", err, out)
	}
	want := "full: none, mappings as they were\nout of reach: none, mappings as they were\nbetween steps: the free page\n"
	if got := string(out); got != want {
		t.Errorf("map_near:\n%s\nwant\n%s", strings.TrimSpace(got), strings.TrimSpace(want))
	}
}
