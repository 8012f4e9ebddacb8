/*
 * Nested library calls (FTRACE_LIBCALL=nest; libslots.h says what each
 * part does): every loaded object's slots hooked, not only those of the
 * modules with sites. Each shared object without sites gets a plain
 * module record (core/registry.c's scan), whose pass hooks its slots:
 * those loaded with the program at its pass, those loaded with a module
 * with sites at its pass, those a dlopen loads once it has returned
 * (tracers/libcall.c notices, at the thread's next call of the loader's
 * functions); a plain record whose object is gone is unloaded then.
 *
 * Not the loader itself, the vDSO, nor an object with sites (it
 * registers itself).
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

/* Where the loaded object holding an address lies, as a module record
 * says it (bias, extent), for ftrt_dyn_read. */
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
static int calls_register(const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n)
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
	struct ftrt_dyn d = { 0 };
	if (ftrt_dyn_read(&tmp, &d) != 0 || !d.symtab || !d.strtab)
		return 0;
	if (calls_register(&d, d.jmprel, d.njmprel) || calls_register(&d, d.rela, d.nrela))
		return 0;
	return ftrt_lib_count_slots(&d, d.jmprel, d.njmprel) + ftrt_lib_count_slots(&d, d.rela, d.nrela) > 0;
}

/* A rescan's preparation of the object at inside, named name: held
 * loaded (a dlopen of it that loads nothing) while it is served, and its
 * lazy slots' functions looked up (ftrt_lib_early). 0: it is gone. */
static void *pin;

static int prepare(uintptr_t inside, const char *name)
{
	pin = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
	if (!pin)
		return 0;
	struct ftrt_mod tmp = { 0 };
	struct locate l = { inside, &tmp };
	struct ftrt_dyn d = { 0 };
	ftrt_lib_nearly = 0;
	ftrt_lib_early_on = 1;
	tmp.path = name;
	if (dl_iterate_phdr(locate_object, &l) && ftrt_dyn_read(&tmp, &d) == 0 && d.symtab && d.strtab) {
		if (ftrt_lib_early_room(ftrt_lib_count_slots(&d, d.jmprel, d.njmprel)) != 0)
			return 1; /* its lazy slots left as they are */
		for (size_t i = 0; i < d.njmprel && ftrt_lib_nearly < ftrt_lib_early_cap; i++) {
			const ElfW(Sym) *sym;
			if (!ftrt_lib_slot_of(&d, &d.jmprel[i], &sym) || (uint32_t)ELF64_R_TYPE(d.jmprel[i].r_info) != FTRT_R_JUMP_SLOT)
				continue;
			const char *sname = d.strtab + sym->st_name;
			uintptr_t *slot = (uintptr_t *)(tmp.bias + d.jmprel[i].r_offset);
			uintptr_t target = __atomic_load_n(slot, __ATOMIC_RELAXED);
			if (target < tmp.lo || target >= tmp.hi || ftrt_lib_listed(sname) == LISTED_ALONE || !(ftrt_pick(sname) & PICK_TRACE))
				continue;
			ftrt_lib_early[ftrt_lib_nearly].slot = (uintptr_t)slot;
			ftrt_lib_early[ftrt_lib_nearly].target = ftrt_dyn_resolve(&tmp, sname, ftrt_dyn_version(&d, ELF64_R_SYM(d.jmprel[i].r_info)));
			ftrt_lib_early[ftrt_lib_nearly].hash = ftrt_lib_name_hash(sname);
			ftrt_lib_nearly++;
		}
	}
	return 1;
}

static void done(void)
{
	ftrt_lib_early_on = 0;
	ftrt_lib_nearly = 0;
	if (pin)
		dlclose(pin);
	pin = NULL;
}

static const struct ftrt_scan_calls scan_calls = { ftrt_libcalls_plain, ftrt_libcalls_still, prepare, done };

/* One rescan at a time; one that finds another running leaves its work
 * to the next call that asks (a thread waiting here could hold the
 * loader's lock the running one waits for). */
pthread_mutex_t ftrt_lib_rescan_lock = PTHREAD_MUTEX_INITIALIZER;

void ftrt_libcalls_rescan(void)
{
	if (pthread_mutex_trylock(&ftrt_lib_rescan_lock) != 0)
		return;
	ftrt_modules_scan(&scan_calls, 0);
	pthread_mutex_unlock(&ftrt_lib_rescan_lock);
}

void ftrt_libcalls_scan_locked(void)
{
	ftrt_modules_scan(&scan_calls, 1);
}
