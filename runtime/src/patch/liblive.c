/*
 * Library calls chosen live (libslots.h says what each part does).
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

/*
 * Live (the live filters of live.c: ftrace.h's API, ftpatch ctl): the
 * library-call slots a glob list chooses made traced or not while the
 * program's threads run, when library calls are on (FTRACE_LIBCALL).
 * A slot made traced points at a new stub, as at the pass (stub pages
 * written, then made only executable, before it points there); one made
 * untraced gets its function back (a lazy one, the function its first
 * call would have bound it to), its stub left in place for a thread that
 * may be in it. Each is one atomic store; a slot in RELRO is written
 * with its page made writable (not executable: data) for that store.
 */
static const char *live_list;          /* the call's list */
static struct ftrt_globs live_globs;   /* compiled, when it fits */
static const struct ftrt_globs *live_g;
static int live_cxx;

/* Whether op with the call's list wants the slot of name traced: 1,
 * untraced: 0, or leaves it: -1. */
static int live_want(int op, const char *name)
{
	int hit = ftrt_live_chooses(live_list, live_g, name, live_cxx);
	if (op == OP_SET)
		return hit;
	return hit ? op == OP_ENABLE : -1;
}

static void live_begin(const char *list)
{
	live_list = list;
	live_cxx = ftrt_cxx_globs(list);
	live_g = ftrt_globs_compile(list, &live_globs) == 0 ? &live_globs : NULL;
}

/* The table's entry of slot, made traced last (each time a slot is made
 * traced, an entry is added: the latest is the one its stub enters),
 * or NULL. */
static struct ftrt_libslot *entry_of(uintptr_t *slot)
{
	for (uint32_t i = ftrt_lib_nslots; i-- > 0;) {
		struct ftrt_libslot *e = &ftrt_libslots[i / FTRT_LIBSLOT_CHUNK][i % FTRT_LIBSLOT_CHUNK];
		if (ftrt_libslot_ip(e) == (uintptr_t)slot)
			return e;
	}
	return NULL;
}

/* One slot's store, its page made writable for it when it is read-only
 * (RELRO). 0, or -errno. */
static int live_store(const struct ftrt_dyn *d, uintptr_t *slot, uintptr_t v)
{
	uintptr_t a = (uintptr_t)slot;
	if (a >= d->relro_lo && a + 8 <= d->relro_hi) {
		uintptr_t page = a & ~(uintptr_t)4095;
		if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0)
			return -errno;
		__atomic_store_n(slot, v, __ATOMIC_RELEASE);
		mprotect((void *)page, 4096, PROT_READ);
		return 0;
	}
	__atomic_store_n(slot, v, __ATOMIC_RELEASE);
	return 0;
}

/* op over md's slots: the count changed, or -errno. may_resolve: the
 * lazy slots' functions may be looked up here (a pass, in the loader's
 * context), else only taken from ftrt_lib_early. Ordinary stubs: a
 * graph stub's fast path is the load-time pass's. */
static int live_slots(const struct ftrt_mod *md, int op, int may_resolve)
{
	struct ftrt_dyn d = { 0 };
	if (ftrt_lib_dyn_of(md->owner, &d) != 0 || !d.strtab)
		return 0;
	int changed = 0;
	int nest = ftrt_libcall_wanted() == LIBCALL_NEST;
	int cold = ftrt_lib_names_wanted();
	/* Twice over the relocations: first the slots to make untraced and
	 * a count of those to make traced, then, their stubs made, those. */
	size_t want_on = 0;
	const ElfW(Rela) *tabs[2] = { d.jmprel, d.rela };
	size_t ns[2] = { d.njmprel, d.nrela };
	for (int pass = 0; pass < 2; pass++) {
		uint32_t first = ftrt_lib_nslots;
		unsigned char *base = NULL;
		if (pass == 1) {
			if (!want_on)
				break;
			if (ftrt_lib_stubs_reserve(want_on, 0) != 0)
				return changed ? changed : -ENOMEM;
			base = ftrt_lib_stubs_base();
			ftrt_lib_traced_gather();
		}
		size_t made = 0;
		for (int t = 0; t < 2; t++)
			for (size_t i = 0; i < ns[t]; i++) {
				const ElfW(Sym) *sym;
				if (!ftrt_lib_slot_of(&d, &tabs[t][i], &sym))
					continue;
				const char *name = d.strtab + sym->st_name;
				int list = ftrt_lib_listed(name);
				if (list == LISTED_ALONE)
					continue;
				int w = live_want(op, name);
				if (w < 0)
					continue;
				uintptr_t *slot = (uintptr_t *)(md->bias + tabs[t][i].r_offset);
				uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
				int on = ftrt_lib_in_stubs(v);
				if (pass == 0 && on && !w) {
					struct ftrt_libslot *e = entry_of(slot);
					if (e && live_store(&d, slot, e->target) == 0)
						changed++;
				} else if (!on && w) {
					if (pass == 0) {
						want_on++;
						continue;
					}
					uintptr_t target = v;
					if ((uint32_t)ELF64_R_TYPE(tabs[t][i].r_info) == FTRT_R_JUMP_SLOT && target >= md->lo && target < md->hi)
						target = may_resolve ? ftrt_dyn_resolve(md, name, ftrt_dyn_version(&d, ELF64_R_SYM(tabs[t][i].r_info)))
								     : ftrt_lib_early_target((uintptr_t)slot, name);
					if (!target || made >= want_on)
						continue;
					int loader = nest ? ftrt_lib_loader_call(name) : 0;
					if (ftrt_lib_new_slot(md, (uintptr_t)slot, target, name, ftrt_lib_plain(md, name, list), loader, cold) == 0)
						made++;
				}
			}
		if (pass == 1) {
			uint32_t last = ftrt_lib_nslots;
			if (ftrt_lib_stubs_seal(md->owner) != 0)
				break;
			struct ftrt_lib_cursor c = ftrt_lib_cursor_at(base);
			for (uint32_t i = first; i < last; i++) {
				uintptr_t *slot = (uintptr_t *)ftrt_libslot_ip(ftrt_libslot(i));
				if (live_store(&d, slot, (uintptr_t)ftrt_lib_cursor_next(&c)) == 0)
					changed++;
			}
		}
	}
	return changed;
}

/* This thread holds ftrt_lib_rescan_lock for a live call (prepare to
 * finish). */
static __thread int held __attribute__((tls_model("initial-exec")));

void ftrt_libcalls_after_fork(void)
{
	pthread_mutex_init(&ftrt_lib_rescan_lock, NULL);
	held = 0;
	ftrt_lib_nearly = 0;
}

void ftrt_libcalls_live_prepare(int op, const char *list)
{
	if (!ftrt_libcall_wanted())
		return;
	pthread_mutex_lock(&ftrt_lib_rescan_lock);
	held = 1;
	ftrt_lib_nearly = 0;
	if (op == OP_DISABLE)
		return;
	live_begin(list);
	/* The objects first, and their dynamic sections' facts as their
	 * passes read them, under the registry's lock (the loader's lookups
	 * cannot be made under it); then each one, held loaded while it is
	 * read (a dlopen that loads nothing, checked to be the same load),
	 * its lazy slots of functions the list chooses. */
	struct objs {
		size_t n;
		struct obj {
			struct ftrt_mod md;
			struct ftrt_dyn d;
		} o[256];
	} *o = mmap(NULL, sizeof *o, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (o == MAP_FAILED)
		return;
	ftrt_modules_lock();
	for (int i = 0; ftrt_module_at(i) && o->n < 256; i++) {
		const struct ftrt_mod *m = ftrt_module_at(i);
		struct obj *ob = &o->o[o->n];
		if (m->live && ftrt_lib_dyn_of(m->owner, &ob->d) == 0 && ob->d.strtab) {
			ob->md = (struct ftrt_mod){ .bias = m->bias, .lo = m->lo, .hi = m->hi, .owner = m->owner, .path = m->path ? strdup(m->path) : NULL };
			o->n++;
		}
	}
	ftrt_modules_release();
	for (size_t k = 0; k < o->n; k++) {
		struct ftrt_mod *md = &o->o[k].md;
		const struct ftrt_dyn *d = &o->o[k].d;
		void *pin = NULL;
		struct link_map *lm = NULL;
		if (md->path && (!(pin = dlopen(md->path, RTLD_LAZY | RTLD_NOLOAD)) || dlinfo(pin, RTLD_DI_LINKMAP, &lm) != 0 || lm->l_addr != md->bias)) {
			if (pin)
				dlclose(pin);
			free((void *)md->path);
			continue; /* unloaded meanwhile, or loaded again elsewhere */
		}
		if (ftrt_lib_early_room(d->njmprel) == 0)
			for (size_t i = 0; i < d->njmprel; i++) {
				const ElfW(Sym) *sym;
				if (!ftrt_lib_slot_of(d, &d->jmprel[i], &sym) || (uint32_t)ELF64_R_TYPE(d->jmprel[i].r_info) != FTRT_R_JUMP_SLOT)
					continue;
				const char *name = d->strtab + sym->st_name;
				uintptr_t *slot = (uintptr_t *)(md->bias + d->jmprel[i].r_offset);
				uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
				if (v < md->lo || v >= md->hi || ftrt_lib_listed(name) == LISTED_ALONE || live_want(op, name) != 1)
					continue;
				ftrt_lib_early[ftrt_lib_nearly].slot = (uintptr_t)slot;
				ftrt_lib_early[ftrt_lib_nearly].target = ftrt_dyn_resolve(md, name, ftrt_dyn_version(d, ELF64_R_SYM(d->jmprel[i].r_info)));
				ftrt_lib_early[ftrt_lib_nearly].hash = ftrt_lib_name_hash(name);
				ftrt_lib_nearly++;
			}
		if (pin)
			dlclose(pin);
		free((void *)md->path);
	}
	munmap(o, sizeof *o);
}

int ftrt_libcalls_live(int op, const char *list)
{
	if (!ftrt_libcalls_on(LIBCALL_ON))
		return 0;
	live_begin(list);
	int changed = 0;
	for (int i = 0; ftrt_module_at(i); i++) {
		const struct ftrt_mod *md = ftrt_module_at(i);
		if (!md->live)
			continue;
		int n = live_slots(md, op, 0);
		if (n < 0)
			return changed ? changed : n;
		changed += n;
	}
	return changed;
}

int ftrt_libcalls_live_module(const struct ftrt_mod *md, int op, const char *list)
{
	if (!ftrt_libcalls_on(LIBCALL_ON))
		return 0;
	live_begin(list);
	return live_slots(md, op, !ftrt_lib_early_on);
}

void ftrt_libcalls_live_finish(void)
{
	if (!held)
		return;
	ftrt_lib_nearly = 0;
	held = 0;
	pthread_mutex_unlock(&ftrt_lib_rescan_lock);
}
