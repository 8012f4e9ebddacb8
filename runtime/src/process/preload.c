/*
 * The preloaded runtime's own part (runtime.SharedLibName; compiled only
 * with FTRT_PRELOAD): describing the modules that no linker or stub
 * describes to it, the program and the shared objects loaded with it
 * that have sites but no stub (lifetime.c registers them at start).
 *
 * A module's description (struct ftrt_module): its tables, found from
 * its file (core/tables.c); its targets, the runtime's hooks and
 * trampolines within reach of its code (ftrt_arch_targets_near). Its
 * sites call the hooks through its PLT (a call of hook@plt) or its GOT
 * (-fno-plt, PIE -mfentry's `call *__fentry__@GOTPCREL(%rip)`), whose
 * slots the loader binds to the first definition in the lookup order:
 * the preloaded runtime's. A lazy slot is bound when first called; the
 * pass must know the site's call for a hook's before, so such a slot is
 * bound here, to what the loader would bind it to (checked with dlsym),
 * as the loader would at the first call.
 *
 * A shared object a dlopen loads later is described alike when the
 * loader tells its debugger of it (loader.c: mapped, not yet relocated,
 * its constructors not yet run), so its sites are ready before any of
 * its code runs. Its tables are then relocated copies (core/tables.c);
 * the GOT slots through which its sites call the hooks still hold what
 * the file has, so for its pass each holds the hook the loader will bind
 * it to (checked with dlsym), and gets back what it held after, for the
 * loader to relocate as it would have: the pass leaves no site calling
 * through a slot (a site is a NOP, or calls the runtime's trampoline
 * directly). At the change that unloads it (a dlclose), its record is
 * unregistered, as a stub's destructor would.
 *
 * Start-up code, or the loader's (under its lock): libc is used freely.
 */
#ifdef FTRT_PRELOAD
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "arch/libstub.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "patch/libdyn.h"
#include "patch/prologue.h"
#include "process.h"

/* Where the loaded object holding an address lies. */
struct where {
	uintptr_t inside;
	uintptr_t bias, lo, hi, text;
	int found;
};

/* A loaded object's segments' extent [*lo, *hi) and the start of its
 * first executable segment (*text, 0 for none), at run time. */
static void extent(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi, uintptr_t *text)
{
	*lo = UINTPTR_MAX, *hi = 0, *text = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		*lo = a < *lo ? a : *lo;
		*hi = a + ph->p_memsz > *hi ? a + ph->p_memsz : *hi;
		if ((ph->p_flags & PF_X) && !*text)
			*text = a;
	}
}

static int find(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct where *w = arg;
	uintptr_t lo, hi, text;
	extent(info, &lo, &hi, &text);
	if (w->inside < lo || w->inside >= hi)
		return 0;
	w->bias = info->dlpi_addr, w->lo = lo, w->hi = hi, w->text = text;
	w->found = 1;
	return 1;
}

/* The hooks a module's sites call, by name, with their index in its
 * targets. */
static const struct {
	const char *name;
	int target;
} hooks[] = {
#if defined(__x86_64__)
	{ "__fentry__", FTRT_T_FENTRY },
	{ "mcount", FTRT_T_MCOUNT },
#else
	{ "_mcount", FTRT_T_MCOUNT },
#endif
};

/* Whether list (LD_PRELOAD's syntax: paths split at spaces or colons;
 * /etc/ld.so.preload's: at whitespace) names a file called base. */
static int lists(const char *list, const char *base)
{
	size_t n = strlen(base);
	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, " :\t\n");
		const char *slash = memrchr(p, '/', k), *name = slash ? slash + 1 : p;
		if ((size_t)(p + k - name) == n && memcmp(name, base, n) == 0)
			return 1;
		p += k;
		p += strspn(p, " :\t\n");
	}
	return 0;
}

int ftrt_preload_late(void)
{
	Dl_info self;
	if (!dladdr((void *)ftrt_preload_late, &self) || !self.dli_fname)
		return 0;
	const char *base = strrchr(self.dli_fname, '/');
	base = base ? base + 1 : self.dli_fname;
	/* LD_PRELOAD, as the loader reads it; never in a secure-execution
	 * process, whose environment is its invoker's: there only the
	 * system's list counts, and a runtime it does not name is taken
	 * for one loaded late, whose pass writes nothing (sites left
	 * calling the hook: slower, never unsafe). */
	if (!ftrt_secure() && lists(getenv("LD_PRELOAD"), base))
		return 0;
	char buf[4096];
	int fd = open("/etc/ld.so.preload", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		if (lists(buf, base))
			return 0;
	}
	return 1;
}

/* Bind the module's lazy PLT slots of the hooks (those still pointing
 * into the module, at its PLT's lazy path) to the runtime's, when the
 * loader would bind them there. */
static void bind_hooks(const struct where *w, const uintptr_t *targets)
{
	struct ftrt_mod tmp;
	memset(&tmp, 0, sizeof tmp);
	tmp.bias = w->bias, tmp.lo = w->lo, tmp.hi = w->hi;
	struct ftrt_dyn d;
	memset(&d, 0, sizeof d);
	if (ftrt_dyn_read(&tmp, &d) != 0 || !d.symtab || !d.strtab)
		return;
	for (size_t i = 0; i < d.njmprel; i++) {
		const ElfW(Rela) *r = &d.jmprel[i];
		size_t si = ELF64_R_SYM(r->r_info);
		if ((uint32_t)ELF64_R_TYPE(r->r_info) != FTRT_R_JUMP_SLOT || !si)
			continue;
		const char *name = d.strtab + d.symtab[si].st_name;
		for (size_t k = 0; k < sizeof hooks / sizeof hooks[0]; k++) {
			if (strcmp(name, hooks[k].name) != 0)
				continue;
			uintptr_t *slot = (uintptr_t *)(w->bias + r->r_offset), v = __atomic_load_n(slot, __ATOMIC_RELAXED);
			uintptr_t hook = targets[hooks[k].target];
			if (v >= w->lo && v < w->hi && (uintptr_t)dlsym(RTLD_DEFAULT, name) == hook)
				__atomic_store_n(slot, hook, __ATOMIC_RELAXED);
		}
	}
}

/* The GOT slots of a module not relocated yet through which its sites
 * call the hooks, and what they held (hold_hooks, release_hooks). */
#define HELD 16
struct held {
	uintptr_t *slot[HELD];
	uintptr_t was[HELD];
	int n;
};

#if defined(__x86_64__)
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#define R_ABS64 R_X86_64_64
#else
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#define R_ABS64 R_AARCH64_ABS64
#endif

/* Each slot of a hook (a PLT's, a GOT's, an absolute word) in the n
 * relocations r of the module d describes at w: made to hold the hook
 * the loader will bind it to, what it held kept in h. */
static void hold_slots(const struct where *w, const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n, const uintptr_t *targets,
		       struct held *h)
{
	for (size_t i = 0; i < n && h->n < HELD; i++) {
		size_t si = ELF64_R_SYM(r[i].r_info);
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info);
		if (!si || (type != FTRT_R_JUMP_SLOT && type != R_GLOB_DAT && type != R_ABS64))
			continue;
		const char *name = d->strtab + d->symtab[si].st_name;
		for (size_t k = 0; k < sizeof hooks / sizeof hooks[0] && h->n < HELD; k++) {
			uintptr_t hook = targets[hooks[k].target];
			if (strcmp(name, hooks[k].name) != 0 || (uintptr_t)dlsym(RTLD_DEFAULT, name) != hook)
				continue;
			uintptr_t *slot = (uintptr_t *)(w->bias + r[i].r_offset);
			if ((uintptr_t)slot < w->lo || (uintptr_t)slot + sizeof *slot > w->hi)
				continue;
			h->slot[h->n] = slot;
			h->was[h->n++] = *slot;
			*slot = hook;
		}
	}
}

static void hold_hooks(const struct where *w, const uintptr_t *targets, struct held *h)
{
	h->n = 0;
	struct ftrt_mod tmp;
	memset(&tmp, 0, sizeof tmp);
	tmp.bias = w->bias, tmp.lo = w->lo, tmp.hi = w->hi;
	struct ftrt_dyn d;
	memset(&d, 0, sizeof d);
	if (ftrt_dyn_read(&tmp, &d) != 0 || !d.symtab || !d.strtab)
		return;
	hold_slots(w, &d, d.jmprel, d.njmprel, targets, h);
	hold_slots(w, &d, d.rela, d.nrela, targets, h);
}

/* What hold_hooks changed, back as the file has it, for the loader. */
static void release_hooks(struct held *h)
{
	for (int i = 0; i < h->n; i++)
		*h->slot[i] = h->was[i];
	h->n = 0;
}

/* ftrt_preload_describe's work; unrelocated: a dlopen's object, mapped
 * and not relocated yet (tables.c relocates its tables' copies, and no
 * slot is bound here). */
static int describe(struct ftrt_module *m, const char *path, uintptr_t inside, struct ftrt_tables *t, int unrelocated)
{
	struct where w = { .inside = inside };
	dl_iterate_phdr(find, &w);
	if (!w.found || ftrt_tables_read(path, w.bias, unrelocated, t) != 0)
		return -1;
	if (t->linked && strcmp(path, "/proc/self/exe") != 0)
		return 0; /* a shared object with the module stub describes itself */
	/* record -P: sites made from the prologues of the functions it
	 * chose, beside the compiler's (the server is told the file's own
	 * name, which /proc/self/exe is not). */
	struct ftrt_module made = { .start = t->start, .stop = t->stop, .areas = t->areas, .areas_end = t->areas_end,
				    .prologues = t->prologues, .prologues_end = t->prologues_end };
	char id[129], *real = NULL;
	char *named = ftrt_module_identify(inside, id);
	if (!named && strcmp(path, "/proc/self/exe") == 0)
		named = real = realpath("/proc/self/exe", NULL);
	if (ftrt_prologue_make(&made, named ? named : path, id, w.bias, w.lo, w.hi) > 0) {
		t->start = made.start, t->stop = made.stop, t->areas = made.areas, t->areas_end = made.areas_end;
		t->prologues = made.prologues, t->prologues_end = made.prologues_end;
		m->prologue_funcs = made.prologue_funcs;
	}
	if (named != path && named != real)
		free(named);
	free(real);
	if (t->start == t->stop)
		return 0; /* no sites: nothing to describe */
	static const uintptr_t runtime[FTRT_T_N] = FTRT_TARGETS;
	if (ftrt_arch_targets_near(w.text ? w.text : inside, runtime, m->targets) != 0) {
		struct say s;
		ftrt_say_begin(&s);
		ftrt_say_str(&s, path);
		ftrt_say_text(&s, ": no page within reach of its code for the runtime's trampolines; its sites stay as they are, untraced");
		ftrt_say_end(&s);
		return 0;
	}
	m->start = t->start, m->stop = t->stop;
	m->areas = t->areas, m->areas_end = t->areas_end;
	m->prologues = t->prologues, m->prologues_end = t->prologues_end;
	if (!unrelocated)
		bind_hooks(&w, m->targets);
	return 0;
}

int ftrt_preload_describe(struct ftrt_module *m, const char *path, uintptr_t inside, struct ftrt_tables *t)
{
	return describe(m, path, inside, t, 0);
}

/*
 * The loaded objects the scans have looked at, served or not, so that a
 * scan at a change of the loader's list (loader.c) looks at the new ones
 * alone: each by its bias and its program headers' address (another
 * object loaded where an unloaded one was is told apart by the scan
 * that saw the first one gone), with the description it is served by
 * (NULL: not served; it registers itself, has no sites, or is no
 * shared object of ours to serve). Changed only by a scan: at start, or
 * under the loader's lock.
 */
#define SEEN 512
static struct seen {
	uintptr_t bias;
	const void *phdr;
	struct ftrt_module *m;
} seen[SEEN];
static int nseen;

/* The descriptions of the shared objects served: each kept while its
 * object is loaded (its record's arrays, for the process's life). */
static struct ftrt_module preloaded[FTRT_MOD_MAX];

/* One scan's findings: which seen objects are still loaded, and the new
 * ones (an address in each: its first executable segment's start; and
 * its name), gathered while the loader's list is held, served after. */
#define CANDIDATES 256
struct candidates {
	unsigned char present[SEEN];
	uintptr_t inside[CANDIDATES], bias[CANDIDATES];
	const void *phdr[CANDIDATES];
	char *name[CANDIDATES];
	int want[CANDIDATES];
	int n;
};

static int gather(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct candidates *c = arg;
	for (int i = 0; i < nseen; i++)
		if (seen[i].bias == info->dlpi_addr && seen[i].phdr == info->dlpi_phdr) {
			c->present[i] = 1;
			return 0;
		}
	if (c->n == CANDIDATES)
		return 0;
	int k = c->n++;
	c->bias[k] = info->dlpi_addr, c->phdr[k] = info->dlpi_phdr, c->want[k] = 0, c->name[k] = NULL;
	/* The program (described already), the loader, the vDSO. */
	if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == getauxval(AT_BASE))
		return 0;
	uintptr_t text, lo, hi;
	extent(info, &lo, &hi, &text);
	uintptr_t self = (uintptr_t)ftrt_preload_scan; /* the runtime's own object */
	if (!text || lo == getauxval(AT_SYSINFO_EHDR) || (self >= lo && self < hi) || ftrt_module_text_holds(text, text))
		return 0;
	c->name[k] = strdup(info->dlpi_name);
	c->inside[k] = text;
	c->want[k] = c->name[k] != NULL;
	return 0;
}

/* Serve the object at inside, named name, with a free description:
 * the description, or NULL (not ours to serve: it registers itself, or
 * has no sites). */
static struct ftrt_module *serve(const char *name, uintptr_t inside, int unrelocated)
{
	struct ftrt_module *m = NULL;
	for (int k = 0; k < FTRT_MOD_MAX && !m; k++)
		if (!preloaded[k].version)
			m = &preloaded[k];
	if (!m)
		return NULL;
	m->size = sizeof *m;
	m->version = FTRT_MODULE_VERSION;
	m->config = &ftrt_config;
	struct ftrt_tables t;
	if (describe(m, name, inside, &t, unrelocated) != 0 || t.linked || m->start == m->stop) {
		memset(m, 0, sizeof *m);
		return NULL;
	}
	struct where w = { .inside = inside };
	struct held h = { .n = 0 };
	if (unrelocated && dl_iterate_phdr(find, &w))
		hold_hooks(&w, m->targets, &h);
	int r = ftrt_module_register_at(m, inside, unrelocated);
	release_hooks(&h);
	if (r != 0) {
		memset(m, 0, sizeof *m);
		return NULL;
	}
	return m;
}

/* A scan: the objects gone since the last unregistered (their
 * descriptions free again), the new ones served. */
static void scan(int unrelocated)
{
	static struct candidates c; /* one scan at a time: at start, or under the loader's lock */
	memset(&c, 0, sizeof c);
	dl_iterate_phdr(gather, &c);
	int kept = 0;
	for (int i = 0; i < nseen; i++) {
		if (!c.present[i]) {
			if (seen[i].m) {
				ftrt_module_unregister(seen[i].m);
				memset(seen[i].m, 0, sizeof *seen[i].m);
			}
			continue;
		}
		seen[kept++] = seen[i];
	}
	nseen = kept;
	for (int i = 0; i < c.n; i++) {
		struct ftrt_module *m = c.want[i] ? serve(c.name[i], c.inside[i], unrelocated) : NULL;
		if (nseen < SEEN)
			seen[nseen++] = (struct seen){ c.bias[i], c.phdr[i], m };
		free(c.name[i]);
	}
}

void ftrt_preload_scan(void)
{
	scan(0);
}

void ftrt_preload_rescan(void)
{
	scan(1);
}
#endif
