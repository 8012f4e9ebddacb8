/*
 * A loaded module's site tables, found from its file: what the
 * preloaded runtime (runtime.SharedLibName) serves a program, or a
 * shared object, linked without the runtime or the module stub, in which
 * no linker defined __start___mcount_loc and no stub hands the tables
 * over.
 *
 * The tables are allocated sections (SHF_ALLOC), so the loader has
 * mapped them and, in a position-independent file, relocated their
 * words (recordmcount's table through R_*_RELATIVE, gcc's own read-only
 * -mrecord-mcount table through text relocations): each lies, ready, at
 * the module's bias + its section's address. Only their place is read
 * from the file: its section headers and their names. The file is
 * opened read-only, close-on-exec, and closed before returning; a
 * file that is not what the loader mapped (replaced since) at worst
 * names addresses the pass then finds no site at, and skips.
 *
 * Several sections of one name (a link that kept them apart) are copied
 * into one private array, which the module keeps. Init-time only (the
 * program's pass, a dlopen): libc is used freely.
 *
 * A shared object a dlopen loads is described before the loader has
 * relocated it (process/loader.c: the loader tells its debugger of the
 * new objects between mapping and relocating them): its tables' words
 * are still what the file holds (x86-64's GNU ld leaves each relative
 * relocation's addend there, arm64's leaves 0). Then each table is a
 * private copy, relocated here as the loader will relocate the words
 * in place: the file's R_*_RELATIVE relocations (its allocated SHT_RELA
 * sections: the value is the bias plus the addend) and its SHT_RELR
 * bitmaps (the bias plus the word in place), the only kinds a linker
 * makes for a table of the file's own addresses.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"

#if defined(__x86_64__)
#define R_RELATIVE R_X86_64_RELATIVE
#else
#define R_RELATIVE R_AARCH64_RELATIVE
#endif
#ifndef SHT_RELR
#define SHT_RELR 19
#endif

/* The file (mapped, size bytes) and its section headers, for the
 * relocation of a table's copy. */
struct file {
	const unsigned char *f;
	size_t size;
	const Elf64_Shdr *sh;
	size_t n;
};

/* Relocate c, a copy of the n words the file has at address addr, as
 * the loader relocates them in place at bias (see the top). */
static void relocate(const struct file *fl, uintptr_t bias, uintptr_t addr, uintptr_t *c, size_t n)
{
	uintptr_t end = addr + n * sizeof *c;
	for (size_t i = 0; i < fl->n; i++) {
		const Elf64_Shdr *s = &fl->sh[i];
		if (!(s->sh_flags & SHF_ALLOC) || s->sh_offset > fl->size || s->sh_size > fl->size - s->sh_offset)
			continue;
		if (s->sh_type == SHT_RELA && s->sh_entsize == sizeof(Elf64_Rela)) {
			const Elf64_Rela *r = (const Elf64_Rela *)(fl->f + s->sh_offset);
			for (size_t k = 0; k < s->sh_size / sizeof *r; k++)
				if (ELF64_R_TYPE(r[k].r_info) == R_RELATIVE && r[k].r_offset >= addr && r[k].r_offset < end &&
				    (r[k].r_offset - addr) % sizeof *c == 0)
					c[(r[k].r_offset - addr) / sizeof *c] = bias + (uintptr_t)r[k].r_addend;
		} else if (s->sh_type == SHT_RELR && s->sh_entsize == sizeof(uint64_t)) {
			/* An address (even), then bitmaps (odd): bit k of one
			 * stands for the word k - 1 words past where the last left
			 * off; each bitmap covers 63 words. */
			const uint64_t *w = (const uint64_t *)(fl->f + s->sh_offset);
			uintptr_t at = 0;
			for (size_t k = 0; k < s->sh_size / sizeof *w; k++) {
				uint64_t v = w[k];
				if (!(v & 1)) {
					if (v >= addr && v < end && (v - addr) % sizeof *c == 0)
						c[(v - addr) / sizeof *c] += bias;
					at = (uintptr_t)v + sizeof *c;
					continue;
				}
				for (uintptr_t a = at; (v >>= 1) != 0; a += sizeof *c)
					if ((v & 1) && a >= addr && a < end && (a - addr) % sizeof *c == 0)
						c[(a - addr) / sizeof *c] += bias;
				at += 63 * sizeof *c;
			}
		}
	}
}

/* The sections of name among the file's headers (names in shstr, of
 * size strsz), as one array: the section's own words in memory, or a
 * copy of all of them (several sections, or words the loader has not
 * relocated yet: unrelocated); [*start, *stop) empty when there is
 * none. */
static void table(const struct file *fl, const char *shstr, size_t strsz, const char *name, uintptr_t bias, int unrelocated,
		  const uintptr_t **start, const uintptr_t **stop)
{
	const Elf64_Shdr *sh = fl->sh;
	size_t n = fl->n, words = 0, found = 0, first = 0;
	for (size_t i = 0; i < n; i++)
		if (sh[i].sh_name < strsz && (sh[i].sh_flags & SHF_ALLOC) && sh[i].sh_type == SHT_PROGBITS &&
		    strncmp(shstr + sh[i].sh_name, name, strsz - sh[i].sh_name) == 0) {
			if (!found++)
				first = i;
			words += sh[i].sh_size / sizeof(uintptr_t);
		}
	*start = *stop = NULL;
	if (!words)
		return;
	if (found == 1 && !unrelocated) {
		*start = (const uintptr_t *)(bias + sh[first].sh_addr);
		*stop = *start + words;
		return;
	}
	uintptr_t *c = mmap(NULL, words * sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return;
	size_t k = 0;
	for (size_t i = first; i < n; i++)
		if (sh[i].sh_name < strsz && (sh[i].sh_flags & SHF_ALLOC) && sh[i].sh_type == SHT_PROGBITS &&
		    strncmp(shstr + sh[i].sh_name, name, strsz - sh[i].sh_name) == 0) {
			size_t w = sh[i].sh_size / sizeof(uintptr_t);
			memcpy(c + k, (const void *)(bias + sh[i].sh_addr), w * sizeof *c);
			if (unrelocated)
				relocate(fl, bias, (uintptr_t)sh[i].sh_addr, c + k, w);
			k += w;
		}
	*start = c;
	*stop = c + k;
}

/*
 * ftpatch instrument's table of prologue sites (FTRT_PROLOGUE_SECTION):
 * pairs of file addresses, the site (a trampoline's start: one disabled
 * entry site, a patchable area of its own) and its function, which the
 * file has no relocation for: the bias is added here. Each site joins
 * the compiler's sites and, as the patchable area it is, the areas; the
 * pass sorts them. The trampoline's local symbol, of its function's
 * name, names it.
 */
static void prologues(const Elf64_Shdr *sh, size_t n, const char *shstr, size_t strsz, uintptr_t bias, struct ftrt_tables *t)
{
	const Elf64_Shdr *p = NULL;
	for (size_t i = 0; i < n && !p; i++)
		if (sh[i].sh_name < strsz && (sh[i].sh_flags & SHF_ALLOC) && sh[i].sh_type == SHT_PROGBITS &&
		    strncmp(shstr + sh[i].sh_name, FTRT_PROLOGUE_SECTION, strsz - sh[i].sh_name) == 0)
			p = &sh[i];
	if (!p || p->sh_size < FTRT_PROLOGUE_ENTRY)
		return;
	const uint64_t *e = (const uint64_t *)(bias + p->sh_addr); /* site, function; site, function; ... */
	size_t k = p->sh_size / FTRT_PROLOGUE_ENTRY;
	size_t ns = (size_t)(t->stop - t->start), na = (size_t)(t->areas_end - t->areas);
	uintptr_t *c = mmap(NULL, (ns + na + 2 * k) * sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return;
	/* c: the sites (the compiler's, then the trampolines'), then the
	 * areas (the compiler's, then the trampolines'). */
	if (ns)
		memcpy(c, t->start, ns * sizeof *c);
	for (size_t i = 0; i < k; i++)
		c[ns + i] = bias + (uintptr_t)e[2 * i];
	uintptr_t *areas = c + ns + k;
	if (na)
		memcpy(areas, t->areas, na * sizeof *c);
	for (size_t i = 0; i < k; i++)
		areas[na + i] = bias + (uintptr_t)e[2 * i];
	t->start = c;
	t->stop = c + ns + k;
	t->areas = areas;
	t->areas_end = areas + na + k;
	t->prologues = c + ns; /* in function order, as the trampolines are laid out: sorted */
	t->prologues_end = c + ns + k;
}

int ftrt_tables_read(const char *path, uintptr_t bias, int unrelocated, struct ftrt_tables *t)
{
	memset(t, 0, sizeof *t);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	void *map = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= sizeof(Elf64_Ehdr))
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	size_t size = (size_t)st.st_size;
	const unsigned char *f = map;
	const Elf64_Ehdr *eh = map;
	int r = -1;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shoff > size || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum || eh->e_shstrndx >= eh->e_shnum)
		goto out;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
	const Elf64_Shdr *ss = &sh[eh->e_shstrndx];
	if (ss->sh_offset > size || ss->sh_size > size - ss->sh_offset)
		goto out;
	const char *shstr = (const char *)(f + ss->sh_offset);
	const struct file fl = { f, size, sh, eh->e_shnum };
	table(&fl, shstr, ss->sh_size, "__mcount_loc", bias, unrelocated, &t->start, &t->stop);
	table(&fl, shstr, ss->sh_size, "__patchable_function_entries", bias, unrelocated, &t->areas, &t->areas_end);
	for (size_t i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_name < ss->sh_size && strncmp(shstr + sh[i].sh_name, FTRT_CFG_SECTION, ss->sh_size - sh[i].sh_name) == 0)
			t->linked = 1;
	if (t->start == t->stop && t->areas != t->areas_end) {
		/* Patchable areas alone (no recordmcount, which lists their
		 * sites in __mcount_loc): the site of each, as the ISA lays it
		 * out in its area. */
		size_t n = (size_t)(t->areas_end - t->areas);
		uintptr_t *c = mmap(NULL, n * sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c != MAP_FAILED) {
			for (size_t i = 0; i < n; i++)
				c[i] = t->areas[i] ? ftrt_arch_area_site(t->areas[i]) : 0;
			t->start = c;
			t->stop = c + n;
		}
	}
	prologues(sh, eh->e_shnum, shstr, ss->sh_size, bias, t);
	r = 0;
out:
	munmap(map, size);
	return r;
}

void ftrt_module_use(const struct ftrt_module *m)
{
	ftrt_targets = m->targets;
	int has = m->size >= offsetof(struct ftrt_module, prologues_end) + sizeof m->prologues_end && m->prologues;
	ftrt_prologues = has ? m->prologues : NULL;
	ftrt_prologues_end = has ? m->prologues_end : NULL;
}
