/*
 * The load-time pass over the site table.
 *
 * The linker gathers every object's __mcount_loc (recordmcount's, or
 * gcc's own -mrecord-mcount table) between __start___mcount_loc and
 * __stop___mcount_loc; in a PIE the loader has already filled in each
 * word's load address by the time this runs. The pass sorts the table
 * once, then turns every site into a NOP, checking each site's bytes
 * first: a site that holds anything but a call to our hooks or a NOP is
 * skipped and counted, never overwritten.
 *
 * Code pages are made writable only around the writes, only where a site
 * needs one, and given back the protection of their segment at once:
 * a program whose sites are all NOPs already (recordmcount --nop) never
 * has a writable code page. The pass runs from the program's
 * .preinit_array (lifetime.c), before any constructor and, in the
 * programs we serve, before any thread is started.
 *
 * A file pre-patched by `ftpatch enable` says so in its config record
 * (config.c): every site is already a NOP or a call into the runtime. With
 * neither FTRACE nor FTRACE_FILTER set, the pass then only reads: it
 * checks each site, counts it, and starts the tracer the record names. No
 * page is made writable, no byte of code is written. With either set, the
 * environment wins and the normal pass runs over the pre-patched sites.
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

#include "ftrt.h"
#include "graph.h"
#if defined(__x86_64__)
#include "x86_64/quick.h"
#endif

/* Weak: a program with no instrumented object has no table at all. */
extern const uintptr_t __start___mcount_loc[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___mcount_loc[] __attribute__((weak, visibility("hidden")));

struct ftrt_stats ftrt_stats;

static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Calls into the runtime that `ftpatch enable` writes (x86-64; the other
 * ports have none yet), to the module's own trampolines (ftrt_targets: in
 * the program, the runtime's; in a shared object, its stub's, which jump
 * into the runtime):
 *   e8 rel32      call ftrace_caller5 / ftrace_mcount_caller5 / ftrace_chain_caller5 / ftrace_stub   5 bytes
 *   67 e8 rel32   addr32 call ftrace_caller6 / ftrace_mcount_caller6 / ftrace_chain_caller6 / ftrace_stub  6
 * ftrt_arch_classify knows only the compiler's calls to the hooks; these
 * are recognised here so that the check of a pre-patched file can accept
 * them and the normal pass can turn them back into NOPs or other calls.
 *
 * Which of caller5, mcount_caller5 and chain_caller5 a site must call
 * depends on where it is in its function, which needs the symbol table:
 * ftpatch verify checks that; here any is accepted, as all are ours.
 */
#if defined(__x86_64__)
/* Whether the site at ip calls one of the module's trampolines that a
 * site of the tracer `mode` may call (mode 0: any of them); sets *len. */
static int tramp_call(const unsigned char *ip, int *len, int mode)
{
	int32_t rel;
	uintptr_t target;
	const uintptr_t *t = ftrt_targets;
	if (ip[0] == 0xe8) { /* call rel32 */
		__builtin_memcpy(&rel, ip + 1, 4);
		*len = 5;
	} else if (ip[0] == 0x67 && ip[1] == 0xe8) { /* addr32 call rel32 */
		__builtin_memcpy(&rel, ip + 2, 4);
		*len = 6;
	} else {
		return 0;
	}
	target = (uintptr_t)ip + (uintptr_t)*len + (uintptr_t)(intptr_t)rel;
	if (target == t[FTRT_T_STUB])
		return mode == 0 || mode == FTRT_NOP;
	if (mode == FTRT_NOP)
		return 0;
	if (*len == 5)
		return target == t[FTRT_T_CALLER5] || target == t[FTRT_T_MCALLER5] || target == t[FTRT_T_CHAIN5];
	return target == t[FTRT_T_CALLER6] || target == t[FTRT_T_MCALLER6] || target == t[FTRT_T_CHAIN6];
}
#else
static int tramp_call(const unsigned char *ip, int *len, int mode)
{
	(void)ip, (void)len, (void)mode;
	return 0;
}
#endif

/* What a site holds, with the runtime's own calls counted as calls. */
static enum ftrt_site_state classify(const unsigned char *ip, int *len)
{
	enum ftrt_site_state st = ftrt_arch_classify(ip, len);
	if (st == FTRT_SITE_UNKNOWN && tramp_call(ip, len, 0))
		return FTRT_SITE_CALL;
	return st;
}

/*
 * The config record, if it is one this runtime understands. Read through
 * a pointer the compiler cannot see through: the record is a const
 * object initialised in config.c, but its bytes at run time are what
 * ftpatch wrote into the file, not that initialiser.
 */
static const struct ftrt_config *config(const struct ftrt_config *c)
{
	static const char magic[8] = FTRT_CFG_MAGIC;
	if (!c)
		return NULL;
	__asm__("" : "+r"(c));
	if (__builtin_memcmp(c->magic, magic, sizeof magic) != 0 || c->size != sizeof *c)
		return NULL;
	return c;
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

/* Whether the NOP at a site is one this CPU runs: any NOP when the P6
 * form was chosen (it is the most general); otherwise exactly the chosen
 * fallback. */
static const char *nop_style = "p6";
static int runnable_nop(uintptr_t ip, int len)
{
	return nop_style[0] == 'p' || __builtin_memcmp((const void *)ip, ftrt_arch_nop(len), len == 6 ? 6 : 5) == 0;
}

/* What the pass does with a site, once classified. */
enum {
	KEEP,      /* a NOP this CPU runs, and no call wanted there: counted, not written */
	SKIP,      /* bytes no site may hold: counted, never written */
	FAIL,      /* to write, but outside the pages made writable: counted failed, not written */
	DEFER,     /* WANT_AUTO's site other than a call of __fentry__: left for the symbol table (settle) */
	WRITE,     /* a call (the compiler's or ours) or a run of NOPs: becomes what want[] says */
	QUICK,     /* a WRITE known inline to be a 5-byte call of a hook, to become a NOP or a call of the tracer (x86_64/quick.h) */
	WRITE_NOP, /* a NOP that must become a call, or another NOP */
	RECHECK,   /* starts within 6 bytes of the site before it: classified again after that one is written */
};

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
static int resolve(unsigned char *want, int a, const unsigned char *ip)
{
	if (*want != WANT_AUTO || a < WRITE)
		return a;
	if (a != WRITE_NOP && ftrt_arch_entry_call(ip)) {
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
 * segment, below which nothing is read.
 */
static int enable_as(int want, uintptr_t ip, int len, uintptr_t seg_lo)
{
	return want == WANT_ENTRY && ftrt_arch_chain(ip, len, seg_lo) ? WANT_CHAIN : want;
}

/* Count a site the pass leaves as it is: one to write counts failed. */
static void count_unwritten(int act)
{
	if (act == KEEP)
		ftrt_stats.nops++;
	else if (act == SKIP)
		ftrt_stats.skipped++;
	else
		ftrt_stats.failed++;
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
 * each is written and read back. A site that starts within 6 bytes of
 * the one before (sites do not overlap: the table is bogus) is classified
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
	/* No site is at an address below 6: prev = 0 compares as far away. */
	uintptr_t rlo = 0, rhi = 0, prev = first ? 0 : sites[-1];
#if defined(__x86_64__)
	const uintptr_t fentry = ftrt_targets[FTRT_T_FENTRY], mcount = ftrt_targets[FTRT_T_MCOUNT];
#endif
	for (size_t i = 0; i < n; i++) {
		uintptr_t ip = sites[i];
		int len = 6, a = RECHECK;
		if (ip - prev >= 6) {
#if defined(__x86_64__)
			/* The common site, without a call: a 5-byte call of a
			 * hook (not one of a nested function, before pop %r10:
			 * enable_as tells that on the general path). */
			uint64_t v = ftrt_quick_load(ip);
			if (ftrt_quick_call(ip, v, fentry, mcount) && !ftrt_quick_pops_r10(v)) {
				len = 5, a = QUICK;
				if (want[i] == WANT_AUTO && ftrt_quick_target(ip, v) == fentry)
					want[i] = WANT_ENTRY; /* resolve's answer, from the call at hand */
				else if (want[i] == WANT_AUTO)
					want[i] = WANT_UNKNOWN, a = DEFER;
			} else
#endif
				a = resolve(&want[i], action(classify((const unsigned char *)ip, &len), ip, len, want[i]),
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

	/* Counted here and added once: ftrt_stats is a global, reached
	 * through the GOT in this position-independent code. */
	uint64_t patched = 0, enabled = 0, failed = 0;
	const unsigned char *nop5 = ftrt_arch_nop(5), *nop6 = ftrt_arch_nop(6);
#if defined(__x86_64__)
	uint64_t nop5v = 0;
	memcpy(&nop5v, nop5, 5);
	/* What an enabled QUICK site calls (0: it jumps to a trampoline of
	 * its own, which the general path below builds). */
	const uintptr_t quick_entry = ftrt_arch_call_target(5, WANT_ENTRY), quick_mcount = ftrt_arch_call_target(5, WANT_MCOUNT);
#endif
	for (size_t i = 0; i < n; i++) {
		unsigned char *ip = (unsigned char *)sites[i];
		int len = lens[i], a = verdict[i];
#if defined(__x86_64__)
		if (a == QUICK) {
			uint64_t insn = nop5v;
			uintptr_t target = want[i] == WANT_ENTRY ? quick_entry : quick_mcount;
			int64_t rel = (int64_t)(target - (sites[i] + 5));
			if (want[i])
				insn = 0xe8 | (uint64_t)(uint32_t)(int32_t)rel << 8; /* e8 rel32: call rel32 */
			if (!want[i] || (target && rel == (int32_t)rel)) {
				if (!ftrt_quick_put5(sites[i], insn))
					failed++;
				else if (want[i])
					enabled++;
				else
					patched++;
				continue;
			}
			a = WRITE; /* a trampoline to build, or a tracer out of reach: below */
		}
#endif
		if (a == RECHECK) {
			a = resolve(&want[i], action(classify(ip, &len), sites[i], len, want[i]), ip);
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
		const unsigned char *bytes = len == 6 ? nop6 : nop5;
		if (want[i]) {
			if (ftrt_arch_call((uintptr_t)ip, len, enable_as(want[i], sites[i], len, seg_lo), call) == 0) {
				bytes = call;
			} else {
				failed++; /* trampoline out of reach: the site stays, or becomes, a NOP */
				if (a == WRITE_NOP && runnable_nop(sites[i], len)) {
					ftrt_stats.nops++;
					continue;
				}
			}
		}
		/* Constant sizes, so the copy and the check compile to a few
		 * moves (a libc call per site costs more than the pass's budget). */
		int ok;
		if (len == 6) {
			__builtin_memcpy(ip, bytes, 6);
			__asm__ volatile("" ::: "memory"); /* read back what was written */
			ok = __builtin_memcmp(ip, bytes, 6) == 0;
		} else {
			__builtin_memcpy(ip, bytes, 5);
			__asm__ volatile("" ::: "memory");
			ok = __builtin_memcmp(ip, bytes, 5) == 0;
		}
		if (!ok)
			failed++;
		else if (bytes == call)
			enabled++;
		else
			patched++;
	}
	ftrt_stats.patched += patched;
	ftrt_stats.enabled += enabled;
	ftrt_stats.failed += failed;
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
	uintptr_t plo = sites[lo] & ~(page - 1), phi = (end + page - 1) & ~(page - 1);
	/* Executable too while writing: the pages may hold the code that is
	 * running now (this pass is in the same text segment). */
	if (mprotect((void *)plo, phi - plo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
		for (size_t i = lo; i < n; i++)
			count_unwritten(action(classify((const unsigned char *)sites[i], &len), sites[i], len, want[i]));
		return;
	}
	ftrt_stats.pages += (phi - plo) / page;
	if (ahead)
		populate(plo, phi);
	for (size_t i = lo; i < n; i += BLOCK)
		patch_block(sites + i, want + i, n - i < BLOCK ? n - i : BLOCK, i == lo, ahead, plo, phi, page, seg->start);
	mprotect((void *)plo, phi - plo, seg->prot);
}

/*
 * The pass over a pre-patched file: read each site of sites[0..n) (all
 * inside one executable segment) and count what it holds. A site must be
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
		if (ftrt_arch_classify(ip, &len) == FTRT_SITE_NOP)
			ftrt_stats.nops++;
		else if (mode > 0 && tramp_call(ip, &len, mode))
			ftrt_stats.enabled++;
		else
			ftrt_stats.skipped++;
	}
}

/*
 * Walk the sorted sites s[0..m) a segment at a time: each run of sites
 * inside one executable segment goes to patch_segment (want: what each
 * becomes) or, when check_mode is a tracer (or -1 for none), to
 * check_segment. Sites outside every executable segment are skipped.
 */
static void walk(const uintptr_t *s, unsigned char *want, size_t m, int check_mode)
{
	for (size_t i = 0; i < m;) {
		struct seg_query q = { .addr = s[i] };
		dl_iterate_phdr(find_segment, &q);
		if (!q.found || !(q.seg.prot & PROT_EXEC)) {
			ftrt_stats.skipped++;
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
			ftrt_stats.skipped++;
			i++;
			continue;
		}
		if (check_mode)
			check_segment(s + i, j - i, check_mode);
		else
			patch_segment(s + i, want + i, j - i, &q.seg);
		i = j;
	}
}

/*
 * A list of globs, comma-separated (FTRACE_FILTER, FTRACE_GRAPH_FUNCS,
 * FTRACE_GRAPH_NOTRACE): the one at p into glob, NUL-terminated (empty
 * when it is, or is too long to match anything: skipped); returns where
 * the next begins, or NULL past the last.
 */
static const char *glob_next(const char *p, char glob[static 256])
{
	if (!*p)
		return NULL;
	const char *end = strchr(p, ',');
	size_t len = end ? (size_t)(end - p) : strlen(p);
	glob[0] = 0;
	if (len < 256) {
		memcpy(glob, p, len);
		glob[len] = 0;
	}
	return p + len + (end ? 1 : 0);
}

/*
 * Whether a list of globs (glob_next) chooses a function: it matches one
 * of the plain globs (or there are none) and none of the `!glob` ones. A
 * C++ function matches by its symbol or by its demangled name (dem, when
 * given), as ftpatch report prints it. An empty list chooses every
 * function. hits, when given, gets bit k set for each of the first 64
 * globs, k counting from 0, that is plain and matches a function the
 * list chooses.
 */
static int filter_match(const char *list, const char *name, const char *dem, uint64_t *hits)
{
	if (!list || !*list)
		return 1;
	int any_plain = 0, plain_hit = 0, excluded = 0, k = 0;
	uint64_t hit_globs = 0;
	char glob[256];
	for (const char *p = list; (p = glob_next(p, glob)) != NULL; k++) {
		if (!glob[0])
			continue;
		const char *g = glob[0] == '!' ? glob + 1 : glob;
		int hit = fnmatch(g, name, 0) == 0 || (dem && fnmatch(g, dem, 0) == 0);
		if (glob[0] == '!') {
			excluded |= hit;
		} else {
			any_plain = 1;
			plain_hit |= hit;
			if (hit && k < 64)
				hit_globs |= 1ull << k;
		}
	}
	if (excluded)
		return 0;
	if (hits)
		*hits |= hit_globs;
	return !any_plain || plain_hit;
}

/* libstdc++'s demangler: linked in a C++ program, absent (NULL) in C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status) __attribute__((weak));

/* Whether a list of globs has C++ punctuation (`::`, `(`, `<`, `~`, a
 * space), for a demangled name to match where its symbol does not. */
static int cxx_globs(const char *list)
{
	return list && strpbrk(list, ":(<~ ") != NULL;
}

static uint64_t graph_hits; /* FTRACE_GRAPH_FUNCS's plain globs that named a traced function (filter_match) */

/* A duration: digits, an optional fraction, a unit (ns, us, ms, s; ns
 * when none). 0 when malformed. */
static uint64_t parse_duration(const char *s)
{
	uint64_t whole = 0, frac = 0, div = 1, mult;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		whole = whole * 10 + (uint64_t)(*p++ - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (div < 1000000000) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				div *= 10;
			}
	if (!strcmp(p, "") || !strcmp(p, "ns"))
		mult = 1;
	else if (!strcmp(p, "us"))
		mult = 1000;
	else if (!strcmp(p, "ms"))
		mult = 1000000;
	else if (!strcmp(p, "s"))
		mult = 1000000000;
	else
		return 0;
	return whole * mult + frac * mult / div;
}

static void say(const char *msg)
{
	write(2, msg, strlen(msg));
}

/* FTRACE_DEPTH=N: graph at most N nested calls. FTRACE_THRESH=T (ns, or
 * with us/ms/s): keep no call shorter than T that called nothing traced. */
static void tracer_options(void)
{
	const char *depth = ftrt_env("FTRACE_DEPTH"), *thresh = ftrt_env("FTRACE_THRESH");
	if (depth && *depth) {
		long d = strtol(depth, NULL, 10);
		if (d > 0 && d < (long)ftrt_max_depth)
			ftrt_max_depth = (unsigned)d;
	}
	if (thresh && *thresh && ftrt_mode == FTRT_GRAPH) {
		uint64_t ns = parse_duration(thresh);
		if (ns)
			ftrt_thresh_tsc = ftrt_ns_to_tsc(ns);
		else
			say("ftrt: FTRACE_THRESH: want a duration like 500ns, 2.5us, 1ms; ignored\n");
	}
}

/*
 * Process-wide choices, made once whichever module's pass comes first:
 * what the environment asks, the NOPs this CPU runs, the trace directory.
 */
static struct {
	int read;
	const char *mode, *filter; /* FTRACE, FTRACE_FILTER */
	const char *graph_funcs, *graph_notrace; /* FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE: NULL when unset or empty */
	int env;                   /* FTRACE or FTRACE_FILTER is set: it overrides every config record */
	int tracer;                /* FTRACE's tracer, 0 when unset or not understood */
	int probed;                /* nop_style chosen */
	int trace;                 /* 0: not tried; 1: open; -1: could not be made */
} env;

/*
 * Whether function_graph keeps the program's exceptions working: not
 * when the program has C++'s unwinder linked in statically, which the
 * runtime cannot hook (unwind.c), and a throw through a graphed frame
 * would end it. Then it is traced with function instead, and told so.
 * A program without unwind.c (no C++ catch) has no such throw.
 */
static int graph_safe(void)
{
	if (!ftrt_unwind_hooked || ftrt_unwind_hooked())
		return 1;
	say("ftrt: function_graph: this statically linked program's C++ exceptions cannot be followed through graphed calls; "
	    "tracing with function instead\n");
	return 0;
}

static void read_env(void)
{
	if (env.read)
		return;
	env.read = 1;
	ftrt_env_capture();
	env.mode = ftrt_env("FTRACE");
	env.filter = ftrt_env("FTRACE_FILTER");
	env.env = (env.mode && *env.mode) || (env.filter && *env.filter);
	env.graph_funcs = ftrt_env("FTRACE_GRAPH_FUNCS");
	env.graph_notrace = ftrt_env("FTRACE_GRAPH_NOTRACE");
	if (env.graph_funcs && !*env.graph_funcs)
		env.graph_funcs = NULL;
	if (env.graph_notrace && !*env.graph_notrace)
		env.graph_notrace = NULL;
	if (env.mode && *env.mode) {
		if (strcmp(env.mode, FTRT_TRACER_FUNCTION) == 0)
			env.tracer = FTRT_FUNCTION;
		else if (strcmp(env.mode, FTRT_TRACER_GRAPH) == 0)
			env.tracer = FTRT_GRAPH;
		else if (strcmp(env.mode, FTRT_TRACER_NOP) == 0)
			env.tracer = FTRT_NOP;
		else
			say("ftrt: FTRACE: want function, function_graph or nop; tracing nothing\n");
	}
}

/*
 * What the pass makes of a function by its name (ftrt_symbols_mark's
 * pick): PICK_TRACE when FTRACE_FILTER chooses it, with, when the
 * subtree filters are on, its mark (MARK_NOTRACE, which wins, or
 * MARK_CHOSEN). A mangled name is demangled only when a list has C++
 * punctuation (cxx_globs): demangling costs a microsecond and an
 * allocation per function.
 */
static int pick(const char *name)
{
	static int cxx = -1;
	if (cxx < 0)
		cxx = __cxa_demangle &&
		      (cxx_globs(env.filter) || (ftrt_subtree && (cxx_globs(env.graph_funcs) || cxx_globs(env.graph_notrace))));
	char *dem = NULL;
	int status;
	if (cxx && name[0] == '_' && name[1] == 'Z') {
		dem = __cxa_demangle(name, NULL, NULL, &status);
		if (status != 0) {
			free(dem);
			dem = NULL;
		}
	}
	int v = 0;
	if (filter_match(env.filter, name, dem, NULL)) {
		v = PICK_TRACE;
		int chosen = ftrt_subtree && env.graph_funcs && filter_match(env.graph_funcs, name, dem, &graph_hits);
		if (ftrt_subtree && env.graph_notrace && filter_match(env.graph_notrace, name, dem, NULL))
			v |= MARK_NOTRACE;
		else if (chosen)
			v |= MARK_CHOSEN;
	}
	free(dem);
	return v;
}

/*
 * The subtree filters, once the process's tracer is known: on under
 * function_graph (subtree.c); under function they mean nothing, which is
 * said once.
 */
static void subtree_setup(void)
{
	static int done;
	if (done || (!env.graph_funcs && !env.graph_notrace) || !ftrt_mode)
		return;
	done = 1;
	if (ftrt_mode == FTRT_GRAPH) {
		ftrt_subtree_funcs = env.graph_funcs;
		ftrt_subtree_notrace = env.graph_notrace;
		ftrt_subtree = SUBTREE_ON | (env.graph_funcs ? SUBTREE_FUNCS : 0);
	} else if (ftrt_mode == FTRT_FUNCTION) {
		say("ftrt: FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE choose what function_graph records; "
		    "the function tracer records every call of the traced functions\n");
	}
}

void ftrt_graph_funcs_check(void)
{
	if (!(ftrt_subtree & SUBTREE_FUNCS) || !ftrt_tracing())
		return;
	char glob[256];
	int k = 0;
	for (const char *p = env.graph_funcs; (p = glob_next(p, glob)) != NULL; k++)
		if (glob[0] && glob[0] != '!' && k < 64 && !(graph_hits >> k & 1)) {
			char buf[400];
			int n = snprintf(buf, sizeof buf, "ftrt: FTRACE_GRAPH_FUNCS: \"%s\" matches no traced function (of those loaded at start)\n", glob);
			if (n > 0)
				write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
		}
}

/* The trace location ftpatch enable --trace-dir recorded in the
 * program's config record: an absolute path, or NULL. */
static const char *recorded_dir(void)
{
	const struct ftrt_config *c = config(&ftrt_config);
	if (!c || c->trace_dir[0] != '/' || !__builtin_memchr(c->trace_dir, 0, sizeof c->trace_dir))
		return NULL;
	return c->trace_dir;
}

/*
 * The trace directory, made once, by the first module that traces, with
 * the tracer options read then: FTRACE_OUT, else the location the
 * program's record names, else ./ftrace.data. A secure-execution process
 * (setuid...) reads no FTRACE_OUT, and traces only into the recorded
 * location, which dir.c re-checks; with none, it writes nothing, and
 * says nothing (its stderr is another user's).
 */
static int start_trace(void)
{
	if (!env.trace) {
		const char *out = ftrt_env("FTRACE_OUT"), *rec = recorded_dir(), *why = "";
		const char *dir = out && *out ? out : rec ? rec : "ftrace.data";
		if (ftrt_secure() && !rec)
			env.trace = -1;
		else
			env.trace = ftrt_trace_start(dir, dir == rec, &why) == 0 ? 1 : -1;
		if (env.trace > 0) {
			tracer_options();
			ftrt_trace_go();
		} else if (!ftrt_secure() || rec) {
			char buf[PATH_MAX + 200];
			int n = snprintf(buf, sizeof buf, "ftrt: the trace directory %s %s; tracing nothing\n", dir, why);
			if (n > 0)
				write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
		}
	}
	return env.trace > 0 ? 0 : -1;
}

/*
 * The process's tracer, given what this module asks for: the first
 * module to ask sets it (the program comes first); a later module that
 * asks for another is served by the process's, and told so.
 */
static int adopt(int tracer, const char *name)
{
	if (!tracer)
		return ftrt_mode;
	if (!ftrt_mode)
		ftrt_mode = tracer == FTRT_GRAPH && !graph_safe() ? FTRT_FUNCTION : tracer;
	else if (tracer != ftrt_mode) {
		char buf[600];
		int n = snprintf(buf, sizeof buf, "ftrt: %s asks for another tracer than the process runs; its sites serve the process's\n",
				 name);
		if (n > 0)
			write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
	}
	return ftrt_mode;
}

static void report(const struct ftrt_mod *md, size_t nsites)
{
	char buf[4600];
	int n = snprintf(buf, sizeof buf,
			 "ftrt: %s%s%llu sites: %llu patched to NOPs, %llu NOPs already, %llu skipped, %llu failed; "
			 "%llu empty and %llu duplicate table entries; %llu traced, %llu not traceable; %s NOPs; in %llu ns; "
			 "%llu code pages written; config %s\n",
			 md->path ? md->path : "", md->path ? ": " : "", (unsigned long long)nsites,
			 (unsigned long long)ftrt_stats.patched, (unsigned long long)ftrt_stats.nops,
			 (unsigned long long)ftrt_stats.skipped, (unsigned long long)ftrt_stats.failed,
			 (unsigned long long)ftrt_stats.zero, (unsigned long long)ftrt_stats.dups,
			 (unsigned long long)ftrt_stats.enabled, (unsigned long long)ftrt_stats.unsupported, nop_style,
			 (unsigned long long)ftrt_stats.init_ns, (unsigned long long)ftrt_stats.pages,
			 ftrt_config_state(ftrt_stats.config));
	if (n > 0)
		write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/*
 * A module without a site table. Nothing to do, unless ftpatch enable
 * found its sites by decoding function entries and enabled some: they
 * call the runtime already, and can be neither checked nor changed here
 * (no table says where they are), so the tracer the record names, or
 * FTRACE's, is started for them. FTRACE_FILTER cannot apply, nor can
 * the subtree filters name its functions.
 */
static void no_table(struct ftrt_mod *md)
{
	const struct ftrt_config *cfg = config(md->desc->config);
	if (!cfg || (cfg->flags & (FTRT_CFG_PATCHED | FTRT_CFG_NOTABLE)) != (FTRT_CFG_PATCHED | FTRT_CFG_NOTABLE) ||
	    cfg->tracer > FTRT_NOP || cfg->enabled == 0)
		return;
	ftrt_stats.config = env.env ? FTRT_CFG_STATE_OVERRIDDEN : FTRT_CFG_STATE_PATCHED;
	ftrt_stats.enabled = cfg->enabled; /* as recorded: there is no table to count them from */
	int tracer = adopt(env.tracer ? env.tracer : (int)cfg->tracer, md->path ? md->path : "the program");
	subtree_setup();
	if (tracer == FTRT_FUNCTION || tracer == FTRT_GRAPH)
		start_trace();
}

/* The symbol table could not be read: say so, and what is traced. */
static void unreadable(const struct ftrt_mod *md, const char *what)
{
	char buf[600];
	int len = snprintf(buf, sizeof buf, "ftrt: cannot read the symbol table of %s (stripped?); tracing %s\n",
			   md->path ? md->path : "the program", what);
	if (len > 0)
		write(2, buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
}

/*
 * With the module's symbol table open: want[i] for each of its sorted
 * sites s[0..m) as FTRACE_FILTER says of its function, and, with the
 * subtree filters on, the sites they mark kept in the module's table
 * (subtree.c). 0, or -1 when there was no memory for it.
 */
static int by_name(const struct ftrt_mod *md, const uintptr_t *s, size_t m, unsigned char *want)
{
	unsigned char *marks = NULL;
	if (ftrt_subtree && m) {
		marks = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (marks == MAP_FAILED)
			return -1;
	}
	int r = ftrt_symbols_mark(md->bias, s, m, want, marks, pick);
	if (r == 0 && marks)
		r = ftrt_subtree_add(md->owner, md->lo, md->hi, s, want, marks, m);
	if (marks)
		munmap(marks, m);
	return r;
}

/*
 * What each of the module's sorted sites s[0..m) becomes when a tracer
 * is asked for: want[i] = WANT_ENTRY or WANT_MCOUNT for the functions
 * FTRACE_FILTER names (default all), WANT_NOP for the rest, and the
 * trace directory made when any is traced; with the subtree filters on
 * (function_graph), the sites they mark (by_name). Returns 1 when, with
 * no filter, that is left to the walk and settle (WANT_AUTO).
 *
 * With no filter (and no subtree filter), no name is needed, and a site
 * that calls __fentry__ is at a function's entry by construction: the
 * walk enables those as it meets them (resolve), and the symbol table is
 * read after it only if some other site needs it (settle: -pg's calls of
 * mcount, after a prologue only a function's start tells; NOPs, from
 * recordmcount --nop or -fpatchable-function-entry). Reading it is most
 * of the pass's cost
 * when every site is traced; and a stripped program built with -mfentry
 * is traced whole (its trace then shows addresses, or names from an
 * unstripped copy: replay --exe). A site of __fentry__ in code no
 * function symbol covers is traced too, which the symbol table would not
 * allow.
 */
static int choose(const struct ftrt_mod *md, const uintptr_t *s, size_t m, unsigned char *want)
{
	const char *filter = env.filter && *env.filter ? env.filter : NULL;
	subtree_setup();
	if (!filter && !ftrt_subtree) {
		int go = ftrt_mode == FTRT_NOP || start_trace() == 0;
		memset(want, go ? WANT_AUTO : WANT_NOP, m);
		return go;
	}
	if (ftrt_symbols_open(md->path ? md->path : "/proc/self/exe") != 0)
		unreadable(md, "none of it");
	else if ((ftrt_mode == FTRT_NOP || start_trace() == 0) && by_name(md, s, m, want) != 0) {
		say("ftrt: no memory for the load-time pass's site index; tracing nothing\n");
		memset(want, WANT_NOP, m);
	}
	ftrt_symbols_close();
	return 0;
}

/*
 * The subtree filters' marks of a pre-patched module's sites s[0, m),
 * whose record says which are enabled: every function its symbol table
 * names is taken for traced. Before the trace starts, as the enabled
 * sites call the tracer from then on.
 */
static void mark_patched(const struct ftrt_mod *md, const uintptr_t *s, size_t m)
{
	unsigned char *want = mmap(NULL, m ? m : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (want == MAP_FAILED || ftrt_symbols_open(md->path ? md->path : "/proc/self/exe") != 0)
		unreadable(md, "the sites its record enables, whose functions FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE cannot name");
	else if (by_name(md, s, m, want) != 0)
		say("ftrt: no memory for the subtree filters' table of sites; FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE name none of them\n");
	ftrt_symbols_close();
	if (want != MAP_FAILED)
		munmap(want, m ? m : 1);
}

/*
 * After the walk of a table chosen WANT_AUTO: the sites it left as they
 * were (WANT_UNKNOWN) get what the symbol table says, in a second walk
 * over them alone. Until then they hold what they held at start: the
 * compiler's call of mcount (a stub that returns) or a NOP.
 */
static void settle(const struct ftrt_mod *md, const uintptr_t *s, size_t m, const unsigned char *want)
{
	size_t k = 0;
	for (size_t i = 0; i < m; i++)
		k += want[i] == WANT_UNKNOWN;
	if (k == 0)
		return;
	size_t bytes = k * (sizeof(uintptr_t) + 1);
	uintptr_t *s2 = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s2 == MAP_FAILED) {
		ftrt_stats.failed += k;
		return;
	}
	unsigned char *w2 = (unsigned char *)(s2 + k);
	for (size_t i = 0, j = 0; i < m; i++)
		if (want[i] == WANT_UNKNOWN)
			s2[j] = s[i], w2[j++] = WANT_UNKNOWN;
	if (ftrt_symbols_open(md->path ? md->path : "/proc/self/exe") != 0)
		unreadable(md, ftrt_stats.enabled ? "only its sites that call __fentry__" : "none of it");
	else if (ftrt_symbols_mark(md->bias, s2, k, w2, NULL, NULL) != 0)
		say("ftrt: no memory for the load-time pass's site index; tracing its sites that call __fentry__ alone\n");
	ftrt_symbols_close();
	for (size_t j = 0; j < k; j++)
		if (w2[j] == WANT_UNKNOWN)
			w2[j] = WANT_NOP; /* in no function, or unreadable */
	walk(s2, w2, k, 0);
	munmap(s2, bytes);
}

/*
 * The pass over one module's table (the program's, or a shared object's
 * at its registration): sort it, then either only check it (a file
 * pre-patched by ftpatch enable, with no environment to override it) or
 * turn every site into a NOP or a call to the tracer. Its counts go to
 * ftrt_stats and are kept in md->stats.
 */
void ftrt_pass(struct ftrt_mod *md)
{
	const struct ftrt_module *mod = md->desc;
	const char *name = md->path ? md->path : "the program";
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(&ftrt_stats, 0, sizeof ftrt_stats);
	ftrt_targets = mod->targets;
	ftrt_arch_begin(md->owner);
	read_env();
	size_t n = mod->start && mod->stop > mod->start ? (size_t)(mod->stop - mod->start) : 0, m = 0;
	const uintptr_t *s = NULL;
	uintptr_t *copy = NULL; /* the table sorted, when it is not as linked */
	unsigned char *want = NULL;
	if (n == 0) {
		no_table(md);
		goto out;
	}
	ftrt_stats.entries = n;
	/* Each object's table is in address order and the linker lays the
	 * objects out in the order it gathers their tables, so the whole table
	 * is usually sorted already, with no zero or repeated word: then it is
	 * read where it is (a copy costs a page fault per 512 sites). */
	s = mod->start;
	m = n;
	size_t clean = s[0] != 0;
	for (size_t i = 1; i < n && clean; i++)
		clean = s[i - 1] < s[i];
	if (!clean) {
		uintptr_t *c = mmap(NULL, n * sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED) {
			ftrt_stats.failed = n;
			goto out;
		}
		copy = c;
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (mod->start[i])
				c[k++] = mod->start[i];
			else
				ftrt_stats.zero++;
		}
		size_t unsorted = 0;
		for (size_t i = 1; i < k && !unsorted; i++)
			unsorted = c[i - 1] > c[i];
		if (unsorted)
			qsort(c, k, sizeof *c, cmp_addr);
		m = 0;
		for (size_t i = 0; i < k; i++) {
			if (m && c[m - 1] == c[i])
				ftrt_stats.dups++;
			else
				c[m++] = c[i];
		}
		s = c;
	}

	/*
	 * A pre-patched file, and nothing in the environment to say otherwise:
	 * check, start the recorded tracer, write nothing. The record must
	 * count the sites this table holds; one that does not was written
	 * for another table (the file changed after ftpatch), and is ignored.
	 */
	const struct ftrt_config *cfg = config(mod->config);
	if (cfg && (cfg->flags & FTRT_CFG_PATCHED)) {
		if (cfg->sites != m || cfg->tracer > FTRT_NOP) {
			char buf[600];
			int len = snprintf(buf, sizeof buf,
					   "ftrt: %s: .ftrt_config does not match the site table (changed after ftpatch enable?); ignored\n", name);
			ftrt_stats.config = FTRT_CFG_STATE_MISMATCH;
			if (len > 0)
				write(2, buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
		} else if (env.env) {
			ftrt_stats.config = FTRT_CFG_STATE_OVERRIDDEN;
		} else {
			ftrt_stats.config = FTRT_CFG_STATE_PATCHED;
			int tracer = (int)cfg->tracer;
			adopt(tracer, name);
			walk(s, NULL, m, tracer ? tracer : -1);
			/* The enabled sites stay calls; ftrt_entry returns at once
			 * while no trace is open. */
			if (tracer == FTRT_FUNCTION || tracer == FTRT_GRAPH) {
				subtree_setup();
				if (ftrt_subtree)
					mark_patched(md, s, m);
				start_trace();
			}
			goto out;
		}
	}
	if (!env.probed) {
		env.probed = 1;
		nop_style = ftrt_arch_probe(ftrt_env("FTRACE_NOP"));
	}

	/* What to trace: FTRACE=function, function_graph or nop (or, when
	 * only FTRACE_FILTER is set in a pre-patched file, the tracer it
	 * records), the functions FTRACE_FILTER names (default all), into
	 * FTRACE_OUT (default ./ftrace.data). */
	want = mmap(NULL, m ? m : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (want == MAP_FAILED) {
		want = NULL;
		ftrt_stats.failed = m;
		goto out;
	}
	int tracer = env.tracer;
	if (!(env.mode && *env.mode) && ftrt_stats.config == FTRT_CFG_STATE_OVERRIDDEN)
		tracer = (int)cfg->tracer;
	int deferred = tracer && adopt(tracer, name) && choose(md, s, m, want);
	walk(s, want, m, 0);
	if (deferred)
		settle(md, s, m, want);
	ftrt_arch_seal();
out:
	if (want)
		munmap(want, m ? m : 1);
	if (copy)
		munmap(copy, n * sizeof *copy);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ftrt_stats.init_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	md->stats = ftrt_stats;
	if (ftrt_env("FTRACE_DEBUG"))
		report(md, m);
}

/*
 * The program's own module: its table, its config record, and the
 * runtime's hooks and trampolines, which its sites call directly.
 */
static const struct ftrt_module self = {
	.size = sizeof self,
	.version = FTRT_MODULE_VERSION,
	.start = __start___mcount_loc,
	.stop = __stop___mcount_loc,
	.config = &ftrt_config,
#if defined(__x86_64__)
	.targets = FTRT_TARGETS,
#else
	.targets = { [FTRT_T_FENTRY] = (uintptr_t)__fentry__, [FTRT_T_MCOUNT] = (uintptr_t)mcount },
#endif
};

/*
 * Run from the program's .preinit_array (lifetime.c), before any
 * initialiser of the program or of a shared object; a shared object's
 * registration calls it too, and finds it done. The link flags name
 * ftrt_init as undefined (-u), which pulls this object (and with it the
 * trace, and the preinit entry) out of the archive even into a program
 * whose sites call no hook (-fpatchable-function-entry).
 */
void ftrt_init(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	ftrt_register_self(&self);
}
