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

/* The list a file's config record names (ftpatch enable --libcall),
 * while its module's slots are hooked: it chooses them, not the
 * environment's filter. */
static const char *baked;

/* What one module's pass decides once for all its slots. */
struct pass_of {
	int nest;        /* FTRACE_LIBCALL=nest: the loader's functions marked */
	int cold;        /* the arguments' capture may ask for names */
	int again;       /* the module may have been served already: redirected slots skipped */
	/* The subtree filters' marks (FTRACE_GRAPH_FUNCS, _NOTRACE), by
	 * slot, made as marked slots are met. */
	struct mark {
		uintptr_t ip;
		unsigned char mark;
	} *marks;
	size_t nmarks, capmarks;
};

/* One more mark: 0, or -1 (no room: the slot is not marked). */
static int add_mark(struct pass_of *p, uintptr_t ip, unsigned char mark)
{
	if (p->nmarks == p->capmarks) {
		size_t cap = p->capmarks ? 2 * p->capmarks : 256;
		struct mark *m = mmap(NULL, cap * sizeof *m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -1;
		if (p->marks) {
			memcpy(m, p->marks, p->nmarks * sizeof *m);
			munmap(p->marks, p->capmarks * sizeof *m);
		}
		p->marks = m;
		p->capmarks = cap;
	}
	p->marks[p->nmarks++] = (struct mark){ ip, mark };
	return 0;
}

/* How far ahead hook_table asks for a relocation's symbol, and for its
 * name (half as far: the symbol has come by then). */
#define AHEAD 64

/* The slots of r[0, n) that the filter chooses (or a baked list), each a
 * new slot of the table with its stub, as long as there is room. Each
 * slot's symbol and name are read from the module's dynamic symbol table
 * and its strings, in the order of the relocations, not theirs: a cache
 * miss each, most of the pass's time when waited for one after the
 * other; so they are asked for ahead (the symbol AHEAD relocations on,
 * the name AHEAD / 2), and their misses overlap. */
static void hook_table(const struct ftrt_mod *md, const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n, struct pass_of *p,
		       struct ftrt_libcall_stats *st)
{
	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD < n)
			__builtin_prefetch(&d->symtab[ELF64_R_SYM(r[i + AHEAD].r_info)]);
		if (i + AHEAD / 2 < n) {
			size_t k = ELF64_R_SYM(r[i + AHEAD / 2].r_info);
			if (k)
				__builtin_prefetch(d->strtab + d->symtab[k].st_name);
		}
		const ElfW(Sym) *sym;
		if (!ftrt_lib_slot_of(d, &r[i], &sym))
			continue;
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info);
		size_t si = ELF64_R_SYM(r[i].r_info);
		const char *name = d->strtab + sym->st_name;
		int list = ftrt_lib_listed(name);
		st->slots++;
		if (list == LISTED_ALONE)
			continue;
		int pick = baked ? (ftrt_filter_match(baked, name, NULL, NULL) ? PICK_TRACE : 0) : ftrt_pick(name);
		if (!(pick & PICK_TRACE))
			continue;
		uintptr_t *slot = (uintptr_t *)(md->bias + r[i].r_offset);
		uintptr_t target = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (p->again && ftrt_lib_in_stubs(target))
			continue; /* redirected already */
		if (type == FTRT_R_JUMP_SLOT && target >= md->lo && target < md->hi) /* lazy, not bound yet */
			target = ftrt_lib_early_on ? ftrt_lib_early_target((uintptr_t)slot, name) : ftrt_dyn_resolve(md, name, ftrt_dyn_version(d, si));
		if (!target) {
			if (ELF64_ST_BIND(sym->st_info) != STB_WEAK)
				st->unresolved++; /* not found (an undefined weak one is absent by design) */
			continue;
		}
		int loader = p->nest ? ftrt_lib_loader_call(name) : 0;
		unsigned char mark = (unsigned char)(pick & (MARK_CHOSEN | MARK_NOTRACE));
		if (ftrt_lib_new_slot(md, (uintptr_t)slot, target, name, ftrt_lib_plain(md, name, list), loader, p->cold) != 0)
			st->failed++;
		else if (mark && add_mark(p, (uintptr_t)slot, mark) != 0)
			st->failed++;
	}
}

static int by_ip(const void *a, const void *b)
{
	uintptr_t x = ((const struct mark *)a)->ip, y = ((const struct mark *)b)->ip;
	return x < y ? -1 : x > y;
}

/* The subtree filters' marks of md's slots (FTRACE_GRAPH_FUNCS and
 * FTRACE_GRAPH_NOTRACE name library functions as the program's), for
 * the tracer to find by a call's slot as by a site (subtree.c), made
 * before any slot points at its stub; p's marks then go. */
static void publish_marks(const struct ftrt_mod *md, struct pass_of *p)
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
	/* At most a slot a relocation: room for their stubs reserved, only
	 * the pages used ever touched (reading the relocations twice, to
	 * count them first, cost more than an unused reservation). Live
	 * changes and nested scans make ordinary stubs (liblive.c). */
	size_t cap = d.njmprel + d.nrela;
	if (!cap || ftrt_lib_stubs_reserve(cap, ftrt_mode == FTRT_GRAPH) != 0)
		return;
	ftrt_lib_traced_gather();
	struct pass_of p = { .nest = ftrt_libcall_wanted() == LIBCALL_NEST };
	p.cold = ftrt_env(ENV_ARGS) || ftrt_env(ENV_RETVAL) || ftrt_env(ENV_LIBARGS) || ftrt_env(ENV_LIBRETVAL) || ftrt_env(ENV_ARGS_SOCKET);
	p.again = p.nest || baked;
	struct ftrt_libcall_stats st = { 0 };
	/* The slots to redirect: the table's entries from first on, each
	 * with its stub, the k-th from first the k-th of the pages at base;
	 * all gathered before any slot is written, so that their pages are
	 * made executable once, and only then does a slot point at them. */
	uint32_t first = ftrt_lib_nslots;
	unsigned char *base = ftrt_lib_stubs_base();
	hook_table(md, &d, d.jmprel, d.njmprel, &p, &st);
	hook_table(md, &d, d.rela, d.nrela, &p, &st);
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

