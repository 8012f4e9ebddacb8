/*
 * What the library-call pass reads of a module as the loader left it
 * (libdyn.h): its dynamic section, found through dl_iterate_phdr by the
 * module's load bias and code; the version a symbol asks for; a lazy
 * slot's function.
 *
 * Start-up code (the module's pass): libc is used freely.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

#include "core/ftrt.h"
#include "libdyn.h"

/* find_dyn's question (the module) and answer. */
struct find {
	const struct ftrt_mod *md;
	struct ftrt_dyn *d;
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

const char *ftrt_dyn_version(const struct ftrt_dyn *d, size_t i)
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

uintptr_t ftrt_dyn_resolve(const struct ftrt_mod *md, const char *name, const char *version)
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

int ftrt_dyn_read(const struct ftrt_mod *md, struct ftrt_dyn *d)
{
	struct find f = { md, d, 0 };
	dl_iterate_phdr(find_dyn, &f);
	return f.found ? 0 : -1;
}
