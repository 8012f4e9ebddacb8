/*
 * A module's function symbols, read from its file (the program's from
 * /proc/self/exe) for the length of its load-time pass, so FTRACE_FILTER
 * can name functions and the pass can tell a site at a function's entry
 * from one after its prologue. Init-time only: uses libc freely; the
 * file stays mapped for the names until ftrt_free_symbols.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"

static struct ftrt_func *funcs;
static size_t nfuncs, funcs_cap;
static const unsigned char *file_map;
static size_t file_size;
static size_t last; /* ftrt_func_at's last answer */

/* Sort by start address: quicksort with the comparison inline (qsort's
 * callback per comparison cost more than the rest of the pass), insertion
 * sort for short runs, recursing into the smaller side only. */
static void sort_funcs(struct ftrt_func *a, size_t n)
{
	while (n > 16) {
		uintptr_t p = a[n / 2].start;
		size_t i = 0, j = n - 1;
		for (;;) {
			while (a[i].start < p)
				i++;
			while (a[j].start > p)
				j--;
			if (i >= j)
				break;
			struct ftrt_func t = a[i];
			a[i++] = a[j];
			a[j--] = t;
		}
		size_t left = j + 1;
		if (left < n - left) {
			sort_funcs(a, left);
			a += left;
			n -= left;
		} else {
			sort_funcs(a + left, n - left);
			n = left;
		}
	}
	for (size_t i = 1; i < n; i++) {
		struct ftrt_func t = a[i];
		size_t j = i;
		for (; j > 0 && a[j - 1].start > t.start; j--)
			a[j] = a[j - 1];
		a[j] = t;
	}
}

/* Bounds-checked view of the mapped file. */
static const void *at(const unsigned char *file, size_t size, uint64_t off, uint64_t len)
{
	if (off > size || len > size - off)
		return NULL;
	return file + off;
}

void ftrt_free_symbols(void)
{
	if (funcs)
		munmap(funcs, funcs_cap);
	if (file_map)
		munmap((void *)file_map, file_size);
	funcs = NULL;
	file_map = NULL;
	nfuncs = funcs_cap = file_size = 0;
	last = 0;
}

int ftrt_load_symbols(const char *path, uintptr_t bias)
{
	ftrt_free_symbols();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	const unsigned char *file = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (file == MAP_FAILED)
		return -1;
	file_map = file, file_size = size; /* unmapped by ftrt_free_symbols, on every path */
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
	const Elf64_Shdr *sh = at(file, size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof *sh);
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || !sh)
		return -1;
	const Elf64_Shdr *symtab = NULL;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB)
			symtab = &sh[i];
	if (!symtab || symtab->sh_link >= eh->e_shnum)
		return -1; /* stripped */
	const Elf64_Sym *syms = at(file, size, symtab->sh_offset, symtab->sh_size);
	const Elf64_Shdr *strsh = &sh[symtab->sh_link];
	const char *strs = at(file, size, strsh->sh_offset, strsh->sh_size);
	if (!syms || !strs)
		return -1;
	size_t n = symtab->sh_size / sizeof *syms;
	funcs_cap = (n + 1) * sizeof *funcs;
	funcs = mmap(NULL, funcs_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (funcs == MAP_FAILED) {
		funcs = NULL;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const Elf64_Sym *s = &syms[i];
		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || s->st_name >= strsh->sh_size)
			continue;
		const char *name = strs + s->st_name;
		if (!memchr(name, 0, strsh->sh_size - s->st_name) || !*name)
			continue;
		funcs[nfuncs++] = (struct ftrt_func){ bias + s->st_value, bias + s->st_value + s->st_size, name };
	}
	size_t unsorted = 0;
	for (size_t i = 1; i < nfuncs && !unsorted; i++)
		unsorted = funcs[i - 1].start > funcs[i].start;
	if (unsorted)
		sort_funcs(funcs, nfuncs);
	return 0;
}

const struct ftrt_func *ftrt_func_at(uintptr_t addr)
{
	/* The load-time pass asks in address order: try where the last
	 * answer was, and the next one, before searching. */
	for (size_t i = last; i < nfuncs && i <= last + 1; i++)
		if (funcs[i].start <= addr && (i + 1 == nfuncs || funcs[i + 1].start > addr)) {
			last = i;
			return addr < funcs[i].end || addr == funcs[i].start ? &funcs[i] : NULL;
		}
	size_t lo = 0, hi = nfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (funcs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	last = lo - 1;
	const struct ftrt_func *f = &funcs[lo - 1];
	return addr < f->end || addr == f->start ? f : NULL;
}
