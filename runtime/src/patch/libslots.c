/*
 * Library calls (libslots.h says what each part does): the table of
 * redirected slots and their cold entries, their stubs' pages, and the
 * functions treated apart. patch/libcall.c says how it all works.
 *
 * Start-up and live code: libc is used freely.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/layout.h"
#include "arch/libstub.h"
#include "core/ftrt.h"
#include "libcall.h"
#include "libslots.h"
#include "pass.h"
#include "patch.h"

_Static_assert(offsetof(struct ftrt_libslot, ip) == LS_IP && offsetof(struct ftrt_libslot, target) == LS_TARGET &&
		       sizeof(struct ftrt_libslot) == LS_SIZE && LIBSLOT_FLAGS == LS_FLAGS,
	       "arch/layout.h: struct ftrt_libslot");

struct ftrt_libslot *ftrt_libslots[FTRT_LIBSLOT_CHUNKS];
struct ftrt_libslot_cold *ftrt_libslots_cold[FTRT_LIBSLOT_CHUNKS];
uint32_t ftrt_lib_nslots; /* slots in the table */

/* The stub pages of the batch being made (a module's pass, a live
 * change): one mapping of as many pages as its slots could need, filled
 * in order, each stub in a cell of stub_size bytes (per_page a page),
 * each page's last words (the addresses its stubs go through) written as
 * it is begun: only the pages used are ever touched. Made readable and
 * executable at once, its unused pages unmapped, before any slot points
 * at a stub. Under function_graph, on an ISA with graph stubs (x86-64),
 * a cell holds one, or an ordinary stub for a slot that may not have
 * it. */
static unsigned char *stubs;
static size_t stub_pages, stubs_used, stub_size, per_page;

struct ftrt_lib_cursor ftrt_lib_cursor_at(unsigned char *base)
{
	return (struct ftrt_lib_cursor){ base, per_page };
}

/* The cursor's stub; the cursor moved on to the next one (no division
 * per stub). */
unsigned char *ftrt_lib_cursor_next(struct ftrt_lib_cursor *c)
{
	unsigned char *at = c->at;
	if (--c->left) {
		c->at += stub_size;
	} else {
		c->at = (unsigned char *)((uintptr_t)at & ~(uintptr_t)(FTRT_LIBSTUB_PAGE - 1)) + FTRT_LIBSTUB_PAGE;
		c->left = per_page;
	}
	return at;
}

static struct ftrt_lib_cursor fill; /* the next stub to make */

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

static struct ftrt_dyn dyns[FTRT_MOD_MAX]; /* by owner - 1 (the registry's lock) */

void ftrt_lib_dyn_keep(int owner, const struct ftrt_dyn *d)
{
	if (owner >= 1 && owner <= FTRT_MOD_MAX)
		dyns[owner - 1] = *d;
}

int ftrt_lib_dyn_of(int owner, struct ftrt_dyn *d)
{
	if (owner < 1 || owner > FTRT_MOD_MAX || !dyns[owner - 1].symtab)
		return -1;
	*d = dyns[owner - 1];
	return 0;
}

void ftrt_libcalls_release(int owner)
{
	if (owner >= 1 && owner <= FTRT_MOD_MAX)
		dyns[owner - 1] = (struct ftrt_dyn){ 0 };
	/* Its slots' names were its string table's: gone with it. */
	for (uint32_t i = 0; i < ftrt_lib_nslots; i++) {
		struct ftrt_libslot_cold *c = ftrt_libslot_cold(i);
		if (c && c->owner == owner)
			__atomic_store_n(&c->name, NULL, __ATOMIC_RELAXED);
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

void ftrt_lib_set_probe(int owner, uintptr_t *slot, uintptr_t stub)
{
	for (int i = 0; i < REGIONS; i++)
		if (regions[i].owner == owner && regions[i].base && !regions[i].probe) {
			regions[i].probe = slot;
			regions[i].probe_stub = stub;
			return;
		}
}

int ftrt_lib_stubs_reserve(size_t n, int graph)
{
	stub_size = FTRT_LIBSTUB_SIZE;
#ifdef FTRT_LIBGRAPH_SIZE
	if (graph)
		stub_size = FTRT_LIBGRAPH_SIZE;
#else
	(void)graph;
#endif
	per_page = FTRT_LIBSTUBS_OF(stub_size);
	stub_pages = (n + per_page - 1) / per_page;
	stubs_used = 0;
	void *m = mmap(NULL, stub_pages * FTRT_LIBSTUB_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		stubs = NULL;
		return -1;
	}
	stubs = m;
	fill = ftrt_lib_cursor_at(stubs);
	return 0;
}

unsigned char *ftrt_lib_stubs_base(void)
{
	return stubs;
}

int ftrt_lib_stubs_seal(int owner)
{
	size_t used = (stubs_used + per_page - 1) / per_page;
	if (used < stub_pages)
		munmap(stubs + used * FTRT_LIBSTUB_PAGE, (stub_pages - used) * FTRT_LIBSTUB_PAGE);
	int err = used && mprotect(stubs, used * FTRT_LIBSTUB_PAGE, PROT_READ | PROT_EXEC) != 0 ? -1 : 0;
	if (used)
		remember(owner, stubs, used * FTRT_LIBSTUB_PAGE);
	stubs = NULL;
	stub_pages = stubs_used = 0;
	return err;
}

/* A name's hash for ftrt_lib_listed's set: its length and its first,
 * second and last bytes, mixed. Cheaper than hashing every byte (a
 * multiply's latency each), which the pass paid twice a slot, and as
 * good at telling a slot's name from the few in the lists below; a name
 * that shares one is told apart by the binary search. */
static inline __attribute__((always_inline)) uint32_t name_hash(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	if (!n)
		return 0;
	uint32_t h = (uint32_t)n * 0x9e3779b1u ^ (uint32_t)(unsigned char)s[0] << 16 ^ (uint32_t)(unsigned char)s[1] << 8 ^
		     (unsigned char)s[n - 1];
	return h ^ h >> 13;
}

uint32_t ftrt_lib_name_hash(const char *s)
{
	return name_hash(s);
}

/* Whether name is one of names[0, n), sorted in strcmp's order. */
static int one_of(const char *name, const char *const *names, size_t n)
{
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

/* Functions whose slots are left alone: the C++ runtime's catch hooks,
 * the start-up's and the exit's, and __tls_get_addr, which compiled code
 * calls for every access to another module's TLS. */
static const char *const alone_names[] = {
	"__cxa_atexit", "__cxa_begin_catch", "__cxa_end_catch", "__cxa_finalize", "__libc_start_main", "__tls_get_addr",
};

/* Functions whose return is never hooked, their calls recorded as plain
 * calls (a function_graph trace shows them without a duration): those
 * that return twice or switch stacks (vfork, clone, the setjmp and
 * context families), those that walk the stack (backtrace, the
 * unwinder's _Unwind_*), which would meet a hook of their own, and the
 * loader's that take their caller from their return address (dlopen's
 * and dlmopen's search path and namespace, dlsym's and dlvsym's
 * RTLD_NEXT), which a hook would make the runtime. */
static const char *const plain_names[] = {
	"__clone", "__clone3", "__sigsetjmp", "_setjmp", "backtrace", "clone", "clone3", "dlmopen", "dlopen",
	"dlsym", "dlvsym", "getcontext", "makecontext", "savectx", "setcontext", "setjmp", "sigsetjmp",
	"swapcontext", "vfork",
};

#define N(a) (sizeof a / sizeof a[0])

/* Which list name is in (LISTED_*): a 4096-bit set of both lists'
 * hashes (made once: the pass runs under the registry's lock) rules
 * most names out with one test, before the binary searches. */
static inline __attribute__((always_inline)) int listed(const char *name)
{
	static uint64_t seen[64];
	static int made;
	if (!made) {
		for (size_t i = 0; i < N(alone_names) + N(plain_names); i++) {
			const char *n = i < N(alone_names) ? alone_names[i] : plain_names[i - N(alone_names)];
			uint32_t k = name_hash(n) % 4096;
			seen[k / 64] |= 1ull << (k % 64);
		}
		made = 1;
	}
	if (name[0] == '_' && name[1] == 'U' && strncmp(name, "_Unwind_", 8) == 0)
		return LISTED_PLAIN;
	uint32_t h = name_hash(name) % 4096;
	if (!(seen[h / 64] >> (h % 64) & 1))
		return LISTED_NOT;
	if (one_of(name, alone_names, N(alone_names)))
		return LISTED_ALONE;
	return one_of(name, plain_names, N(plain_names)) ? LISTED_PLAIN : LISTED_NOT;
}

int ftrt_lib_listed(const char *name)
{
	return listed(name);
}

/* The loader's functions that take their caller from their return
 * address (plain_names has them): a hook there makes the caller the
 * runtime, which lies in the program, so the program's own calls of
 * them keep their returns (and show their values). */
int ftrt_lib_caller_sensitive(const char *name)
{
	static const char *const names[] = { "dlmopen", "dlopen", "dlsym", "dlvsym" };
	return name[0] == 'd' && name[1] == 'l' && one_of(name, names, N(names));
}

int ftrt_lib_plain(const struct ftrt_mod *md, const char *name, int list)
{
	return list == LISTED_PLAIN && !(md->owner == 1 && ftrt_lib_caller_sensitive(name));
}

/* The loader's functions (a slot's cold loader field): 1 those after
 * which the loaded objects are scanned again, 2 those whose call does
 * that scan once one of the first has returned on its thread
 * (FTRACE_LIBCALL=nest: tracers/libcall.c). Their arguments are
 * integers and pointers alone: the scan, which may use the vector
 * registers, clobbers no argument. */
int ftrt_lib_loader_call(const char *name)
{
	if (name[0] != 'd' || name[1] != 'l')
		return 0;
	static const char *const after[] = { "dlclose", "dlmopen", "dlopen" };
	static const char *const then[] = { "dladdr", "dladdr1", "dlerror", "dlinfo", "dlsym", "dlvsym" };
	if (one_of(name, after, N(after)))
		return 1;
	return one_of(name, then, N(then)) ? 2 : 0;
}

/* The code of the modules with sites (registered), whose functions
 * record their own calls: gathered once a pass, as every slot asks. */
static struct span {
	uintptr_t lo, hi;
} traced[FTRT_MOD_MAX];
static int ntraced;

void ftrt_lib_traced_gather(void)
{
	ntraced = 0;
	for (int i = 0; ftrt_module_at(i) && ntraced < FTRT_MOD_MAX; i++) {
		const struct ftrt_mod *m = ftrt_module_at(i);
		if (m->live && m->desc && m->desc->start != m->desc->stop)
			traced[ntraced++] = (struct span){ m->lo, m->hi };
	}
}

static int in_traced_module(uintptr_t a)
{
	for (int i = 0; i < ntraced; i++)
		if (a >= traced[i].lo && a < traced[i].hi)
			return 1;
	return 0;
}

/* A chunk of the table, or of its cold entries, made when first
 * needed: 0, or -1. */
static int chunk(void **c, size_t size)
{
	if (*c)
		return 0;
	void *m = mmap(NULL, FTRT_LIBSLOT_CHUNK * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	__atomic_store_n(c, m, __ATOMIC_RELEASE);
	return 0;
}

static inline __attribute__((always_inline)) int new_slot(const struct ftrt_mod *md, uintptr_t ip, uintptr_t target, const char *name, int plain, int loader, int cold)
{
	uint32_t idx = ftrt_lib_nslots;
	if (idx >= FTRT_LIBSLOT_CHUNKS * FTRT_LIBSLOT_CHUNK || !stubs || stubs_used == stub_pages * per_page)
		return -1;
	if (chunk((void **)&ftrt_libslots[idx / FTRT_LIBSLOT_CHUNK], sizeof(struct ftrt_libslot)) != 0 ||
	    ((cold || loader) && chunk((void **)&ftrt_libslots_cold[idx / FTRT_LIBSLOT_CHUNK], sizeof(struct ftrt_libslot_cold)) != 0))
		return -1;
	struct ftrt_libslot *s = &ftrt_libslots[idx / FTRT_LIBSLOT_CHUNK][idx % FTRT_LIBSLOT_CHUNK];
	/* What a cold entry says is for the C entry: a graph stub's calls
	 * go there (LIBSLOT_GENERAL). */
	s->ip = ip | (in_traced_module(target) ? LIBSLOT_SKIP : 0) | (plain ? LIBSLOT_PLAIN : 0) | (loader ? LIBSLOT_GENERAL : 0);
	s->target = target;
	if (cold || loader) {
		struct ftrt_libslot_cold *c = ftrt_libslot_cold(idx);
		c->name = name;
		c->owner = md->owner;
		c->loader = (unsigned char)loader;
	}
	__atomic_store_n(&ftrt_lib_nslots, idx + 1, __ATOMIC_RELEASE);
	if (fill.left == per_page)
		ftrt_arch_libpage(fill.at, (uintptr_t)ftrt_patch_up.libcall_entry); /* a page begun */
	unsigned char *at = ftrt_lib_cursor_next(&fill);
	stubs_used++;
	if (stub_size == FTRT_LIBSTUB_SIZE || plain || loader || ftrt_arch_libgraph(at, idx, (uintptr_t)s, target) != 0)
		ftrt_arch_libstub(at, stub_size, idx);
	return 0;
}

int ftrt_lib_new_slot(const struct ftrt_mod *md, uintptr_t ip, uintptr_t target, const char *name, int plain, int loader, int cold)
{
	return new_slot(md, ip, target, name, plain, loader, cold);
}

int ftrt_lib_names_wanted(void)
{
	return ftrt_env(ENV_ARGS) || ftrt_env(ENV_RETVAL) || ftrt_env(ENV_LIBARGS) || ftrt_env(ENV_LIBRETVAL) || ftrt_env(ENV_ARGS_SOCKET);
}

uint32_t ftrt_libslots_count(void)
{
	return __atomic_load_n(&ftrt_lib_nslots, __ATOMIC_ACQUIRE);
}

const char *ftrt_libslot_name(uint32_t idx)
{
	const struct ftrt_libslot_cold *c = ftrt_libslot_cold(idx);
	return c ? __atomic_load_n(&c->name, __ATOMIC_RELAXED) : NULL;
}

void ftrt_libslot_capture(uint32_t idx, int on)
{
	struct ftrt_libslot *s = &ftrt_libslots[idx / FTRT_LIBSLOT_CHUNK][idx % FTRT_LIBSLOT_CHUNK];
	if (!ftrt_libslot_cold(idx) && (!on || chunk((void **)&ftrt_libslots_cold[idx / FTRT_LIBSLOT_CHUNK], sizeof(struct ftrt_libslot_cold)) != 0))
		return; /* off and none, or no room: not captured */
	if (on)
		ftrt_libslot_set(s, LIBSLOT_GENERAL); /* before the flag: a graph stub's call takes the C entry */
	__atomic_store_n(&ftrt_libslot_cold(idx)->capture, (unsigned char)on, __ATOMIC_RELEASE);
}

/* One more mark: 0, or -1 (no room: the slot is not marked). */
static int add_mark(struct ftrt_lib_pass *p, uintptr_t ip, unsigned char mark)
{
	if (p->nmarks == p->capmarks) {
		size_t cap = p->capmarks ? 2 * p->capmarks : 256;
		struct ftrt_lib_mark *m = mmap(NULL, cap * sizeof *m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -1;
		if (p->marks) {
			memcpy(m, p->marks, p->nmarks * sizeof *m);
			munmap(p->marks, p->capmarks * sizeof *m);
		}
		p->marks = m;
		p->capmarks = cap;
	}
	p->marks[p->nmarks++] = (struct ftrt_lib_mark){ ip, mark };
	return 0;
}

/* Whether relocation r of d fills a slot the module calls another's
 * function through (elfx.File.LibCall's rule); its symbol into *sym. */
static inline __attribute__((always_inline)) int slot_of(const struct ftrt_dyn *d, const ElfW(Rela) *r, const ElfW(Sym) **sym)
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

int ftrt_lib_slot_of(const struct ftrt_dyn *d, const ElfW(Rela) *r, const ElfW(Sym) **sym)
{
	return slot_of(d, r, sym);
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
void ftrt_lib_hook_table(const struct ftrt_mod *md, const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n, struct ftrt_lib_pass *p,
		       struct ftrt_libcall_stats *st)
{
	/* p's choices, once: kept in registers over the loop. */
	const char *const baked = p->baked;
	const int again = p->again, nest = p->nest, cold = p->cold;
	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD < n)
			__builtin_prefetch(&d->symtab[ELF64_R_SYM(r[i + AHEAD].r_info)]);
		if (i + AHEAD / 2 < n) {
			size_t k = ELF64_R_SYM(r[i + AHEAD / 2].r_info);
			if (k)
				__builtin_prefetch(d->strtab + d->symtab[k].st_name);
		}
		const ElfW(Sym) *sym;
		if (!slot_of(d, &r[i], &sym))
			continue;
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info);
		size_t si = ELF64_R_SYM(r[i].r_info);
		const char *name = d->strtab + sym->st_name;
		int list = listed(name);
		st->slots++;
		if (list == LISTED_ALONE)
			continue;
		int pick = baked ? (ftrt_filter_match(baked, name, NULL, NULL) ? PICK_TRACE : 0) : ftrt_pick(name);
		if (!(pick & PICK_TRACE))
			continue;
		uintptr_t *slot = (uintptr_t *)(md->bias + r[i].r_offset);
		uintptr_t target = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (again && ftrt_lib_in_stubs(target))
			continue; /* redirected already */
		if (type == FTRT_R_JUMP_SLOT && target >= md->lo && target < md->hi) /* lazy, not bound yet */
			target = ftrt_lib_early_on ? ftrt_lib_early_target((uintptr_t)slot, name) : ftrt_dyn_resolve(md, name, ftrt_dyn_version(d, si));
		if (!target) {
			if (ELF64_ST_BIND(sym->st_info) != STB_WEAK)
				st->unresolved++; /* not found (an undefined weak one is absent by design) */
			continue;
		}
		int loader = nest ? ftrt_lib_loader_call(name) : 0;
		unsigned char mark = (unsigned char)(pick & (MARK_CHOSEN | MARK_NOTRACE));
		if (new_slot(md, (uintptr_t)slot, target, name, ftrt_lib_plain(md, name, list), loader, cold) != 0)
			st->failed++;
		else if (mark && add_mark(p, (uintptr_t)slot, mark) != 0)
			st->failed++;
	}
}



size_t ftrt_lib_count_slots(const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n)
{
	size_t k = 0;
	const ElfW(Sym) *sym;
	for (size_t i = 0; i < n; i++)
		k += (size_t)ftrt_lib_slot_of(d, &r[i], &sym);
	return k;
}

/* The functions of lazy slots looked up early (libslots.h), one module
 * or one live change at a time, under ftrt_lib_rescan_lock
 * (libscan.c). */
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
