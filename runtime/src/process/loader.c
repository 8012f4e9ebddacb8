/*
 * The preloaded runtime's watch over the loader (compiled only with
 * FTRT_PRELOAD): a shared object a dlopen loads after start is described
 * and registered (preload.c) before any of its code runs, whether or
 * not it links the module stub, as those loaded with the program are.
 *
 * dlopen itself is not interposed: glibc finds its caller's object (for
 * the caller's RUNPATH and $ORIGIN, and its namespace) from dlopen's
 * return address, which an interposer would change. The loader's
 * debugger interface is used instead: r_debug (the program's DT_DEBUG
 * entry, else ld.so's _r_debug) names r_brk, the function the loader
 * calls at each change of its list of objects (glibc's
 * _dl_debug_state), with r_state RT_ADD or RT_DELETE before it changes
 * the list and RT_CONSISTENT once it has: for a dlopen, once the new
 * objects are mapped, before they are relocated and before their
 * constructors run; for a dlclose, once they are unmapped. At start,
 * r_brk is made to jump to the runtime's entry (arch/loader.h), which
 * calls changed() below with every register kept; at RT_CONSISTENT it
 * rescans the loaded objects (preload.c): those gone are unregistered,
 * the new ones served.
 *
 * Only when the runtime is preloaded and something is to be traced (a
 * tracer, or record -P's server); a hook that cannot be made is said
 * once, and a later dlopen's objects are then served only through the
 * stub, as before. A fork keeps the hook (its code is the parent's); an
 * exec starts another loader, which the runtime, preloaded again,
 * watches anew.
 *
 * changed() runs in the loader's context, under its lock (dlopen and
 * dlclose hold it around every call of r_brk): one rescan at a time.
 * libc is used freely. A thread already in it (a dlopen from the
 * rescan's own work) returns at once.
 */
#ifdef FTRT_PRELOAD
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <sys/auxv.h>

#include "arch/loader.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "patch/pass.h"
#include "process.h"

static struct r_debug *debug;
static __thread int busy __attribute__((tls_model("initial-exec")));

/* The program's DT_DEBUG, which the loader points at its r_debug. */
static int program_debug(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr); d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_DEBUG)
				*(struct r_debug **)arg = (struct r_debug *)d->d_un.d_ptr;
	}
	return 1; /* the program is the first object */
}

static void changed(void)
{
	if (busy || !debug || __atomic_load_n(&debug->r_state, __ATOMIC_RELAXED) != RT_CONSISTENT)
		return;
	int saved = errno;
	busy = 1;
	ftrt_in_runtime++;
	ftrt_preload_rescan();
	ftrt_in_runtime--;
	busy = 0;
	errno = saved;
}

/* Whether a lies in the loader's executable segment. */
static int in_loader(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t a = *(uintptr_t *)arg;
	if (info->dlpi_addr != getauxval(AT_BASE))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && a >= info->dlpi_addr + ph->p_vaddr &&
		    a + 16 <= info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			return 1;
	}
	return 0;
}

void ftrt_loader_watch(void)
{
	if (!ftrt_opts.tracer && !ftrt_env(ENV_PROLOGUE_SOCKET))
		return; /* nothing to trace in what a dlopen loads */
	struct r_debug *r = NULL;
	dl_iterate_phdr(program_debug, &r);
	if (!r)
		r = dlsym(RTLD_DEFAULT, "_r_debug");
	const char *why = "the loader has no debugger interface (r_debug)";
	uintptr_t brk = r && r->r_version >= 1 ? r->r_brk : 0;
	if (brk && !dl_iterate_phdr(in_loader, &brk))
		why = "its debugger hook (r_brk) is not in the loader's code";
	else if (brk) {
		ftrt_loader_call = changed;
		debug = r;
		if (ftrt_arch_loader_hook(brk, &why) == 0)
			return;
		debug = NULL;
	}
	struct say s;
	ftrt_say_begin(&s);
	ftrt_say_text(&s, "the loader's changes cannot be watched: ");
	ftrt_say_text(&s, why);
	ftrt_say_text(&s, "; a shared object a dlopen loads is traced only if it links the module stub");
	ftrt_say_end(&s);
}
#endif
