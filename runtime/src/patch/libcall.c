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
#include "pass.h"
#include "patch.h"
#include "live.h"
#include "subtree.h"

struct ftrt_libslot *ftrt_libslots[FTRT_LIBSLOT_CHUNKS];
static uint32_t nslots; /* slots in the table */

/* The stub pages of the module being passed: one mapping of as many
 * pages as its slots could need, each page's last word the common
 * entry's address, filled in order; made only executable at once, its
 * unused pages unmapped, before any slot points at a stub. */
static unsigned char *stubs;
static size_t stub_pages, stubs_used;

/* Each module's stub pages, by its owner number: unmapped when it is
 * unloaded (ftrt_libcalls_release), as nothing may run its code then,
 * nor so call through its slots. */
#define REGIONS 512
static struct region {
	int owner;
	void *base;
	size_t len;
	/* One slot the pass redirected, and the stub it points at: while
	 * the slot still holds it, the module was not loaded again at its
	 * place (ftrt_libcalls_still). */
	uintptr_t *probe;
	uintptr_t probe_stub;
} regions[REGIONS];

void ftrt_libcalls_release(int owner)
{
	/* Its slots' names were its string table's: gone with it. */
	for (uint32_t i = 0; i < nslots; i++) {
		struct ftrt_libslot *e = &ftrt_libslots[i / FTRT_LIBSLOT_CHUNK][i % FTRT_LIBSLOT_CHUNK];
		if (e->owner == owner)
			__atomic_store_n(&e->name, NULL, __ATOMIC_RELAXED);
	}
	/* Its slots' names were in its string table, which goes with it. */
	for (uint32_t i = 0; i < nslots; i++) {
		struct ftrt_libslot *s = &ftrt_libslots[i / FTRT_LIBSLOT_CHUNK][i % FTRT_LIBSLOT_CHUNK];
		if (s->owner == owner) {
			__atomic_store_n(&s->capture, 0, __ATOMIC_RELAXED);
			s->name = NULL;
		}
	}
	for (int i = 0; i < REGIONS; i++)
		if (regions[i].owner == owner && regions[i].base) {
			munmap(regions[i].base, regions[i].len);
			regions[i] = (struct region){ 0 };
		}
}

static void remember(int owner, void *base, size_t len)
{
	for (int i = 0; i < REGIONS; i++)
		if (!regions[i].base) {
			regions[i] = (struct region){ owner, base, len, NULL, 0 };
			return;
		}
}

/* Whether a is in a stub page: a slot redirected already. */
static int in_stubs(uintptr_t a)
{
	for (int i = 0; i < REGIONS; i++)
		if (regions[i].base && a >= (uintptr_t)regions[i].base && a < (uintptr_t)regions[i].base + regions[i].len)
			return 1;
	return 0;
}

int ftrt_libcalls_still(int owner)
{
	for (int i = 0; i < REGIONS; i++)
		if (regions[i].owner == owner && regions[i].probe &&
		    __atomic_load_n(regions[i].probe, __ATOMIC_RELAXED) != regions[i].probe_stub)
			return 0;
	return 1;
}

/* The first slot redirected for owner, as its probe. */
static void set_probe(int owner, uintptr_t *slot, uintptr_t stub)
{
	for (int i = 0; i < REGIONS; i++)
		if (regions[i].owner == owner && regions[i].base && !regions[i].probe) {
			regions[i].probe = slot;
			regions[i].probe_stub = stub;
			return;
		}
}

static int stubs_reserve(size_t n)
{
	stub_pages = (n + FTRT_LIBSTUBS - 1) / FTRT_LIBSTUBS;
	stubs_used = 0;
	void *m = mmap(NULL, stub_pages * FTRT_LIBSTUB_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m == MAP_FAILED) {
		stubs = NULL;
		return -1;
	}
	stubs = m;
	uintptr_t entry = (uintptr_t)ftrt_patch_up.libcall_entry;
	for (size_t i = 0; i < stub_pages; i++)
		memcpy(stubs + (i + 1) * FTRT_LIBSTUB_PAGE - 8, &entry, 8);
	return 0;
}

/* The pages used made only executable, the rest unmapped, and those
 * kept remembered for owner's unload: 0, or -1 (the stubs are not to be
 * used). */
static int stubs_seal(int owner)
{
	size_t used = (stubs_used + FTRT_LIBSTUBS - 1) / FTRT_LIBSTUBS;
	if (used < stub_pages)
		munmap(stubs + used * FTRT_LIBSTUB_PAGE, (stub_pages - used) * FTRT_LIBSTUB_PAGE);
	int err = used && mprotect(stubs, used * FTRT_LIBSTUB_PAGE, PROT_READ | PROT_EXEC) != 0 ? -1 : 0;
	if (used)
		remember(owner, stubs, used * FTRT_LIBSTUB_PAGE);
	stubs = NULL;
	stub_pages = stubs_used = 0;
	return err;
}

int ftrt_libcall_wanted(void)
{
	const char *v = ftrt_env(ENV_LIBCALL);
	if (!v)
		return 0;
	if (strcmp(v, "1") == 0)
		return LIBCALL_ON;
	return strcmp(v, "nest") == 0 ? LIBCALL_NEST : 0;
}

/* FNV-1a of a name. */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Whether name is one of names[0, n), sorted in strcmp's order: a
 * 4096-bit set of their hashes (seen, made once: the pass runs under the
 * registry's lock) rules most names out before a binary search. */
static int one_of(const char *name, const char *const *names, size_t n, uint64_t seen[64], int *made)
{
	if (!*made) {
		for (size_t i = 0; i < n; i++) {
			uint32_t h = name_hash(names[i]) % 4096;
			seen[h / 64] |= 1ull << (h % 64);
		}
		*made = 1;
	}
	uint32_t h = name_hash(name) % 4096;
	if (!(seen[h / 64] >> (h % 64) & 1))
		return 0;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, names[mid]);
		if (c == 0)
			return 1;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return 0;
}

/* Functions whose slots are left alone (above): the C++ runtime's catch
 * hooks, the start-up's and the exit's, and __tls_get_addr, which
 * compiled code calls for every access to another module's TLS. */
static int left_alone(const char *name)
{
	static const char *const names[] = {
		"__cxa_atexit", "__cxa_begin_catch", "__cxa_end_catch", "__cxa_finalize", "__libc_start_main",
		"__tls_get_addr",
	};
	static uint64_t seen[64];
	static int made;
	return one_of(name, names, sizeof names / sizeof names[0], seen, &made);
}

/* Functions whose return is never hooked, their calls recorded as plain
 * calls (a function_graph trace shows them without a duration): those
 * that return twice or switch stacks (vfork, clone, the setjmp and
 * context families), those that walk the stack (backtrace, the
 * unwinder's _Unwind_*), which would meet a hook of their own, and the
 * loader's that take their caller from their return address (dlopen's
 * and dlmopen's search path and namespace, dlsym's and dlvsym's
 * RTLD_NEXT), which a hook would make the runtime. */
static int plain_call(const char *name)
{
	static const char *const names[] = {
		"__clone", "__clone3", "__sigsetjmp", "_setjmp", "backtrace", "clone", "clone3", "dlmopen", "dlopen",
		"dlsym", "dlvsym", "getcontext", "makecontext", "savectx", "setcontext", "setjmp", "sigsetjmp",
		"swapcontext", "vfork",
	};
	static uint64_t seen[64];
	static int made;
	if (name[0] == '_' && strncmp(name, "_Unwind_", 8) == 0)
		return 1;
	return one_of(name, names, sizeof names / sizeof names[0], seen, &made);
}

/* The loader's functions (slot's loader field): 1 those after which the
 * loaded objects are scanned again, 2 those whose call does that scan
 * once one of the first has returned on its thread (FTRACE_LIBCALL=nest:
 * tracers/libcall.c). Their arguments are integers and pointers alone:
 * the scan, which may use the vector registers, clobbers no argument. */
static int loader_call(const char *name)
{
	if (name[0] != 'd' || name[1] != 'l')
		return 0;
	static const char *const after[] = { "dlclose", "dlmopen", "dlopen" };
	static const char *const then[] = { "dladdr", "dladdr1", "dlerror", "dlinfo", "dlsym", "dlvsym" };
	for (size_t i = 0; i < sizeof after / sizeof after[0]; i++)
		if (strcmp(name, after[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof then / sizeof then[0]; i++)
		if (strcmp(name, then[i]) == 0)
			return 2;
	return 0;
}

/* A module's dynamic section's facts, and its RELRO range. */
struct dyn {
	const ElfW(Rela) *jmprel, *rela;
	size_t njmprel, nrela;
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Half) *versym;
	const ElfW(Verneed) *verneed;
	size_t nverneed;
	uintptr_t relro_lo, relro_hi;
};

struct find {
	const struct ftrt_mod *md;
	struct dyn *d;
	int found;
};

/* A pointer of the dynamic section: the loader relocates them in place
 * (glibc), or leaves them file addresses (others). */
static uintptr_t dptr(const struct ftrt_mod *md, uintptr_t v)
{
	return v >= md->lo && v < md->hi ? v : v + md->bias;
}

static int find_dyn(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find *f = arg;
	const struct ftrt_mod *md = f->md;
	if (info->dlpi_addr != md->bias)
		return 0;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t relro_lo = 0, relro_hi = 0;
	int inside = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && s >= md->lo && s < md->hi)
			inside = 1;
		else if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)s;
		else if (ph->p_type == PT_GNU_RELRO)
			relro_lo = s, relro_hi = s + ph->p_memsz;
	}
	if (!inside || !dyn)
		return 0; /* another object at the same bias (the vDSO's is its own) */
	struct dyn *d = f->d;
	d->relro_lo = relro_lo;
	d->relro_hi = relro_hi;
	size_t pltrelsz = 0, relasz = 0;
	int pltrela = 1;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = dyn->d_un.d_ptr;
		switch (dyn->d_tag) {
		case DT_JMPREL:
			d->jmprel = (const ElfW(Rela) *)dptr(md, v);
			break;
		case DT_PLTRELSZ:
			pltrelsz = dyn->d_un.d_val;
			break;
		case DT_PLTREL:
			pltrela = dyn->d_un.d_val == DT_RELA;
			break;
		case DT_RELA:
			d->rela = (const ElfW(Rela) *)dptr(md, v);
			break;
		case DT_RELASZ:
			relasz = dyn->d_un.d_val;
			break;
		case DT_SYMTAB:
			d->symtab = (const ElfW(Sym) *)dptr(md, v);
			break;
		case DT_STRTAB:
			d->strtab = (const char *)dptr(md, v);
			break;
		case DT_VERSYM:
			d->versym = (const ElfW(Half) *)dptr(md, v);
			break;
		case DT_VERNEED:
			d->verneed = (const ElfW(Verneed) *)dptr(md, v);
			break;
		case DT_VERNEEDNUM:
			d->nverneed = dyn->d_un.d_val;
			break;
		}
	}
	if (!pltrela)
		d->jmprel = NULL; /* REL: not an ELF64 psABI's */
	d->njmprel = d->jmprel ? pltrelsz / sizeof(ElfW(Rela)) : 0;
	d->nrela = d->rela ? relasz / sizeof(ElfW(Rela)) : 0;
	f->found = 1;
	return 1;
}

/* The version the module asks of symbol i (its verneed's name), or
 * NULL: none, or the base. */
static const char *version_of(const struct dyn *d, size_t i)
{
	if (!d->versym || !d->verneed)
		return NULL;
	ElfW(Half) want = d->versym[i] & 0x7fff;
	if (want <= 1)
		return NULL;
	const ElfW(Verneed) *vn = d->verneed;
	for (size_t k = 0; k < d->nverneed; k++) {
		const ElfW(Vernaux) *a = (const ElfW(Vernaux) *)((const char *)vn + vn->vn_aux);
		for (unsigned j = 0; j < vn->vn_cnt; j++) {
			if (a->vna_other == want)
				return d->strtab + a->vna_name;
			a = (const ElfW(Vernaux) *)((const char *)a + a->vna_next);
		}
		if (!vn->vn_next)
			break;
		vn = (const ElfW(Verneed) *)((const char *)vn + vn->vn_next);
	}
	return NULL;
}

/* The function a lazy slot of md will be bound to: as the loader looks
 * it up, the global scope first, then the module's own. */
static uintptr_t resolve(const struct ftrt_mod *md, const char *name, const char *version)
{
	void *f = version ? dlvsym(RTLD_DEFAULT, name, version) : NULL;
	if (!f)
		f = dlsym(RTLD_DEFAULT, name);
	if (!f && md->path) {
		void *h = dlopen(md->path, RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			f = version ? dlvsym(h, name, version) : NULL;
			if (!f)
				f = dlsym(h, name);
			dlclose(h);
		}
	}
	return (uintptr_t)f;
}

/* The module that holds a, when it has sites (registered): its
 * functions record their own calls. */
static int in_traced_module(uintptr_t a)
{
	for (int i = 0; ftrt_module_at(i); i++) {
		const struct ftrt_mod *m = ftrt_module_at(i);
		if (m->live && m->desc && m->desc->start != m->desc->stop && a >= m->lo && a < m->hi)
			return 1;
	}
	return 0;
}

/* A new slot of the table, its stub made in the module's stub pages.
 * The stub's address, or 0. */
static uintptr_t new_slot(const struct ftrt_mod *md, uintptr_t ip, uintptr_t target, const char *name, int plain, int loader)
{
	if (nslots >= FTRT_LIBSLOT_CHUNKS * FTRT_LIBSLOT_CHUNK)
		return 0;
	struct ftrt_libslot **chunk = &ftrt_libslots[nslots / FTRT_LIBSLOT_CHUNK];
	if (!*chunk) {
		void *m = mmap(NULL, FTRT_LIBSLOT_CHUNK * sizeof **chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (m == MAP_FAILED)
			return 0;
		*chunk = m;
	}
	if (!stubs || stubs_used == stub_pages * FTRT_LIBSTUBS)
		return 0;
	uint32_t idx = nslots;
	struct ftrt_libslot *s = &(*chunk)[idx % FTRT_LIBSLOT_CHUNK];
	unsigned char *at = stubs + stubs_used / FTRT_LIBSTUBS * FTRT_LIBSTUB_PAGE + stubs_used % FTRT_LIBSTUBS * FTRT_LIBSTUB_SIZE;
	s->ip = ip;
	s->target = target;
	s->name = name;
	s->owner = md->owner;
	s->skip = in_traced_module(target);
	s->plain = plain;
	s->loader = loader;
	s->stub = (uintptr_t)at;
	__atomic_store_n(&nslots, idx + 1, __ATOMIC_RELEASE);
	stubs_used++;
	ftrt_arch_libstub(at, idx);
	return (uintptr_t)at;
}

/* The functions of a module's lazy slots, looked up before the
 * registry's lock is taken when a module is served outside a pass
 * (ftrt_libcalls_rescan: the loader's lookups take the loader's lock,
 * which a thread running a constructor holds while it waits for the
 * registry's): the pass then takes them from here, and looks nothing up
 * itself. One module at a time, under rescan_lock. */
static struct early {
	uintptr_t slot, target;
	uint32_t hash; /* of its function's name: a slot of another module loaded at its place since is not it */
} *early;
static size_t nearly, early_cap;
static __thread int early_on __attribute__((tls_model("initial-exec"))); /* this thread's pass takes lazy slots' functions from early alone */

static uint32_t name_hash(const char *s);

static uintptr_t early_target(uintptr_t slot, const char *name)
{
	for (size_t i = 0; i < nearly; i++)
		if (early[i].slot == slot)
			return early[i].hash == name_hash(name) ? early[i].target : 0;
	return 0;
}

/* Room in early for n more. 0, or -1. */
static int early_room(size_t n)
{
	if (nearly + n <= early_cap)
		return 0;
	size_t cap = early_cap ? 2 * early_cap : 256;
	while (cap < nearly + n)
		cap *= 2;
	struct early *e = mmap(NULL, cap * sizeof *e, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e == MAP_FAILED)
		return -1;
	if (early) {
		memcpy(e, early, nearly * sizeof *e);
		munmap(early, early_cap * sizeof *early);
	}
	early = e;
	early_cap = cap;
	return 0;
}

/* The list a file's config record names (ftpatch enable --libcall),
 * while its module's slots are hooked: it chooses them, not the
 * environment's filter. */
static const char *baked;

/* The slots to redirect, gathered before any is written: their stubs'
 * page is made executable once, and only then do slots point at it. */
struct pending {
	uintptr_t *slot;
	uintptr_t stub;
	unsigned char mark; /* its function's subtree mark (subtree.c), or 0 */
};

/* Whether relocation r of d fills a slot the module calls another's
 * function through (elfx.File.LibCall's rule); its symbol into *sym. */
static int libcall_slot(const struct dyn *d, const ElfW(Rela) *r, const ElfW(Sym) **sym)
{
	uint32_t type = (uint32_t)ELF64_R_TYPE(r->r_info);
	size_t si = ELF64_R_SYM(r->r_info);
	if ((type != FTRT_R_JUMP_SLOT && type != FTRT_R_GLOB_DAT) || si == 0)
		return 0;
	const ElfW(Sym) *s = &d->symtab[si];
	int t = ELF64_ST_TYPE(s->st_info);
	*sym = s;
	return s->st_shndx == SHN_UNDEF && s->st_name != 0 && (type == FTRT_R_JUMP_SLOT || t == STT_FUNC || t == STT_GNU_IFUNC);
}

static size_t count_slots(const struct dyn *d, const ElfW(Rela) *r, size_t n)
{
	size_t k = 0;
	const ElfW(Sym) *sym;
	for (size_t i = 0; i < n; i++)
		k += (size_t)libcall_slot(d, &r[i], &sym);
	return k;
}

static void hook_table(const struct ftrt_mod *md, const struct dyn *d, const ElfW(Rela) *r, size_t n, struct pending *out, size_t *nout,
		       size_t cap, struct ftrt_libcall_stats *st)
{
	for (size_t i = 0; i < n && *nout < cap; i++) {
		const ElfW(Sym) *sym;
		if (!libcall_slot(d, &r[i], &sym))
			continue;
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info);
		size_t si = ELF64_R_SYM(r[i].r_info);
		const char *name = d->strtab + sym->st_name;
		st->slots++;
		int pick = left_alone(name) ? 0 : baked ? (ftrt_filter_match(baked, name, NULL, NULL) ? PICK_TRACE : 0) : ftrt_pick(name);
		if (!(pick & PICK_TRACE))
			continue;
		uintptr_t *slot = (uintptr_t *)(md->bias + r[i].r_offset);
		uintptr_t target = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (in_stubs(target))
			continue; /* redirected already (a module served twice) */
		if (type == FTRT_R_JUMP_SLOT && target >= md->lo && target < md->hi) /* lazy, not bound yet */
			target = early_on ? early_target((uintptr_t)slot, name) : resolve(md, name, version_of(d, si));
		if (!target) {
			if (ELF64_ST_BIND(sym->st_info) != STB_WEAK)
				st->unresolved++; /* not found (an undefined weak one is absent by design) */
			continue;
		}
		int loader = ftrt_libcall_wanted() == LIBCALL_NEST ? loader_call(name) : 0;
		uintptr_t stub = new_slot(md, (uintptr_t)slot, target, name, plain_call(name) || loader == 1, loader);
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
	uintptr_t x = (uintptr_t)((const struct pending *)a)->slot, y = (uintptr_t)((const struct pending *)b)->slot;
	return x < y ? -1 : x > y;
}

/* The subtree filters' marks of md's slots (FTRACE_GRAPH_FUNCS and
 * FTRACE_GRAPH_NOTRACE name library functions as the program's), for
 * the tracer to find by a call's slot as by a site (subtree.c), made
 * before any slot points at its stub. */
static void publish_marks(const struct ftrt_mod *md, struct pending *p, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i].mark != 0;
	if (!k)
		return;
	size_t bytes = k * (sizeof(uintptr_t) + 1) + sizeof(struct pending) * n;
	unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return;
	struct pending *sorted = (struct pending *)m;
	uintptr_t *ips = (uintptr_t *)(m + sizeof(struct pending) * n);
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

void ftrt_libslot_capture(uint32_t idx, int on)
{
	struct ftrt_libslot *s = &ftrt_libslots[idx / FTRT_LIBSLOT_CHUNK][idx % FTRT_LIBSLOT_CHUNK];
	__atomic_store_n(&s->capture, on, __ATOMIC_RELAXED);
}

uint32_t ftrt_libslots_count(void)
{
	return __atomic_load_n(&nslots, __ATOMIC_ACQUIRE);
}

void ftrt_libcalls_module(const struct ftrt_mod *md)
{
	for (uint32_t i = 0; i < nslots; i++) {
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
	struct dyn d = { 0 };
	struct find f = { md, &d, 0 };
	dl_iterate_phdr(find_dyn, &f);
	if (!f.found || !d.symtab || !d.strtab || !ftrt_patch_up.libcall_entry)
		return;
	size_t cap = count_slots(&d, d.jmprel, d.njmprel) + count_slots(&d, d.rela, d.nrela), n = 0;
	if (!cap)
		return;
	struct pending *p = mmap(NULL, cap * sizeof *p, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (stubs_reserve(cap) != 0) {
		munmap(p, cap * sizeof *p);
		return;
	}
	struct ftrt_libcall_stats st = { 0 };
	hook_table(md, &d, d.jmprel, d.njmprel, p, &n, cap, &st);
	hook_table(md, &d, d.rela, d.nrela, p, &n, cap, &st);
	/* Only executable from here on, before any slot points at a stub. */
	if (stubs_seal(md->owner) != 0) {
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
			set_probe(md->owner, p[i].slot, p[i].stub);
			break;
		}
	munmap(p, cap * sizeof *p);
	md->libcalls = st;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ftrt_env(ENV_DEBUG))
		report(md, &st, (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec));
}

/* Where the loaded object holding an address lies, as a module record
 * says it (bias, extent), for find_dyn. */
struct locate {
	uintptr_t inside;
	struct ftrt_mod *md;
};

static int locate_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct locate *l = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
	}
	if (l->inside < lo || l->inside >= hi)
		return 0;
	l->md->bias = info->dlpi_addr;
	l->md->lo = lo;
	l->md->hi = hi;
	return 1;
}

/* An undefined symbol of the module stub's (module/): the object has
 * sites, and registers itself. */
static int calls_register(const struct dyn *d, const ElfW(Rela) *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t si = ELF64_R_SYM(r[i].r_info);
		if (si && d->symtab[si].st_name && strcmp(d->strtab + d->symtab[si].st_name, FTRT_SYM_MODULE_REGISTER) == 0)
			return 1;
	}
	return 0;
}

int ftrt_libcalls_plain(const struct dl_phdr_info *info)
{
	/* The program (its record is the first), the loader, the vDSO. */
	if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == getauxval(AT_BASE))
		return 0;
	struct ftrt_mod tmp = { 0 };
	struct locate l = { 0, &tmp };
	for (int i = 0; i < info->dlpi_phnum && !l.inside; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD)
			l.inside = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	if (!l.inside || l.inside == getauxval(AT_SYSINFO_EHDR) || !locate_object((struct dl_phdr_info *)info, sizeof *info, &l))
		return 0;
	struct dyn d = { 0 };
	struct find f = { &tmp, &d, 0 };
	find_dyn((struct dl_phdr_info *)info, sizeof *info, &f);
	if (!f.found || !d.symtab || !d.strtab)
		return 0;
	if (calls_register(&d, d.jmprel, d.njmprel) || calls_register(&d, d.rela, d.nrela))
		return 0;
	return count_slots(&d, d.jmprel, d.njmprel) + count_slots(&d, d.rela, d.nrela) > 0;
}

/* A rescan's preparation of the object at inside, named name: held
 * loaded (a dlopen of it that loads nothing) while it is served, and its
 * lazy slots' functions looked up (early). 0: it is gone. */
static void *pin;

static int prepare(uintptr_t inside, const char *name)
{
	pin = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
	if (!pin)
		return 0;
	struct ftrt_mod tmp = { 0 };
	struct locate l = { inside, &tmp };
	struct dyn d = { 0 };
	struct find f = { &tmp, &d, 0 };
	nearly = 0;
	early_on = 1;
	tmp.path = name;
	if (dl_iterate_phdr(locate_object, &l))
		dl_iterate_phdr(find_dyn, &f);
	if (f.found && d.symtab && d.strtab) {
		if (early_room(count_slots(&d, d.jmprel, d.njmprel)) != 0)
			return 1; /* its lazy slots left as they are */
		for (size_t i = 0; i < d.njmprel && nearly < early_cap; i++) {
			const ElfW(Sym) *sym;
			if (!libcall_slot(&d, &d.jmprel[i], &sym) || (uint32_t)ELF64_R_TYPE(d.jmprel[i].r_info) != FTRT_R_JUMP_SLOT)
				continue;
			const char *sname = d.strtab + sym->st_name;
			uintptr_t *slot = (uintptr_t *)(tmp.bias + d.jmprel[i].r_offset);
			uintptr_t target = __atomic_load_n(slot, __ATOMIC_RELAXED);
			if (target < tmp.lo || target >= tmp.hi || left_alone(sname) || !(ftrt_pick(sname) & PICK_TRACE))
				continue;
			early[nearly].slot = (uintptr_t)slot;
			early[nearly].target = resolve(&tmp, sname, version_of(&d, ELF64_R_SYM(d.jmprel[i].r_info)));
			early[nearly].hash = name_hash(sname);
			nearly++;
		}
	}
	return 1;
}

static void done(void)
{
	early_on = 0;
	nearly = 0;
	if (pin)
		dlclose(pin);
	pin = NULL;
}

static const struct ftrt_scan_calls scan_calls = { ftrt_libcalls_plain, ftrt_libcalls_still, prepare, done };

/* One rescan at a time; one that finds another running leaves its work
 * to the next call that asks (a thread waiting here could hold the
 * loader's lock the running one waits for). */
static pthread_mutex_t rescan_lock = PTHREAD_MUTEX_INITIALIZER;

void ftrt_libcalls_rescan(void)
{
	if (pthread_mutex_trylock(&rescan_lock) != 0)
		return;
	ftrt_modules_scan(&scan_calls, 0);
	pthread_mutex_unlock(&rescan_lock);
}

void ftrt_libcalls_scan_locked(void)
{
	ftrt_modules_scan(&scan_calls, 1);
}

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

/* The table's entry whose stub slot holds, or NULL. */
static struct ftrt_libslot *entry_of(uintptr_t *slot, uintptr_t stub)
{
	for (uint32_t i = nslots; i-- > 0;) {
		struct ftrt_libslot *e = &ftrt_libslots[i / FTRT_LIBSLOT_CHUNK][i % FTRT_LIBSLOT_CHUNK];
		if (e->ip == (uintptr_t)slot && e->stub == stub)
			return e;
	}
	return NULL;
}

/* One slot's store, its page made writable for it when it is read-only
 * (RELRO). 0, or -errno. */
static int live_store(const struct dyn *d, uintptr_t *slot, uintptr_t v)
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

/* op over md's slots: the count changed, or -errno. resolve: the lazy
 * slots' functions may be looked up here (a pass, in the loader's
 * context), else only taken from early. */
static int live_slots(const struct ftrt_mod *md, int op, int may_resolve)
{
	struct dyn d = { 0 };
	struct find f = { md, &d, 0 };
	dl_iterate_phdr(find_dyn, &f);
	if (!f.found || !d.symtab || !d.strtab)
		return 0;
	int changed = 0, err = 0;
	/* Twice over the relocations: first the slots to make untraced and
	 * a count of those to make traced, then, their stubs made, those. */
	size_t want_on = 0;
	for (int pass = 0; pass < 2 && !err; pass++) {
		if (pass == 1) {
			if (!want_on)
				break;
			if (stubs_reserve(want_on) != 0)
				return changed ? changed : -ENOMEM;
		}
		const ElfW(Rela) *tabs[2] = { d.jmprel, d.rela };
		size_t ns[2] = { d.njmprel, d.nrela };
		struct pending *p = NULL;
		size_t np = 0;
		if (pass == 1) {
			p = mmap(NULL, want_on * sizeof *p, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED) {
				stubs_seal(md->owner);
				return changed ? changed : -ENOMEM;
			}
		}
		for (int t = 0; t < 2; t++)
			for (size_t i = 0; i < ns[t]; i++) {
				const ElfW(Sym) *sym;
				if (!libcall_slot(&d, &tabs[t][i], &sym))
					continue;
				const char *name = d.strtab + sym->st_name;
				if (left_alone(name))
					continue;
				int w = live_want(op, name);
				if (w < 0)
					continue;
				uintptr_t *slot = (uintptr_t *)(md->bias + tabs[t][i].r_offset);
				uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
				int on = in_stubs(v);
				if (pass == 0 && on && !w) {
					struct ftrt_libslot *e = entry_of(slot, v);
					if (e && live_store(&d, slot, e->target) == 0)
						changed++;
				} else if (!on && w) {
					if (pass == 0) {
						want_on++;
						continue;
					}
					uintptr_t target = v;
					if ((uint32_t)ELF64_R_TYPE(tabs[t][i].r_info) == FTRT_R_JUMP_SLOT && target >= md->lo && target < md->hi)
						target = may_resolve ? resolve(md, name, version_of(&d, ELF64_R_SYM(tabs[t][i].r_info))) : early_target((uintptr_t)slot, name);
					if (!target || np >= want_on)
						continue;
					int loader = ftrt_libcall_wanted() == LIBCALL_NEST ? loader_call(name) : 0;
					uintptr_t stub = new_slot(md, (uintptr_t)slot, target, name, plain_call(name) || loader == 1, loader);
					if (!stub)
						continue;
					p[np].slot = slot;
					p[np].stub = stub;
					p[np].mark = 0;
					np++;
				}
			}
		if (pass == 1) {
			if (stubs_seal(md->owner) == 0)
				for (size_t i = 0; i < np; i++)
					if (live_store(&d, p[i].slot, p[i].stub) == 0)
						changed++;
			munmap(p, want_on * sizeof *p);
		}
	}
	return changed;
}

void ftrt_libcalls_live_prepare(int op, const char *list)
{
	pthread_mutex_lock(&rescan_lock);
	nearly = 0;
	if (!ftrt_libcall_wanted() || op == OP_DISABLE)
		return;
	live_begin(list);
	/* The objects first (the loader's lookups cannot be made from the
	 * walk), then each one's lazy slots of functions the list chooses. */
	struct objs {
		size_t n;
		struct ftrt_mod md[256];
	} *o = mmap(NULL, sizeof *o, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (o == MAP_FAILED)
		return;
	ftrt_modules_lock();
	for (int i = 0; ftrt_module_at(i) && o->n < 256; i++) {
		const struct ftrt_mod *m = ftrt_module_at(i);
		if (m->live)
			o->md[o->n++] = (struct ftrt_mod){ .bias = m->bias, .lo = m->lo, .hi = m->hi, .path = m->path ? strdup(m->path) : NULL };
	}
	ftrt_modules_release();
	for (size_t k = 0; k < o->n; k++) {
		struct ftrt_mod *md = &o->md[k];
		struct dyn d = { 0 };
		struct find f = { md, &d, 0 };
		dl_iterate_phdr(find_dyn, &f);
		if (f.found && d.symtab && d.strtab && early_room(d.njmprel) == 0)
			for (size_t i = 0; i < d.njmprel; i++) {
				const ElfW(Sym) *sym;
				if (!libcall_slot(&d, &d.jmprel[i], &sym) || (uint32_t)ELF64_R_TYPE(d.jmprel[i].r_info) != FTRT_R_JUMP_SLOT)
					continue;
				const char *name = d.strtab + sym->st_name;
				uintptr_t *slot = (uintptr_t *)(md->bias + d.jmprel[i].r_offset);
				uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
				if (v < md->lo || v >= md->hi || left_alone(name) || live_want(op, name) != 1)
					continue;
				early[nearly].slot = (uintptr_t)slot;
				early[nearly].target = resolve(md, name, version_of(&d, ELF64_R_SYM(d.jmprel[i].r_info)));
				early[nearly].hash = name_hash(name);
				nearly++;
			}
		free((void *)md->path);
	}
	munmap(o, sizeof *o);
}

int ftrt_libcalls_live(int op, const char *list)
{
	if (!ftrt_libcall_wanted() || !ftrt_patch_up.libcall_entry)
		return 0;
	int mode = __atomic_load_n(&ftrt_mode, __ATOMIC_RELAXED);
	if (mode != FTRT_FUNCTION && mode != FTRT_GRAPH)
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
	int mode = __atomic_load_n(&ftrt_mode, __ATOMIC_RELAXED);
	if (!ftrt_libcall_wanted() || !ftrt_patch_up.libcall_entry || (mode != FTRT_FUNCTION && mode != FTRT_GRAPH))
		return 0;
	live_begin(list);
	return live_slots(md, op, !early_on);
}

void ftrt_libcalls_live_finish(void)
{
	nearly = 0;
	pthread_mutex_unlock(&rescan_lock);
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
