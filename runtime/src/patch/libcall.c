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
 * as the loader would, by name and version, in the global scope
 * (dlvsym, dlsym: an IFUNC's resolver runs as the loader's would), else
 * in the module's own (libdyn.c, which reads the module's dynamic
 * section). A slot whose function is not found is left as the loader
 * left it.
 *
 * Functions that return twice or switch stacks (vfork, clone, the
 * setjmp and context families), and those that walk the stack
 * (backtrace, the unwinder's), whose return a hook would break, are
 * recorded as plain calls, their returns never hooked (plain_names);
 * those the C++ runtime and the start-up rely on are left alone
 * (alone_names). Functions that never return (exit, abort, longjmp,
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
#include <stddef.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "arch/layout.h"
#include "arch/libstub.h"
#include "arch/poke.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "libcall.h"
#include "libdyn.h"
#include "pass.h"
#include "patch.h"

_Static_assert(offsetof(struct ftrt_libslot, ip) == LS_IP && offsetof(struct ftrt_libslot, target) == LS_TARGET &&
		       sizeof(struct ftrt_libslot) == LS_SIZE && LIBSLOT_FLAGS == LS_FLAGS,
	       "arch/layout.h: struct ftrt_libslot");

struct ftrt_libslot *ftrt_libslots[FTRT_LIBSLOT_CHUNKS];
static uint32_t nslots; /* slots in the table */

/* The stub pages of the module being passed: one mapping of as many
 * pages as its slots could need, filled in order, each stub in a cell
 * of stub_size bytes (per_page a page), each page's last words (the
 * addresses its stubs go through) written as it is begun: only the
 * pages used are ever touched. Made readable and executable at once,
 * its unused pages unmapped, before any slot points at a stub.
 * Under function_graph, on an ISA with graph stubs (x86-64), a cell
 * holds one, or an ordinary stub for a slot that may not have it. */
static unsigned char *stubs;
static size_t stub_pages, stubs_used, stub_size, per_page;

/* A walk over the stubs of the pages at base, in order: at, the next
 * one, left the cells after it in its page (no division per stub). */
struct cursor {
	unsigned char *at;
	size_t left;
};

static struct cursor cursor_at(unsigned char *base)
{
	return (struct cursor){ base, per_page };
}

/* The cursor's stub; the cursor moved on to the next one. */
static unsigned char *cursor_next(struct cursor *c)
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

static struct cursor fill; /* the next stub to make */

/* Each module's stub pages, by its owner number: unmapped when it is
 * unloaded (ftrt_libcalls_release), as nothing may run its code then,
 * nor so call through its slots. */
#define REGIONS 512
static struct region {
	int owner;
	void *base;
	size_t len;
} regions[REGIONS];

void ftrt_libcalls_release(int owner)
{
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
			regions[i] = (struct region){ owner, base, len };
			return;
		}
}

static int stubs_reserve(size_t n, int graph)
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
	fill = cursor_at(stubs);
	return 0;
}


/* The pages used made only executable, the rest unmapped, and those
 * kept remembered for owner's unload: 0, or -1 (the stubs are not to be
 * used). */
static int stubs_seal(int owner)
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

int ftrt_libcall_wanted(void)
{
	const char *v = ftrt_env(ENV_LIBCALL);
	return v && strcmp(v, "1") == 0;
}

/* A name's hash for listed's set: its length and its first, second
 * and last bytes, mixed. Cheaper than hashing every byte (a multiply's
 * latency each), which the pass paid twice a slot, and as good at
 * telling a slot's name from the few in the lists below; a name that
 * shares one is told apart by the binary search. */
static uint32_t name_hash(const char *s)
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

/* Functions whose slots are left alone (above): the C++ runtime's catch
 * hooks, the start-up's and the exit's, and __tls_get_addr, which
 * compiled code calls for every access to another module's TLS. */
static const char *const alone_names[] = {
	"__cxa_atexit", "__cxa_begin_catch", "__cxa_end_catch", "__cxa_finalize", "__libc_start_main", "__tls_get_addr",
};

/* Functions whose return is never hooked, their calls recorded as plain
 * calls (a function_graph trace shows them without a duration): those
 * that return twice or switch stacks (vfork, clone, the setjmp and
 * context families), and those that walk the stack (backtrace, the
 * unwinder's _Unwind_*), which would meet a hook of their own. */
static const char *const plain_names[] = {
	"__clone", "__clone3", "__sigsetjmp", "_setjmp", "backtrace", "clone", "clone3", "getcontext",
	"makecontext", "savectx", "setcontext", "setjmp", "sigsetjmp", "swapcontext", "vfork",
};

#define N(a) (sizeof a / sizeof a[0])
enum { LISTED_NOT, LISTED_ALONE, LISTED_PLAIN };

/* Which list name is in (LISTED_*): a 4096-bit set of both lists'
 * hashes (made once: the pass runs under the registry's lock) rules
 * most names out with one test, before the binary searches. */
static int listed(const char *name)
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

/* The code of the modules with sites (registered), whose functions
 * record their own calls: gathered once a pass, as every slot asks. */
static struct span {
	uintptr_t lo, hi;
} traced[FTRT_MOD_MAX];
static int ntraced;

static void traced_gather(void)
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

/* A new slot of the table, its stub made in the module's stub pages:
 * in a graph pass, a graph stub unless its calls are plain ones. 0, or
 * -1 (no room). The table's chunks and the stub pages are touched only
 * as far as they are filled. */
static int new_slot(uintptr_t ip, uintptr_t target, int plain)
{
	if (nslots >= FTRT_LIBSLOT_CHUNKS * FTRT_LIBSLOT_CHUNK)
		return -1;
	struct ftrt_libslot **chunk = &ftrt_libslots[nslots / FTRT_LIBSLOT_CHUNK];
	if (!*chunk) {
		void *m = mmap(NULL, FTRT_LIBSLOT_CHUNK * sizeof **chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -1;
		*chunk = m;
	}
	if (!stubs || stubs_used == stub_pages * per_page)
		return -1;
	uint32_t idx = nslots++;
	struct ftrt_libslot *s = &(*chunk)[idx % FTRT_LIBSLOT_CHUNK];
	s->ip = ip | (in_traced_module(target) ? LIBSLOT_SKIP : 0) | (plain ? LIBSLOT_PLAIN : 0);
	s->target = target;
	if (fill.left == per_page)
		ftrt_arch_libpage(fill.at, (uintptr_t)ftrt_patch_up.libcall_entry); /* a page begun */
	unsigned char *at = cursor_next(&fill);
	stubs_used++;
	if (stub_size == FTRT_LIBSTUB_SIZE || plain || ftrt_arch_libgraph(at, idx, (uintptr_t)s, target) != 0)
		ftrt_arch_libstub(at, stub_size, idx);
	return 0;
}

/* Whether relocation r of d fills a slot the module calls another's
 * function through (elfx.File.LibCall's rule); its symbol into *sym. */
static int libcall_slot(const struct ftrt_dyn *d, const ElfW(Rela) *r, const ElfW(Sym) **sym)
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

/* How far ahead hook_table asks for a relocation's symbol, and for its
 * name (half as far: the symbol has come by then). */
#define AHEAD 64

/* The slots of r[0, n) that the filter chooses, each a new slot of the
 * table with its stub, as long as there is room. Each slot's symbol and
 * name are read from the module's dynamic symbol table and its strings,
 * in the order of the relocations, not theirs: a cache miss each, most
 * of the pass's time when waited for one after the other; so they are
 * asked for ahead (the symbol AHEAD relocations on, the name AHEAD / 2),
 * and their misses overlap. */
static void hook_table(const struct ftrt_mod *md, const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n, struct ftrt_libcall_stats *st)
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
		if (!libcall_slot(d, &r[i], &sym))
			continue;
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info);
		size_t si = ELF64_R_SYM(r[i].r_info);
		const char *name = d->strtab + sym->st_name;
		int list = listed(name);
		st->slots++;
		if (list == LISTED_ALONE || !(ftrt_pick(name) & PICK_TRACE))
			continue;
		uintptr_t *slot = (uintptr_t *)(md->bias + r[i].r_offset);
		uintptr_t target = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (type == FTRT_R_JUMP_SLOT && target >= md->lo && target < md->hi)
			target = ftrt_dyn_resolve(md, name, ftrt_dyn_version(d, si)); /* lazy, not bound yet */
		if (!target) {
			if (ELF64_ST_BIND(sym->st_info) != STB_WEAK)
				st->unresolved++; /* not found (an undefined weak one is absent by design) */
			continue;
		}
		if (new_slot((uintptr_t)slot, target, list == LISTED_PLAIN) != 0)
			st->failed++;
	}
}

void ftrt_libcalls_module(const struct ftrt_mod *md)
{
	for (uint32_t i = 0; i < nslots; i++) {
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
	struct cursor c = cursor_at(base);
	unsigned char *stub = cursor_next(&c);
	for (uint32_t i = first; i < last;) {
		uintptr_t a = ftrt_libslot_ip(ftrt_libslot(i));
		if (a < lo || a + 8 > hi) {
			i++, stub = cursor_next(&c); /* written with an atomic store */
			continue;
		}
		if (a >= w_lo && a + 8 <= w_hi) {
			memcpy(buf + (a - w_lo), &stub, 8);
			in++, i++, stub = cursor_next(&c);
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
	 * count them first, cost more than an unused reservation). */
	size_t cap = d.njmprel + d.nrela;
	if (!cap || stubs_reserve(cap, ftrt_mode == FTRT_GRAPH) != 0)
		return;
	traced_gather();
	struct ftrt_libcall_stats st = { 0 };
	/* The slots to redirect: the table's entries from first on, each
	 * with its stub, the k-th from first the k-th of the pages at base;
	 * all gathered before any slot is written, so that their pages are
	 * made executable once, and only then does a slot point at them. */
	uint32_t first = nslots;
	unsigned char *base = stubs;
	hook_table(md, &d, d.jmprel, d.njmprel, &st);
	hook_table(md, &d, d.rela, d.nrela, &st);
	uint32_t last = nslots;
	/* Readable and executable from here on, before any slot points at a
	 * stub. */
	if (stubs_seal(md->owner) != 0) {
		st.failed += last - first;
		last = first;
	}
	/* Slots outside RELRO: an atomic store each; those in it, through
	 * the code writer (relro_write). */
	size_t relro = 0;
	struct cursor c = cursor_at(base);
	for (uint32_t i = first; i < last; i++) {
		uintptr_t a = ftrt_libslot_ip(ftrt_libslot(i));
		unsigned char *stub = cursor_next(&c);
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
	md->libcalls = st;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ftrt_env(ENV_DEBUG))
		report(md, &st, (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec));
}
