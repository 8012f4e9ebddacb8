/*
 * Library calls (libslots.h says what each part does): the table of
 * redirected slots, their stubs' pages, the functions treated apart, a
 * module's dynamic section, and looking a lazy slot's function up as the
 * loader would. patch/libcall.c says how it all works.
 *
 * Start-up and live code: libc is used freely.
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

struct ftrt_libslot *ftrt_libslots[FTRT_LIBSLOT_CHUNKS];
struct ftrt_libslot *ftrt_libslots[FTRT_LIBSLOT_CHUNKS];
uint32_t ftrt_lib_nslots; /* slots in the table */

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
	for (uint32_t i = 0; i < ftrt_lib_nslots; i++) {
		struct ftrt_libslot *e = &ftrt_libslots[i / FTRT_LIBSLOT_CHUNK][i % FTRT_LIBSLOT_CHUNK];
		if (e->owner == owner)
			__atomic_store_n(&e->name, NULL, __ATOMIC_RELAXED);
	}
	/* Its slots' names were in its string table, which goes with it. */
	for (uint32_t i = 0; i < ftrt_lib_nslots; i++) {
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
int ftrt_lib_in_stubs(uintptr_t a)
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
void ftrt_lib_set_probe(int owner, uintptr_t *slot, uintptr_t stub)
{
	for (int i = 0; i < REGIONS; i++)
		if (regions[i].owner == owner && regions[i].base && !regions[i].probe) {
			regions[i].probe = slot;
			regions[i].probe_stub = stub;
			return;
		}
}

int ftrt_lib_stubs_reserve(size_t n)
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
int ftrt_lib_stubs_seal(int owner)
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


/* FNV-1a of a name. */
uint32_t ftrt_lib_name_hash(const char *s)
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
			uint32_t h = ftrt_lib_name_hash(names[i]) % 4096;
			seen[h / 64] |= 1ull << (h % 64);
		}
		*made = 1;
	}
	uint32_t h = ftrt_lib_name_hash(name) % 4096;
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
int ftrt_lib_left_alone(const char *name)
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
int ftrt_lib_plain_call(const char *name)
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
int ftrt_lib_loader_call(const char *name)
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



/* A pointer of the dynamic section: the loader relocates them in place
 * (glibc), or leaves them file addresses (others). */
static uintptr_t dptr(const struct ftrt_mod *md, uintptr_t v)
{
	return v >= md->lo && v < md->hi ? v : v + md->bias;
}

int ftrt_lib_find_dyn(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct ftrt_dynfind *f = arg;
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
	struct ftrt_dyn *d = f->d;
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
const char *ftrt_lib_version_of(const struct ftrt_dyn *d, size_t i)
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
uintptr_t ftrt_lib_resolve(const struct ftrt_mod *md, const char *name, const char *version)
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
uintptr_t ftrt_lib_new_slot(const struct ftrt_mod *md, uintptr_t ip, uintptr_t target, const char *name, int plain, int loader)
{
	if (ftrt_lib_nslots >= FTRT_LIBSLOT_CHUNKS * FTRT_LIBSLOT_CHUNK)
		return 0;
	struct ftrt_libslot **chunk = &ftrt_libslots[ftrt_lib_nslots / FTRT_LIBSLOT_CHUNK];
	if (!*chunk) {
		void *m = mmap(NULL, FTRT_LIBSLOT_CHUNK * sizeof **chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (m == MAP_FAILED)
			return 0;
		*chunk = m;
	}
	if (!stubs || stubs_used == stub_pages * FTRT_LIBSTUBS)
		return 0;
	uint32_t idx = ftrt_lib_nslots;
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
	__atomic_store_n(&ftrt_lib_nslots, idx + 1, __ATOMIC_RELEASE);
	stubs_used++;
	ftrt_arch_libstub(at, idx);
	return (uintptr_t)at;
}


/* The functions of a module's lazy slots, looked up before the
 * registry's lock is taken when a module is served outside a pass
 * (ftrt_libcalls_rescan: the loader's lookups take the loader's lock,
 * which a thread running a constructor holds while it waits for the
 * registry's): the pass then takes them from here, and looks nothing up
 * itself. One module at a time, under ftrt_lib_rescan_lock (libscan.c). */
struct ftrt_early *ftrt_lib_early;
size_t ftrt_lib_nearly, ftrt_lib_early_cap;
__thread int ftrt_lib_early_on;

uintptr_t ftrt_lib_early_target(uintptr_t slot, const char *name)
{
	for (size_t i = 0; i < ftrt_lib_nearly; i++)
		if (ftrt_lib_early[i].slot == slot)
			return ftrt_lib_early[i].hash == ftrt_lib_name_hash(name) ? ftrt_lib_early[i].target : 0;
	return 0;
}

/* Room in ftrt_lib_early for n more. 0, or -1. */
int ftrt_lib_early_room(size_t n)
{
	if (ftrt_lib_nearly + n <= ftrt_lib_early_cap)
		return 0;
	size_t cap = ftrt_lib_early_cap ? 2 * ftrt_lib_early_cap : 256;
	while (cap < ftrt_lib_nearly + n)
		cap *= 2;
	struct ftrt_early *e = mmap(NULL, cap * sizeof *e, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e == MAP_FAILED)
		return -1;
	if (ftrt_lib_early) {
		memcpy(e, ftrt_lib_early, ftrt_lib_nearly * sizeof *e);
		munmap(ftrt_lib_early, ftrt_lib_early_cap * sizeof *ftrt_lib_early);
	}
	ftrt_lib_early = e;
	ftrt_lib_early_cap = cap;
	return 0;
}

/* Whether relocation r of d fills a slot the module calls another's
 * function through (elfx.File.LibCall's rule); its symbol into *sym. */
int ftrt_lib_slot_of(const struct ftrt_dyn *d, const ElfW(Rela) *r, const ElfW(Sym) **sym)
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

size_t ftrt_lib_count_slots(const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n)
{
	size_t k = 0;
	const ElfW(Sym) *sym;
	for (size_t i = 0; i < n; i++)
		k += (size_t)ftrt_lib_slot_of(d, &r[i], &sym);
	return k;
}

void ftrt_libslot_capture(uint32_t idx, int on)
{
	struct ftrt_libslot *s = &ftrt_libslots[idx / FTRT_LIBSLOT_CHUNK][idx % FTRT_LIBSLOT_CHUNK];
	__atomic_store_n(&s->capture, on, __ATOMIC_RELAXED);
}

uint32_t ftrt_libslots_count(void)
{
	return __atomic_load_n(&ftrt_lib_nslots, __ATOMIC_ACQUIRE);
}
