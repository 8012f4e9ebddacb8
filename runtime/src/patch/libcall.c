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
 * recorded as plain calls, their returns never hooked (plain_call);
 * those the C++ runtime and the start-up rely on are left alone
 * (left_alone). Functions that never return (exit, abort, longjmp,
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
#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>

#include "arch/libstub.h"
#include "arch/poke.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "libcall.h"
#include "libslots.h"
#include "live.h"
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


static void hook_table(const struct ftrt_mod *md, const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n, struct ftrt_pending *out, size_t *nout,
		       size_t cap, struct ftrt_libcall_stats *st)
{
	for (size_t i = 0; i < n && *nout < cap; i++) {
		const ElfW(Sym) *sym;
		if (!ftrt_lib_slot_of(d, &r[i], &sym))
			continue;
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info);
		size_t si = ELF64_R_SYM(r[i].r_info);
		const char *name = d->strtab + sym->st_name;
		st->slots++;
		int pick = ftrt_lib_left_alone(name) ? 0 : baked ? (ftrt_filter_match(baked, name, NULL, NULL) ? PICK_TRACE : 0) : ftrt_pick(name);
		if (!(pick & PICK_TRACE))
			continue;
		uintptr_t *slot = (uintptr_t *)(md->bias + r[i].r_offset);
		uintptr_t target = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (ftrt_lib_in_stubs(target))
			continue; /* redirected already (a module served twice) */
		if (type == FTRT_R_JUMP_SLOT && target >= md->lo && target < md->hi) /* lazy, not bound yet */
			target = ftrt_lib_early_on ? ftrt_lib_early_target((uintptr_t)slot, name) : ftrt_lib_resolve(md, name, ftrt_lib_version_of(d, si));
		if (!target) {
			if (ELF64_ST_BIND(sym->st_info) != STB_WEAK)
				st->unresolved++; /* not found (an undefined weak one is absent by design) */
			continue;
		}
		int loader = ftrt_libcall_wanted() == LIBCALL_NEST ? ftrt_lib_loader_call(name) : 0;
		uintptr_t stub = ftrt_lib_new_slot(md, (uintptr_t)slot, target, name, ftrt_lib_plain_call(name) || loader == 1, loader);
		if (!stub) {
			st->failed++;
			continue;
		}
		out[*nout].slot = slot;
		out[*nout].stub = stub;
		out[*nout].mark = (unsigned char)(pick & (MARK_CHOSEN | MARK_NOTRACE));
		(*nout)++;
	}
}

static int by_slot(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct ftrt_pending *)a)->slot, y = (uintptr_t)((const struct ftrt_pending *)b)->slot;
	return x < y ? -1 : x > y;
}

/* The subtree filters' marks of md's slots (FTRACE_GRAPH_FUNCS and
 * FTRACE_GRAPH_NOTRACE name library functions as the program's), for
 * the tracer to find by a call's slot as by a site (subtree.c), made
 * before any slot points at its stub. */
static void publish_marks(const struct ftrt_mod *md, struct ftrt_pending *p, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i].mark != 0;
	if (!k)
		return;
	size_t bytes = k * (sizeof(uintptr_t) + 1) + sizeof(struct ftrt_pending) * n;
	unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return;
	struct ftrt_pending *sorted = (struct ftrt_pending *)m;
	uintptr_t *ips = (uintptr_t *)(m + sizeof(struct ftrt_pending) * n);
	unsigned char *marks = (unsigned char *)(ips + k);
	memcpy(sorted, p, sizeof *p * n);
	qsort(sorted, n, sizeof *sorted, by_slot);
	for (size_t i = 0, j = 0; i < n; i++)
		if (sorted[i].mark) {
			ips[j] = (uintptr_t)sorted[i].slot;
			marks[j++] = sorted[i].mark;
		}
	ftrt_subtree_add_slots(md->owner, md->lo, md->hi, ips, marks, k);
	munmap(m, bytes);
}



void ftrt_libcalls_module(const struct ftrt_mod *md)
{
	for (uint32_t i = 0; i < ftrt_lib_nslots; i++) {
		struct ftrt_libslot *s = &ftrt_libslots[i / FTRT_LIBSLOT_CHUNK][i % FTRT_LIBSLOT_CHUNK];
		if (s->target >= md->lo && s->target < md->hi)
			__atomic_store_n(&s->skip, 1, __ATOMIC_RELAXED);
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

void ftrt_libcalls_hook(struct ftrt_mod *md)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct ftrt_dyn d = { 0 };
	struct ftrt_dynfind f = { md, &d, 0 };
	dl_iterate_phdr(ftrt_lib_find_dyn, &f);
	if (!f.found || !d.symtab || !d.strtab || !ftrt_patch_up.libcall_entry)
		return;
	size_t cap = ftrt_lib_count_slots(&d, d.jmprel, d.njmprel) + ftrt_lib_count_slots(&d, d.rela, d.nrela), n = 0;
	if (!cap)
		return;
	struct ftrt_pending *p = mmap(NULL, cap * sizeof *p, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (ftrt_lib_stubs_reserve(cap) != 0) {
		munmap(p, cap * sizeof *p);
		return;
	}
	struct ftrt_libcall_stats st = { 0 };
	hook_table(md, &d, d.jmprel, d.njmprel, p, &n, cap, &st);
	hook_table(md, &d, d.rela, d.nrela, p, &n, cap, &st);
	/* Only executable from here on, before any slot points at a stub. */
	if (ftrt_lib_stubs_seal(md->owner) != 0) {
		st.failed += n;
		n = 0;
	}
	publish_marks(md, p, n);
	/* Slots outside RELRO: an atomic store each. Those in it, read-only
	 * since the loader relocated them: their span as it is with the
	 * stubs in place, written at once through the code writer (no other
	 * thread writes read-only data meanwhile). */
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	size_t relro = 0;
	for (size_t i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)p[i].slot;
		if (a >= d.relro_lo && a + 8 <= d.relro_hi) {
			lo = a < lo ? a : lo;
			hi = a + 8 > hi ? a + 8 : hi;
			relro++;
		} else {
			__atomic_store_n(p[i].slot, p[i].stub, __ATOMIC_RELEASE);
			st.hooked++;
		}
	}
	if (relro) {
		unsigned char *span = mmap(NULL, hi - lo, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int err = span == MAP_FAILED;
		if (!err) {
			memcpy(span, (const void *)lo, hi - lo);
			for (size_t i = 0; i < n; i++) {
				uintptr_t a = (uintptr_t)p[i].slot;
				if (a >= d.relro_lo && a + 8 <= d.relro_hi)
					memcpy(span + (a - lo), &p[i].stub, 8);
			}
			err = ftrt_text_write(lo, span, hi - lo) != 0;
			munmap(span, hi - lo);
		}
		if (err)
			st.failed += (uint64_t)relro;
		else
			st.hooked += (uint64_t)relro;
	}
	for (size_t i = 0; i < n; i++)
		if (__atomic_load_n(p[i].slot, __ATOMIC_RELAXED) == p[i].stub) {
			ftrt_lib_set_probe(md->owner, p[i].slot, p[i].stub);
			break;
		}
	munmap(p, cap * sizeof *p);
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

