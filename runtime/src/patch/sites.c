/*
 * The load-time pass's walk over one module's sites (patch.c runs it):
 * each site's bytes read and classified, the runtime's own calls
 * counted as calls, then each made what the pass wants (a NOP, or a call
 * into the tracer), code pages made writable only around the writes.
 * Calls the architecture's site.c and tramp.c, and pass.h's counts.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "core/ftrt.h"
#include "pass.h"
#include "prologue.h"
#include "record/stack.h"
#include "subtree.h"


/* What a site holds, with the runtime's own calls counted as calls. */
static enum ftrt_site_state classify(const unsigned char *ip, int *len)
{
	enum ftrt_site_state st = ftrt_arch_classify(ip, len);
	if (st == FTRT_SITE_UNKNOWN && ftrt_arch_tramp_call(ip, len, 0))
		return FTRT_SITE_CALL;
	return st;
}

/* A loaded segment: [start, end) with the protection its program header
 * gives it. */
struct segment {
	uintptr_t start, end;
	int prot;
};

struct seg_query {
	uintptr_t addr;
	struct segment seg;
	int found;
};

static int find_segment(struct dl_phdr_info *info, size_t size, void *data)
{
	struct seg_query *q = data;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (q->addr < start || q->addr >= start + ph->p_memsz)
			continue;
		q->seg.start = start;
		q->seg.end = start + ph->p_memsz;
		q->seg.prot = (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0) |
			      (ph->p_flags & PF_X ? PROT_EXEC : 0);
		q->found = 1;
		return 1;
	}
	return 0;
}

/* Whether a site not to enable holds what it should: any NOP when the
 * P6 form was chosen (it is the most general); otherwise exactly what
 * ftrt_arch_off says (the chosen fallback; on arm64, in a traced run, a
 * patchable area's `mov x9, x30; nop`). */
const char *ftrt_nop_style = "p6";
static int runnable_nop(uintptr_t ip, int len)
{
	return ftrt_nop_style[0] == 'p' || ftrt_site_holds((const unsigned char *)ip, ftrt_arch_off(ip, len), len);
}

static int action(enum ftrt_site_state st, uintptr_t ip, int len, unsigned char want)
{
	if (st == FTRT_SITE_UNKNOWN)
		return SKIP;
	if (st != FTRT_SITE_NOP)
		return WRITE;
	return want || !runnable_nop(ip, len) ? WRITE_NOP : KEEP;
}

/*
 * A site whose want is WANT_AUTO (no filter: choose), once its action a
 * is known: a call of the entry hook (-mfentry's __fentry__) is at a
 * function's entry by construction (after a nested function's push %r10,
 * perhaps: see enable_as) and becomes the tracer's call here;
 * any other site to write (-pg's call of mcount, a NOP) needs a
 * function's start to say what it is, and is left as it is (WANT_UNKNOWN,
 * DEFER) for settle, after the symbol table. Sites not to write keep
 * WANT_AUTO, which means nothing after the walk.
 */
int ftrt_sites_resolve(unsigned char *want, int a, const unsigned char *ip)
{
	if (*want != WANT_AUTO || a < WRITE)
		return a;
	/* A trampoline's site made from a prologue is at its function's
	 * entry by construction: no symbol table is needed to say so (a
	 * stripped program's are traced). */
	if ((a != WRITE_NOP && ftrt_arch_entry_call(ip)) || ftrt_site_prologue((uintptr_t)ip)) {
		*want = WANT_ENTRY;
		return a;
	}
	*want = WANT_UNKNOWN;
	return DEFER;
}

/*
 * What a site that want[] says to enable is enabled as: a site at a
 * function's entry is a chain site (ftrt_arch_chain) when gcc saved a
 * nested function's static chain before the call; its return address is
 * then a word up, and it calls trampolines of its own. Told from the
 * site's bytes, here, where every site about to be enabled passes, for
 * every way its want was decided (with the symbol table, or without it,
 * from the call of __fentry__ alone); seg_lo is the start of the site's
 * segment, below which nothing is read. A site the module's prologues
 * list (ftrt_site_prologue: ftpatch instrument's table, record -P's
 * plans) is a prologue site, whose every path keeps every register.
 */
static int enable_as(int want, uintptr_t ip, int len, uintptr_t seg_lo)
{
	if (want != WANT_ENTRY)
		return want;
	if (ftrt_site_prologue(ip))
		return WANT_PROLOGUE;
	return ftrt_arch_chain(ip, len, seg_lo) ? WANT_CHAIN : want;
}

/* Count a site the pass leaves as it is: one to write counts failed. */
static void count_unwritten(int act)
{
	if (act == KEEP)
		ftrt_pass_stats->nops++;
	else if (act == SKIP)
		ftrt_pass_stats->skipped++;
	else
		ftrt_pass_stats->failed++;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/*
 * Fault in the pages [lo, hi) for writing, in one call: every text page
 * written is a copy-on-write fault, and taken one at a time as the writes
 * reach them, the faults cost more than the copies. Only pages that will
 * be written are asked for, so no page is copied that would not have
 * been. A kernel without MADV_POPULATE_WRITE refuses it, and the writes
 * fault as before.
 *
 * A table of the compiler's calls (the usual one) has every page it
 * spans written, NOP'd or enabled: patch_segment then faults the whole
 * span in for writing before a site is read (ahead), which also spares
 * each page a read fault and, at its copy, a TLB flush of the read-only
 * mapping that the read left. A table of NOPs (recordmcount --nop,
 * -fpatchable-function-entry) has pages written only where a site is
 * enabled, and patch_block asks for those alone.
 */
static void populate(uintptr_t lo, uintptr_t hi)
{
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}

/* Sites per block of patch_block: its verdicts live on the stack. */
#define BLOCK 1024

/*
 * Write the sites sites[0..n) (n <= BLOCK) that need it, in the pages
 * [plo, phi), writable now. The block's sites are classified first, so
 * the pages they will write can be faulted in by runs (populate); then
 * each is written and read back. A site that starts within FTRT_SITE_MAX
 * bytes of the one before (sites do not overlap: the table is bogus) is classified
 * again just before it is written, as the write before may have changed
 * it, and is written only if it lies inside [plo, phi); every other site
 * to write does, as it lies between the first and the last that
 * patch_segment found. first: sites[-1] is not to be looked at; ahead:
 * the pages are faulted in for writing already; seg_lo: the segment's
 * start.
 */
static void patch_block(const uintptr_t *sites, unsigned char *want, size_t n, int first, int ahead, uintptr_t plo,
			uintptr_t phi, uintptr_t page, uintptr_t seg_lo)
{
	unsigned char verdict[BLOCK], lens[BLOCK];
	/* No site is at an address below FTRT_SITE_MAX: prev = 0 compares as
	 * far away. */
	uintptr_t rlo = 0, rhi = 0, prev = first ? 0 : sites[-1];
	const uintptr_t fentry = ftrt_targets[FTRT_QUICK_ENTRY], mcount = ftrt_targets[FTRT_QUICK_OTHER];
	for (size_t i = 0; i < n; i++) {
		uintptr_t ip = sites[i];
		int len = FTRT_SITE_MAX, a = RECHECK;
		if (ip - prev >= FTRT_SITE_MAX) {
			/* The common site, without a call: the compiler's call
			 * of a hook, recognised inline (the architecture's
			 * quick.h; a nested function's chain site is left to
			 * the general path, which tells it apart). */
			uint64_t v = ftrt_quick_load(ip);
			if (ftrt_quick_hook(ip, v, fentry, mcount)) {
				len = FTRT_QUICK_LEN, a = QUICK;
				if (want[i] == WANT_AUTO && ftrt_quick_target(ip, v) == fentry)
					want[i] = WANT_ENTRY; /* resolve's answer, from the call at hand */
				else if (want[i] == WANT_AUTO)
					want[i] = WANT_UNKNOWN, a = DEFER;
			} else
				a = ftrt_sites_resolve(&want[i], action(classify((const unsigned char *)ip, &len), ip, len, want[i]),
					    (const unsigned char *)ip);
		}
		verdict[i] = (unsigned char)a;
		lens[i] = (unsigned char)len;
		prev = ip;
		/* Runs of pages to write: most sites share their page with the
		 * one before. */
		if (a >= WRITE && !ahead && ip + (uintptr_t)len > rhi) {
			uintptr_t p0 = ip & ~(page - 1);
			if (p0 > rhi) {
				populate(rlo, rhi);
				rlo = p0 > plo ? p0 : plo;
			}
			rhi = (ip + (uintptr_t)len + page - 1) & ~(page - 1);
			rhi = rhi < phi ? rhi : phi;
		}
	}
	populate(rlo, rhi);

	/* Counted here and added once: the pass's counts are reached
	 * through a pointer (ftrt_pass_stats), in memory. */
	uint64_t patched = 0, enabled = 0, failed = 0;
	const uint64_t quick_nop = ftrt_quick_nop();
	/* What an enabled QUICK site calls (0: it jumps to a trampoline of
	 * its own, which the general path below builds). */
	const uintptr_t quick_entry = ftrt_arch_call_target(FTRT_QUICK_LEN, WANT_ENTRY),
			quick_mcount = ftrt_arch_call_target(FTRT_QUICK_LEN, WANT_MCOUNT);
	for (size_t i = 0; i < n; i++) {
		unsigned char *ip = (unsigned char *)sites[i];
		int len = lens[i], a = verdict[i];
		if (a == QUICK) {
			uint64_t insn = quick_nop;
			uintptr_t target = want[i] == WANT_ENTRY ? quick_entry : quick_mcount;
			if (!want[i] || ftrt_quick_call_insn(sites[i], target, &insn)) {
				if (!ftrt_quick_put(sites[i], insn))
					failed++;
				else if (want[i])
					enabled++;
				else
					patched++;
				continue;
			}
			a = WRITE; /* a trampoline to build, or a tracer out of reach: below */
		}
		if (a == RECHECK) {
			a = ftrt_sites_resolve(&want[i], action(classify(ip, &len), sites[i], len, want[i]), ip);
			if (a >= WRITE && (sites[i] < plo || sites[i] + (uintptr_t)len > phi))
				a = FAIL;
		}
		if (a == DEFER)
			continue;
		if (a < WRITE) {
			count_unwritten(a);
			continue;
		}
		unsigned char call[8];
		const unsigned char *bytes = ftrt_arch_off(sites[i], len);
		if (want[i]) {
			if (ftrt_arch_call((uintptr_t)ip, len, enable_as(want[i], sites[i], len, seg_lo), call) == 0) {
				bytes = call;
			} else {
				failed++; /* trampoline out of reach: the site stays, or becomes, a NOP */
				if (a == WRITE_NOP && runnable_nop(sites[i], len)) {
					ftrt_pass_stats->nops++;
					continue;
				}
			}
		}
		if (!ftrt_site_put(ip, bytes, len))
			failed++;
		else if (bytes == call)
			enabled++;
		else
			patched++;
	}
	ftrt_pass_stats->patched += patched;
	ftrt_pass_stats->enabled += enabled;
	ftrt_pass_stats->failed += failed;
}

/*
 * Patch the sites sites[0..n), all inside seg: each becomes a NOP, or a
 * call to the tracer where want[i] says so. Only the pages from the first
 * site to write to the last are made writable, once, and given back the
 * segment's protection at the end. Those two sites are found by
 * classifying from each end of the table: the sites before the first are
 * counted here and not read again. In the usual table, whose every site
 * is a call, that costs two classifications; in a table of NOPs already
 * (recordmcount --nop) it is the whole pass, and no page is made
 * writable.
 */
static void patch_segment(const uintptr_t *sites, unsigned char *want, size_t n, const struct segment *seg)
{
	size_t lo, hi;
	int len, a;
	for (lo = 0; lo < n; lo++) {
		a = action(classify((const unsigned char *)sites[lo], &len), sites[lo], len, want[lo]);
		if (a >= WRITE)
			break;
		count_unwritten(a);
	}
	if (lo == n)
		return;
	int ahead = a == WRITE; /* the first site to write is the compiler's: see populate */
	uintptr_t end = sites[lo] + (uintptr_t)len;
	for (hi = n - 1; hi > lo; hi--) {
		int hlen;
		if (action(classify((const unsigned char *)sites[hi], &hlen), sites[hi], hlen, want[hi]) >= WRITE) {
			end = sites[hi] + (uintptr_t)hlen;
			break;
		}
	}
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	/* From FTRT_ARCH_LEAD bytes before the first site: an arm64 site
	 * writes its literal there (never before its segment). */
	uintptr_t first = sites[lo] - FTRT_ARCH_LEAD < seg->start ? seg->start : sites[lo] - FTRT_ARCH_LEAD;
	uintptr_t plo = first & ~(page - 1), phi = (end + page - 1) & ~(page - 1);
	/* Executable too while writing: the pages may hold the code that is
	 * running now (this pass is in the same text segment). */
	if (mprotect((void *)plo, phi - plo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
		for (size_t i = lo; i < n; i++)
			count_unwritten(action(classify((const unsigned char *)sites[i], &len), sites[i], len, want[i]));
		return;
	}
	ftrt_pass_stats->pages += (phi - plo) / page;
	if (ahead)
		populate(plo, phi);
	for (size_t i = lo; i < n; i += BLOCK)
		patch_block(sites + i, want + i, n - i < BLOCK ? n - i : BLOCK, i == lo, ahead, plo, phi, page, seg->start);
	mprotect((void *)plo, phi - plo, seg->prot);
}

/*
 * The pass over a pre-patched file, or of a runtime loaded late
 * (pass.h): read each site of sites[0..n) (all inside one executable
 * segment) and count what it holds. A site must be
 * one NOP, or a call to the trampoline of the recorded tracer (`mode`);
 * anything else is counted skipped. Nothing is written, whatever is
 * found: the file is what ftpatch made it, and ftpatch verify, not the
 * program's start, is where a bad one is reported.
 */
static void check_segment(const uintptr_t *sites, size_t n, int mode)
{
	for (size_t i = 0; i < n; i++) {
		const unsigned char *ip = (const unsigned char *)sites[i];
		int len;
		enum ftrt_site_state st = ftrt_arch_classify(ip, &len);
		/* Loaded late, a compiler's call of a hook is as disabled as a
		 * NOP: it calls what the program was linked to (pass.h). */
		if (st == FTRT_SITE_NOP || (ftrt_pass_late && st == FTRT_SITE_CALL))
			ftrt_pass_stats->nops++;
		else if (mode > 0 && ftrt_arch_tramp_call(ip, &len, mode))
			ftrt_pass_stats->enabled++;
		else
			ftrt_pass_stats->skipped++;
	}
}

/*
 * Walk the sorted sites s[0..m) a segment at a time: each run of sites
 * inside one executable segment goes to patch_segment (want: what each
 * becomes) or, when check_mode is a tracer (or -1 for none), to
 * check_segment. Sites outside every executable segment are skipped.
 */

void ftrt_sites_walk(const uintptr_t *s, unsigned char *want, size_t m, int check_mode)
{
	for (size_t i = 0; i < m;) {
		struct seg_query q = { .addr = s[i] };
		dl_iterate_phdr(find_segment, &q);
		if (!q.found && ftrt_prologue_region(s[i], &q.seg.start, &q.seg.end)) {
			/* A trampoline of a site made at load (prologue.c). */
			q.seg.prot = PROT_READ | PROT_EXEC;
			q.found = 1;
		}
		if (!q.found || !(q.seg.prot & PROT_EXEC)) {
			ftrt_pass_stats->skipped++;
			i++;
			continue;
		}
		/* The run: the sites from s[i] on whose 8 bytes (what classifying
		 * a site reads) lie wholly inside the segment; s is sorted, so
		 * they end at the first beyond, found by binary search. */
		size_t j = i, hi = m;
		while (j < hi) {
			size_t mid = j + (hi - j) / 2;
			if (s[mid] <= q.seg.end - 8)
				j = mid + 1;
			else
				hi = mid;
		}
		if (j == i) {
			ftrt_pass_stats->skipped++;
			i++;
			continue;
		}
		ftrt_walk_seg_lo = q.seg.start;
		ftrt_walk_seg_hi = q.seg.end;
		if (check_mode)
			check_segment(s + i, j - i, check_mode);
		else
			patch_segment(s + i, want + i, j - i, &q.seg);
		i = j;
	}
}
