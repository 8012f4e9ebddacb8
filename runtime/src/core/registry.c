/*
 * The modules the runtime serves: the program, and each shared object
 * that links the module stub (module/) and registers its site table when
 * the loader runs its constructors, at start or at dlopen, and takes it
 * back at dlclose. The kernel does the same for a module's mcount table
 * (ftrace_module_init, ftrace_release_mod).
 *
 * Registration is never on a hot path: it runs in a constructor or a
 * destructor, under the loader's own lock, and takes ours besides, so
 * that the trace's metadata, written then and at the end, reads a
 * settled list.
 * libc is used freely here.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <time.h>

#include "ftrt.h"

/* Records are kept after dlclose, for the metadata; a program that
 * loads more modules than FTRT_MOD_MAX over its life reuses unloaded
 * records, and the metadata counts the names it lost. */
static struct ftrt_mod mods[FTRT_MOD_MAX];
static int nmods;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int exiting; /* the process is exiting: destructors run, nothing is unmapped */
uint64_t ftrt_modules_forgotten __attribute__((visibility("hidden")));
/* What the records' changes set off above this file (ftrt.h): given by
 * lifetime.c before the first pass, so this file names none of it. */
static struct ftrt_modules_calls up;

void ftrt_modules_wire(const struct ftrt_modules_calls *c)
{
	up = *c;
}

int ftrt_module_text_holds(uintptr_t in, uintptr_t a)
{
	int n = __atomic_load_n(&nmods, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		const struct ftrt_mod *md = &mods[i];
		uintptr_t lo = __atomic_load_n(&md->text_lo, __ATOMIC_RELAXED), hi = __atomic_load_n(&md->text_hi, __ATOMIC_RELAXED);
		if (__atomic_load_n(&md->live, __ATOMIC_ACQUIRE) && in >= lo && in < hi)
			return a >= lo && a < hi;
	}
	return 0;
}

const struct ftrt_mod *ftrt_module_at(int i)
{
	return i >= 0 && i < nmods ? &mods[i] : NULL;
}

int ftrt_modules_hold(void)
{
	/* Not a plain lock: the exit may come from a signal handler that
	 * interrupted this very thread inside the lock, or from a thread
	 * that a holder waits for. */
	for (int i = 0; i < 200; i++) {
		if (pthread_mutex_trylock(&lock) == 0)
			return 1;
		nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
	}
	return 0;
}

void ftrt_modules_lock(void)
{
	pthread_mutex_lock(&lock);
}

/* In a child after fork, where only the forking thread runs: the lock as
 * new, whoever held it in the parent (a live batch, a module's pass). */
void ftrt_modules_after_fork(void)
{
	pthread_mutex_init(&lock, NULL);
}

void ftrt_modules_release(void)
{
	pthread_mutex_unlock(&lock);
}

uint64_t ftrt_prologue_changed;

/* Where a module lies, found from any address inside it. */
struct where {
	uintptr_t addr;
	struct ftrt_mod *md;
	int found;
};

/* The GNU build-id from a loaded object's PT_NOTE segments, as hex. */
static void build_id(const struct dl_phdr_info *info, char out[129])
{
	out[0] = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (p + 12 <= end) {
			uint32_t namesz, descsz, type;
			memcpy(&namesz, p, 4);
			memcpy(&descsz, p + 4, 4);
			memcpy(&type, p + 8, 4);
			const unsigned char *name = p + 12, *desc = name + ((namesz + 3) & ~3u);
			if (desc + descsz > end)
				break;
			if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 && descsz <= 64) {
				static const char hex[] = "0123456789abcdef";
				for (uint32_t k = 0; k < descsz; k++) {
					out[2 * k] = hex[desc[k] >> 4];
					out[2 * k + 1] = hex[desc[k] & 15];
				}
				out[2 * descsz] = 0;
				return;
			}
			p = desc + ((descsz + 3) & ~3u);
		}
	}
}

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct where *w = data;
	(void)size;
	uintptr_t lo = UINTPTR_MAX, hi = 0, text_lo = 0, text_hi = 0;
	int texts = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (s < lo)
			lo = s;
		if (s + ph->p_memsz > hi)
			hi = s + ph->p_memsz;
		if (ph->p_flags & PF_X) {
			texts++;
			text_lo = s & ~(uintptr_t)4095; /* the loader maps whole pages */
			text_hi = s + ph->p_memsz;
		}
	}
	if (w->addr < lo || w->addr >= hi)
		return 0;
	struct ftrt_mod *md = w->md;
	md->bias = info->dlpi_addr;
	md->lo = lo;
	md->hi = hi;
	if (texts == 1)
		md->text_lo = text_lo, md->text_hi = text_hi;
	/* Absolute, so the trace can be read from another directory: the
	 * loader names an object as dlopen was given it. */
	if (info->dlpi_name && info->dlpi_name[0]) {
		md->path = info->dlpi_name[0] == '/' ? NULL : realpath(info->dlpi_name, NULL);
		if (!md->path)
			md->path = strdup(info->dlpi_name);
	}
	build_id(info, md->build_id);
	w->found = 1;
	return 1;
}

char *ftrt_module_identify(uintptr_t inside, char build_id[129])
{
	struct ftrt_mod probe;
	memset(&probe, 0, sizeof probe);
	struct where w = { .addr = inside, .md = &probe };
	dl_iterate_phdr(find_object, &w);
	memcpy(build_id, probe.build_id, sizeof probe.build_id);
	return w.found ? (char *)probe.path : NULL;
}

/* A free record: a new one, or, when all are taken, the first unloaded
 * one (its number, and so its owner, stays). */
static struct ftrt_mod *record(void)
{
	if (nmods < FTRT_MOD_MAX)
		return &mods[nmods++];
	for (int i = 1; i < FTRT_MOD_MAX; i++)
		if (!mods[i].live) {
			ftrt_modules_forgotten++;
			free((void *)mods[i].path);
			return &mods[i];
		}
	return NULL;
}

void ftrt_modules_exiting(void)
{
	pthread_mutex_lock(&lock);
	exiting = 1;
	pthread_mutex_unlock(&lock);
}

/* Fill in a record for the module m (path, bias, extent, build-id), run
 * its pass. The lock is held. */
static struct ftrt_mod *add(const struct ftrt_module *m, uintptr_t inside, int self, int unrelocated)
{
	struct ftrt_mod *md = record();
	if (!md)
		return NULL;
	memset(md, 0, sizeof *md);
	md->owner = (int)(md - mods) + 1;
	md->desc = m;
	if (m->size >= offsetof(struct ftrt_module, prologue_funcs) + sizeof m->prologue_funcs && m->prologues) {
		md->prologues = m->prologues;
		md->prologue_funcs = m->prologue_funcs;
		md->nprologues = (size_t)(m->prologues_end - m->prologues);
	}
	struct where w = { .addr = inside, .md = md };
	dl_iterate_phdr(find_object, &w);
	if (self && md->path) {
		/* The program is named by /proc/self/exe, as the metadata's exe. */
		free((void *)md->path);
		md->path = NULL;
	}
	if (!w.found || (!self && !md->path)) {
		/* Not a loaded object we can name: serve it anyway; the reader
		 * will show its addresses bare. */
		md->path = self ? NULL : strdup("?");
	}
	md->live = 1;
	md->unrelocated = unrelocated;
	md->load = up.stamp ? up.stamp() : 0;
	/* The module's trampolines jump through its slots into ours. */
	if (!self && m->slots && nmods > 0 && mods[0].desc)
		for (int i = 0; i < FTRT_SLOTS; i++)
			m->slots[i] = mods[0].desc->targets[FTRT_T_FIRST_TRAMP + i];
	if (up.pass)
		up.pass(md);
	/* The metadata of a run still going names the module now (and, after
	 * the pass that opened the trace, is written for the first time). */
	if (up.changed)
		up.changed();
	return md;
}

int ftrt_register_self(const struct ftrt_module *self, uintptr_t inside)
{
	pthread_mutex_lock(&lock);
	struct ftrt_mod *md = add(self, inside, 1, 0);
	pthread_mutex_unlock(&lock);
	return md ? 0 : -1;
}

/*
 * Registrations that came before the runtime started: the preloaded
 * runtime (runtime.SharedLibName) starts from its own constructor, which
 * the loader runs after those of the shared objects loaded with the
 * program, whose stubs register first. Each waits here, its handle 0,
 * until the program's pass has run (ftrt_modules_start).
 */
static struct ftrt_module *early[FTRT_MOD_MAX];
static int nearly;

void ftrt_modules_start(void)
{
	pthread_mutex_lock(&lock);
	int n = nearly;
	nearly = -1; /* from now on, registrations are served at once */
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < n; i++)
		ftrt_module_register(early[i]);
}

int ftrt_module_register_at(struct ftrt_module *m, uintptr_t inside, int unrelocated)
{
	if (!m || m->handle)
		return -1;
	ftrt_in_runtime++;
	if (up.adding)
		up.adding(m);
	pthread_mutex_lock(&lock);
	struct ftrt_mod *md = add(m, inside, 0, unrelocated);
	if (md)
		m->handle = (uintptr_t)md->owner;
	pthread_mutex_unlock(&lock);
	ftrt_in_runtime--;
	return md ? 0 : -1;
}

/*
 * Called by a shared object's stub, first of its initialisers. The
 * program's own pass has run already, from its .preinit_array, before
 * any shared object's initialiser (ftrt_init returns at once): the
 * process-wide choices (tracer, trace directory, NOP style) are the
 * program's to make.
 */
__thread int ftrt_in_runtime;

int ftrt_module_register(struct ftrt_module *m)
{
	if (!m || m->size < sizeof *m || m->version != FTRT_MODULE_VERSION || m->handle)
		return -1;
	if (!up.init) {
		/* Before the runtime started (preloaded): served once it has. */
		pthread_mutex_lock(&lock);
		int queued = nearly >= 0 && nearly < FTRT_MOD_MAX;
		if (queued)
			early[nearly++] = m;
		pthread_mutex_unlock(&lock);
		return queued ? 0 : -1;
	}
	ftrt_in_runtime++;
	up.init();
	if (up.adding)
		up.adding(m);
	pthread_mutex_lock(&lock);
	struct ftrt_mod *md = add(m, (uintptr_t)m->targets[0], 0, 0);
	if (md)
		m->handle = (uintptr_t)md->owner;
	pthread_mutex_unlock(&lock);
	ftrt_in_runtime--;
	return md ? 0 : -1;
}

/*
 * Called by a shared object's stub from its destructor, just before the
 * loader unmaps it (dlclose), or at exit. At dlclose nothing may be
 * running in the module any more, so what the pass built for it (graph
 * trampolines) goes too. At exit the loader unmaps nothing, and other
 * threads, or the finalisers that run after this one (the trace ends
 * after them all: lifetime.c), may still run its code until the process
 * ends: the record stays as it is, loaded until the end, and nothing is
 * unmapped.
 */
/* md's object was unloaded: what its pass built goes. The lock is held. */
static void unload(struct ftrt_mod *md)
{
	md->live = 0;
	md->unload = up.stamp ? up.stamp() : 0;
	if (!md->unload)
		md->unload = 1; /* unloaded before any trace: not "loaded until the end" */
	ftrt_arch_release(md->owner);
	if (up.gone)
		up.gone(md->owner);
	if (up.changed)
		up.changed();
}

void ftrt_module_unregister(struct ftrt_module *m)
{
	if (!m || !m->handle)
		return;
	ftrt_in_runtime++;
	pthread_mutex_lock(&lock);
	struct ftrt_mod *md = m->handle <= (uintptr_t)nmods ? &mods[m->handle - 1] : NULL;
	if (md && md->desc == m && md->live && !exiting)
		unload(md);
	m->handle = 0;
	pthread_mutex_unlock(&lock);
	ftrt_in_runtime--;
}

const struct ftrt_module ftrt_module_plain = { .size = sizeof(struct ftrt_module), .version = FTRT_MODULE_VERSION };

/* What a scan finds: which records' objects are still loaded, and the
 * objects to serve that have no record (an address inside each: its
 * first segment's start; and its name, as the loader has it), added once
 * the walk is over (a pass looks objects up itself, which the loader's
 * list held by the walk forbids doing from inside it). */
#define SCAN_NEW 64
struct scan {
	const struct ftrt_scan_calls *calls;
	unsigned char seen[FTRT_MOD_MAX];
	uintptr_t fresh[SCAN_NEW];
	char *name[SCAN_NEW];
	int nfresh;
};

static int scan_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct scan *sc = data;
	uintptr_t first = 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			first = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			break;
		}
	if (!first)
		return 0;
	for (int i = 0; i < nmods; i++)
		if (mods[i].live && mods[i].bias == info->dlpi_addr && first >= mods[i].lo && first < mods[i].hi) {
			/* A plain record whose object was unloaded and another (or
			 * the same) loaded at its place has lost its hooks: the
			 * object is new. (Its memory is read here, while the walk
			 * holds the loader's list, which a dlclose must change
			 * before it unmaps anything.) */
			if (mods[i].desc == &ftrt_module_plain && !sc->calls->still(mods[i].owner))
				break;
			sc->seen[i] = 1;
			return 0;
		}
	if (sc->nfresh < SCAN_NEW && sc->calls->want(info)) {
		sc->name[sc->nfresh] = strdup(info->dlpi_name ? info->dlpi_name : "");
		sc->fresh[sc->nfresh++] = first;
	}
	return 0;
}

void ftrt_modules_scan(const struct ftrt_scan_calls *calls, int locked)
{
	struct scan *sc = mmap(NULL, sizeof *sc, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sc == MAP_FAILED)
		return;
	sc->calls = calls;
	if (!locked)
		pthread_mutex_lock(&lock);
	if (!exiting) {
		dl_iterate_phdr(scan_object, sc);
		for (int i = 0; i < nmods; i++)
			if (mods[i].live && mods[i].desc == &ftrt_module_plain && !sc->seen[i])
				unload(&mods[i]);
	}
	if (!locked)
		pthread_mutex_unlock(&lock);
	for (int i = 0; i < sc->nfresh; i++) {
		if (!sc->name[i])
			continue;
		if (locked) {
			add(&ftrt_module_plain, sc->fresh[i], 0, 0);
		} else if (calls->prepare(sc->fresh[i], sc->name[i])) {
			pthread_mutex_lock(&lock);
			/* Unless another scan served it meanwhile. */
			int known = 0;
			for (int k = 0; k < nmods && !known; k++)
				known = mods[k].live && sc->fresh[i] >= mods[k].lo && sc->fresh[i] < mods[k].hi;
			if (!known && !exiting)
				add(&ftrt_module_plain, sc->fresh[i], 0, 0);
			pthread_mutex_unlock(&lock);
			calls->done();
		}
		free(sc->name[i]);
	}
	munmap(sc, sizeof *sc);
}
