/*
 * Library calls (FTRACE_LIBCALL=1): a module's calls of shared objects'
 * functions, traced where it makes them, by redirecting the module's own
 * GOT slots. The code is never written for this.
 *
 * A module calls a function it does not define through a slot of its
 * global offset table: its PLT stub jumps through a JUMP_SLOT, -fno-plt
 * code calls through a GLOB_DAT. After the module's pass, each such slot
 * of a function the filter chooses (FTRACE_FILTER, as the program's own)
 * is pointed at a stub of its own (arch/libstub.h), which enters the
 * tracers' common entry (tracers/<isa>/libcall.S) with the slot's index
 * in the table below; the entry records the call under the slot's
 * address, as a site's is recorded under the site's, and goes on to the
 * function. ftpatch names the slot from the module's relocations, by
 * the same rule (elfx.File.LibCall).
 *
 * The function: what the slot holds when it is already bound (-z now,
 * GLOB_DAT, a lazy slot called before); a lazy slot not yet bound holds
 * its PLT stub's way into the resolver, so the function is looked up
 * here as the loader would, by name and version, in the global scope
 * (dlvsym, dlsym: an IFUNC's resolver runs as the loader's would), else
 * in the module's own. A slot whose function is not found is left as
 * the loader left it.
 *
 * Functions that return twice or switch stacks (vfork, clone, the
 * setjmp and context families), and those that walk the stack
 * (backtrace, the unwinder's), whose return a hook would break, are
 * recorded as plain calls, their returns never hooked (libslots.c's plain_names);
 * those the C++ runtime and the start-up rely on are left alone
 * (libslots.c's alone_names). Functions that never return (exit, abort, longjmp,
 * pthread_exit, __cxa_throw) are traced as any: their calls are left
 * open, then unwound or running at the end, as a traced function's
 * that never returns.
 *
 * Writing: a slot in the module's RELRO range (read-only since its
 * relocation) through the runtime's code writer (arch/text.c), the
 * module's other slots with an atomic store; stubs are written in pages
 * that are only writable, then made only executable, before any slot
 * points at them, and are unmapped when the module is unloaded (nothing
 * runs its code, nor calls through its slots, then).
 *
 * Start-up code (the module's pass): libc is used freely.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "arch/libstub.h"
#include "arch/poke.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "libcall.h"
#include "libslots.h"
#include "pass.h"
#include "patch.h"
#include "subtree.h"

int ftrt_libcall_wanted(void)
{
	const char *v = ftrt_env(ENV_LIBCALL);
	if (!v)
		return 0;
	if (strcmp(v, "1") == 0)
		return LIBCALL_ON;
	return strcmp(v, "nest") == 0 ? LIBCALL_NEST : 0;
}

int ftrt_libcalls_on(int want)
{
	int mode = __atomic_load_n(&ftrt_mode, __ATOMIC_RELAXED), v = ftrt_libcall_wanted();
	return (mode == FTRT_FUNCTION || mode == FTRT_GRAPH) && ftrt_patch_up.libcall_entry && (want == LIBCALL_NEST ? v == LIBCALL_NEST : v != 0);
}

/* The list a file's config record names (ftpatch enable --libcall),
 * while its module's slots are hooked: it chooses them, not the
 * environment's filter. */
static const char *baked;

static int by_ip(const void *a, const void *b)
{
	uintptr_t x = ((const struct ftrt_lib_mark *)a)->ip, y = ((const struct ftrt_lib_mark *)b)->ip;
	return x < y ? -1 : x > y;
}

/* The subtree filters' marks of md's slots (FTRACE_GRAPH_FUNCS and
 * FTRACE_GRAPH_NOTRACE name library functions as the program's), for
 * the tracer to find by a call's slot as by a site (subtree.c), made
 * before any slot points at its stub; p's marks then go. */
static void publish_marks(const struct ftrt_mod *md, struct ftrt_lib_pass *p)
{
	if (!p->nmarks)
		return;
	qsort(p->marks, p->nmarks, sizeof *p->marks, by_ip);
	size_t bytes = p->nmarks * (sizeof(uintptr_t) + 1);
	unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED) {
		uintptr_t *ips = (uintptr_t *)m;
		unsigned char *marks = m + p->nmarks * sizeof(uintptr_t);
		for (size_t i = 0; i < p->nmarks; i++) {
			ips[i] = p->marks[i].ip;
			marks[i] = p->marks[i].mark;
		}
		ftrt_subtree_add_slots(md->owner, md->lo, md->hi, ips, marks, p->nmarks);
		munmap(m, bytes);
	}
	munmap(p->marks, p->capmarks * sizeof *p->marks);
	p->marks = NULL;
	p->nmarks = p->capmarks = 0;
}

void ftrt_libcalls_module(const struct ftrt_mod *md)
{
	for (uint32_t i = 0; i < ftrt_lib_nslots; i++) {
		struct ftrt_libslot *s = &ftrt_libslots[i / FTRT_LIBSLOT_CHUNK][i % FTRT_LIBSLOT_CHUNK];
		if (s->target >= md->lo && s->target < md->hi)
			ftrt_libslot_set(s, LIBSLOT_SKIP);
	}
}

/* FTRACE_DEBUG: what the pass did to md's slots, and its time. */
static void report(const struct ftrt_mod *md, const struct ftrt_libcall_stats *st, uint64_t ns)
{
	struct say s;
	ftrt_say_begin(&s);
	ftrt_say_num(&s, st->slots);
	ftrt_say_text(&s, " library-call slots in ");
	ftrt_say_str(&s, md->path ? md->path : "the program");
	ftrt_say_text(&s, ": ");
	ftrt_say_num(&s, st->hooked);
	ftrt_say_text(&s, " redirected, ");
	ftrt_say_num(&s, st->unresolved);
	ftrt_say_text(&s, " not found, ");
	ftrt_say_num(&s, st->failed);
	ftrt_say_text(&s, " failed, in ");
	ftrt_say_num(&s, ns);
	ftrt_say_text(&s, " ns");
	ftrt_say_end(&s);
}

/*
 * Write the slots of the table's entries [first, last) that lie in
 * [lo, hi), md's RELRO range (read-only since the loader relocated
 * it), each pointing at its stub, the k-th from first the k-th at base,
 * through the code writer (no other thread writes read-only data
 * meanwhile): a window of the range at a time, as it is with the stubs
 * in place, copied into a buffer on the stack. The entries come in
 * their relocations' order, mostly rising: a window holds the run of
 * slots after the one that began it, and a slot outside it begins the
 * next one. The slots written (fewer than asked when a write failed).
 */
static size_t relro_write(uint32_t first, uint32_t last, unsigned char *base, uintptr_t lo, uintptr_t hi)
{
	unsigned char buf[4096];
	uintptr_t w_lo = 0, w_hi = 0; /* the window: none open */
	size_t n = 0, in = 0;
	if (ftrt_text_open_data() != 0)
		return 0; /* once for every window: no program code runs meanwhile */
	struct ftrt_lib_cursor c = ftrt_lib_cursor_at(base);
	unsigned char *stub = ftrt_lib_cursor_next(&c);
	for (uint32_t i = first; i < last;) {
		uintptr_t a = ftrt_libslot_ip(ftrt_libslot(i));
		if (a < lo || a + 8 > hi) {
			i++, stub = ftrt_lib_cursor_next(&c); /* written with an atomic store */
			continue;
		}
		if (a >= w_lo && a + 8 <= w_hi) {
			memcpy(buf + (a - w_lo), &stub, 8);
			in++, i++, stub = ftrt_lib_cursor_next(&c);
			continue;
		}
		/* Outside the window: it is written whole, and the next one
		 * begins at this slot. */
		if (w_hi > w_lo && ftrt_text_write_opened(w_lo, buf, w_hi - w_lo) != 0)
			return n;
		n += in, in = 0;
		w_lo = a;
		w_hi = hi - a < sizeof buf ? hi : a + sizeof buf;
		memcpy(buf, (const void *)w_lo, w_hi - w_lo);
	}
	if (w_hi > w_lo && ftrt_text_write_opened(w_lo, buf, w_hi - w_lo) != 0)
		return n;
	return n + in;
}

void ftrt_libcalls_hook(struct ftrt_mod *md)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct ftrt_dyn d = { 0 };
	if (ftrt_dyn_read(md, &d) != 0 || !d.symtab || !d.strtab || !ftrt_patch_up.libcall_entry)
		return;
	ftrt_lib_dyn_keep(md->owner, &d); /* for live changes (liblive.c) */
	/* At most a slot a relocation: room for their stubs reserved, only
	 * the pages used ever touched (reading the relocations twice, to
	 * count them first, cost more than an unused reservation). Live
	 * changes and nested scans make ordinary stubs (liblive.c). */
	size_t cap = d.njmprel + d.nrela;
	if (!cap || ftrt_lib_stubs_reserve(cap, ftrt_mode == FTRT_GRAPH) != 0)
		return;
	ftrt_lib_traced_gather();
	struct ftrt_lib_pass p = { .baked = baked, .nest = ftrt_libcall_wanted() == LIBCALL_NEST };
	p.cold = ftrt_lib_names_wanted();
	p.again = p.nest || baked;
	struct ftrt_libcall_stats st = { 0 };
	/* The slots to redirect: the table's entries from first on, each
	 * with its stub, the k-th from first the k-th of the pages at base;
	 * all gathered before any slot is written, so that their pages are
	 * made executable once, and only then does a slot point at them. */
	uint32_t first = ftrt_lib_nslots;
	unsigned char *base = ftrt_lib_stubs_base();
	ftrt_lib_hook_table(md, &d, d.jmprel, d.njmprel, &p, &st);
	ftrt_lib_hook_table(md, &d, d.rela, d.nrela, &p, &st);
	uint32_t last = ftrt_lib_nslots;
	/* Readable and executable from here on, before any slot points at a
	 * stub. */
	if (ftrt_lib_stubs_seal(md->owner) != 0) {
		st.failed += last - first;
		last = first;
	}
	publish_marks(md, &p);
	/* Slots outside RELRO: an atomic store each; those in it, through
	 * the code writer (relro_write). */
	size_t relro = 0;
	struct ftrt_lib_cursor c = ftrt_lib_cursor_at(base);
	for (uint32_t i = first; i < last; i++) {
		uintptr_t a = ftrt_libslot_ip(ftrt_libslot(i));
		unsigned char *stub = ftrt_lib_cursor_next(&c);
		if (a >= d.relro_lo && a + 8 <= d.relro_hi) {
			relro++;
		} else {
			__atomic_store_n((uintptr_t *)a, (uintptr_t)stub, __ATOMIC_RELEASE);
			st.hooked++;
		}
	}
	if (relro) {
		size_t n = relro_write(first, last, base, d.relro_lo, d.relro_hi);
		st.hooked += (uint64_t)n;
		st.failed += (uint64_t)(relro - n);
	}
	/* A slot that holds its stub now: the probe that tells, later, that
	 * the module was not loaded again at its place (libscan.c). */
	c = ftrt_lib_cursor_at(base);
	for (uint32_t i = first; i < last; i++) {
		uintptr_t *a = (uintptr_t *)ftrt_libslot_ip(ftrt_libslot(i));
		uintptr_t stub = (uintptr_t)ftrt_lib_cursor_next(&c);
		if (__atomic_load_n(a, __ATOMIC_RELAXED) == stub) {
			ftrt_lib_set_probe(md->owner, a, stub);
			break;
		}
	}
	md->libcalls = st;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ftrt_env(ENV_DEBUG))
		report(md, &st, (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec));
}

void ftrt_libcalls_hook_baked(struct ftrt_mod *md, const char *list, size_t max)
{
	char copy[FTRT_CFG_LIBCALLS_MAX];
	size_t n = strnlen(list, max < sizeof copy ? max : sizeof copy);
	if (n == 0 || n >= sizeof copy)
		return;
	memcpy(copy, list, n);
	copy[n] = 0;
	baked = copy;
	ftrt_libcalls_hook(md);
	baked = NULL;
}

