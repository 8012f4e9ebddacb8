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
 * Start-up code: libc is used freely.
 */
#ifdef FTRT_PRELOAD
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

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

static int find(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct where *w = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0, text = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
		if ((ph->p_flags & PF_X) && !text)
			text = a;
	}
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

int ftrt_preload_describe(struct ftrt_module *m, const char *path, uintptr_t inside, struct ftrt_tables *t)
{
	struct where w = { .inside = inside };
	dl_iterate_phdr(find, &w);
	if (!w.found || ftrt_tables_read(path, w.bias, t) != 0)
		return -1;
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
	bind_hooks(&w, m->targets);
	return 0;
}

/* The shared objects loaded with the program that may be served: an
 * address in each (its first executable segment's start) and its name,
 * gathered while the loader's list is held, served after. */
#define CANDIDATES 256
struct candidates {
	uintptr_t inside[CANDIDATES];
	char *name[CANDIDATES];
	int n;
};

static int gather(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct candidates *c = arg;
	/* The program (described already), the loader, the vDSO. */
	if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == getauxval(AT_BASE) || c->n == CANDIDATES)
		return 0;
	uintptr_t text = 0, lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
		if ((ph->p_flags & PF_X) && !text)
			text = a;
	}
	uintptr_t self = (uintptr_t)ftrt_preload_scan; /* the runtime's own object */
	if (!text || lo == getauxval(AT_SYSINFO_EHDR) || (self >= lo && self < hi) || ftrt_module_text_holds(text, text))
		return 0;
	c->name[c->n] = strdup(info->dlpi_name);
	c->inside[c->n++] = text;
	return 0;
}

/* The descriptions of the shared objects served: kept for their life. */
static struct ftrt_module preloaded[FTRT_MOD_MAX];

void ftrt_preload_scan(void)
{
	static struct candidates c; /* start-up: one thread */
	c.n = 0;
	dl_iterate_phdr(gather, &c);
	for (int i = 0; i < c.n; i++) {
		struct ftrt_module *m = NULL;
		for (int k = 0; k < FTRT_MOD_MAX && !m; k++)
			if (!preloaded[k].version)
				m = &preloaded[k];
		struct ftrt_tables t;
		if (m && c.name[i]) {
			m->size = sizeof *m;
			m->version = FTRT_MODULE_VERSION;
			m->config = &ftrt_config;
			if (ftrt_preload_describe(m, c.name[i], c.inside[i], &t) != 0 || t.linked || m->start == m->stop ||
			    ftrt_module_register_at(m, c.inside[i]) != 0)
				memset(m, 0, sizeof *m); /* not ours to serve: it registers itself, or has no sites */
		}
		free(c.name[i]);
	}
}
#endif
