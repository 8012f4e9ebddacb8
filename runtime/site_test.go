package runtime

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/isa/x86"
)

// buildHarness compiles a C program of the runtime's tests, source,
// which includes runtime sources by their path under src/, with the host
// compiler, and returns it.
func buildHarness(t *testing.T, source string) string {
	t.Helper()
	return buildHarnessWith(t, "gcc", nil, source)
}

// buildHarnessWith is buildHarness with the compiler cc and its flags
// (another ISA's cross compiler, -static to run under qemu-user).
func buildHarnessWith(t *testing.T, cc string, flags []string, source string) string {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		t.Fatalf("%s is not installed: run `make deps`", cc)
	}
	dir := t.TempDir()
	src, err := filepath.Abs("src")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "harness.c"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "harness")
	argv := append(append(append([]string{"-O2"}, flags...), includeFlags(src)...), "-o", bin, filepath.Join(dir, "harness.c"))
	if out, err := exec.Command(cc, argv...).CombinedOutput(); err != nil {
		t.Fatalf("building the harness: %v\n%s", err, out)
	}
	return bin
}

// siteHarness runs site.c's ftrt_arch_at_entry and ftrt_arch_chain on
// code read from stdin, a line per case: hex bytes (the function from its
// start, which ends 8 bytes of int3 later: no real chain site ends its
// function sooner, and the runtime reads nothing past the function), the
// site's offset and length; it prints both answers.
const siteHarness = `#include <stdio.h>
#include <string.h>
#include "arch/site.c"
#include "arch/x86_64/site.c"
#include "arch/x86_64/near.c"

int main(void)
{
	static uintptr_t targets[FTRT_T_N];
	static char line[4096];
	ftrt_targets = targets;
	while (fgets(line, sizeof line, stdin)) {
		unsigned char code[1024 + 16];
		char hex[2048];
		unsigned off, len, n = 0;
		memset(code, 0xcc, sizeof code); /* int3 past the function */
		if (sscanf(line, "%2047s %u %u", hex, &off, &len) != 3)
			return 2;
		for (; hex[2 * n] && n < 1024; n++)
			sscanf(hex + 2 * n, "%2hhx", &code[n]);
		uintptr_t start = (uintptr_t)code, ip = start + off;
		printf("%d %d\n", ftrt_arch_at_entry(ip, start, start + n + 8), ftrt_arch_chain(ip, (int)len, start));
	}
	return 0;
}
`

// TestSiteLeadMatchesNops: the runtime tells what precedes a site
// (arch/x86_64/site.c: at a function's entry, a chain site after push %r10)
// exactly as package isa/x86 does for recordmcount and ftpatch (x86.SiteLead,
// x86.ChainPush): compared on gcc's and clang's shapes and on generated
// code made of the pieces both look at and of others.
func TestSiteLeadMatchesNops(t *testing.T) {
	bin := buildHarness(t, siteHarness)

	// The pieces: what may come before a site (endbr64, push %r10, the
	// NOPs of gcc, clang and ftpatch), what may not (a prologue, other
	// NOPs, a jump), the sites (calls and NOPs of both lengths) and what
	// may follow (pop %r10 or not).
	lead := []string{"f30f1efa", "4152", "90", "90", "90", "0f1f440008", "0f1f00", "6690", "662e0f1f840000000000",
		"0f1f8000000000", "55", "4889e5", "415a", "4153", "0f1fc8", "eb03", "cc", "f390"}
	site := []string{"e800000000", "ff1500000000", "67e800000000", "0f1f440000", "660f1f440000"}
	tail := []string{"415a", "415a", "415b", "c3", "5a"}
	type vec struct {
		fn       []byte
		off, len int
	}
	var vecs []vec
	add := func(pre []string, s, post string) {
		b, _ := hex.DecodeString(strings.Join(pre, "") + s + post)
		vecs = append(vecs, vec{b, len(strings.Join(pre, "")) / 2, len(s) / 2})
	}
	for _, s := range site {
		for _, pre := range [][]string{{}, {"f30f1efa"}, {"4152"}, {"4152", "f30f1efa"}, {"f30f1efa", "4152"},
			{"4152", "90", "90", "90", "90", "90"}, {"4152", "f30f1efa", "90", "90", "90", "90", "90"},
			{"90", "90", "90", "90", "90"}, {"0f1f440008"}, {"f30f1efa", "0f1f00"}, {"55", "4889e5", "4152"}} {
			for _, post := range tail[:3] {
				add(pre, s, post)
			}
		}
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		var pre []string
		for k := r.Intn(6); k > 0; k-- {
			pre = append(pre, lead[r.Intn(len(lead))])
		}
		add(pre, site[r.Intn(len(site))], tail[r.Intn(len(tail))])
	}

	var in strings.Builder
	for _, v := range vecs {
		fmt.Fprintf(&in, "%x %d %d\n", v.fn, v.off, v.len)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	chains, entries := 0, 0
	for i, v := range vecs {
		if !sc.Scan() {
			t.Fatalf("harness answered %d cases of %d", i, len(vecs))
		}
		var atEntry, chain int
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &atEntry, &chain); err != nil {
			t.Fatalf("harness: %q: %v", sc.Text(), err)
		}
		lead := x86.SiteLead(v.fn, uint64(v.off), v.len)
		goChain := x86.ChainPush(v.fn, uint64(v.off), v.len) >= 0
		if (atEntry == 1) != (lead != x86.LeadNone) || (chain == 1) != goChain {
			t.Errorf("% x, site +%d (%d bytes): site.c says at entry %d, chain %d; isa/x86 says %v, chain push %v", v.fn, v.off, v.len, atEntry, chain, lead, goChain)
		}
		if lead == x86.LeadChain {
			chains++
		} else if lead == x86.LeadEntry {
			entries++
		}
	}
	if chains < 50 || entries < 50 {
		t.Errorf("only %d chain and %d entry sites among %d cases", chains, entries, len(vecs))
	}
}

// prologueListHarness asks site.c's ftrt_site_prologue about every
// address of two sorted lists (a module's prologue sites; another's
// after it, as the pass moves from module to module), in ascending
// order as the walk asks, twice each as the walk does, then in a
// scrambled order as ftpatch ctl's server may, and checks each answer
// against a linear search: its cursor must never change an answer.
const prologueListHarness = `#include <stdio.h>
#include <stdlib.h>
#include "arch/site.c"

static int linear(const uintptr_t *lo, const uintptr_t *hi, uintptr_t ip)
{
	for (; lo < hi; lo++)
		if (*lo == ip)
			return 1;
	return 0;
}

static int check(const uintptr_t *list, int n, uintptr_t ip)
{
	ftrt_prologues = list, ftrt_prologues_end = list + n;
	int got = ftrt_site_prologue(ip), want = linear(list, list + n, ip);
	if (got != want) {
		printf("list of %d, ip %#lx: %d, want %d\n", n, (unsigned long)ip, got, want);
		return 1;
	}
	return 0;
}

int main(void)
{
	static uintptr_t a[5000], b[7];
	uintptr_t v = 0x1000;
	srand(1);
	for (int i = 0; i < 5000; i++)
		a[i] = v += 1 + rand() % (i % 3 == 0 ? 3 : 200); /* close runs and gaps */
	for (int i = 0; i < 7; i++)
		b[i] = 0x1000 + 16 * (uintptr_t)i * i;
	int bad = 0;
	for (int pass = 0; pass < 2; pass++) {
		const uintptr_t *l = pass ? b : a;
		int n = pass ? 7 : 5000;
		for (uintptr_t ip = 0xff0; ip <= l[n - 1] + 8; ip++)
			bad += check(l, n, ip) + check(l, n, ip);
	}
	for (int i = 0; i < 200000; i++) {
		uintptr_t ip = 0xff0 + (uintptr_t)rand() % (a[4999] - 0xfd0);
		bad += i % 5 ? check(a, 5000, ip) : check(b, 7, ip);
	}
	ftrt_prologues = ftrt_prologues_end = NULL;
	if (ftrt_site_prologue(a[0]))
		printf("no list, and an answer\n"), bad++;
	printf("%d wrong\n", bad);
	return bad != 0;
}
`

// TestSitePrologueCursor checks that ftrt_site_prologue, which the
// load-time pass asks twice about every site, answers as a search of the
// whole list would, in every order it may be asked.
func TestSitePrologueCursor(t *testing.T) {
	bin := buildHarness(t, prologueListHarness)
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0 wrong" {
		t.Fatalf("%v\n%s", err, out)
	}
}
