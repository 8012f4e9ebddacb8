/*
 * A module's function symbols, read from its file (the program's from
 * /proc/self/exe) for the length of its load-time pass, so FTRACE_FILTER
 * and the subtree filters (FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE) can
 * name functions and the pass can tell a site at a function's entry from
 * one after its prologue. Init-time only: uses libc freely.
 *
 * The pass needs a site's function when a filter names functions,
 * or when the site does not say where in its function it is (-pg's
 * calls of mcount, NOPs; patch.c's choose), and then for every site:
 * that is on its budget (20 ns per site, for a program whose every
 * function has a site). So rather than sort the symbols and look each
 * site up (a linker writes the global symbols in hash order: a sort of
 * 100,000 of them costs milliseconds, and each lookup a cache miss in
 * the table), the symbols are read once, in the table's order, and each
 * marks the sites it covers, found through an index of the sorted sites
 * by address. Nothing is sorted, and the only memory made is the index
 * (two 4-byte words per site) and, with a filter, one more per site.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* The open file (ftrt_symbols_open until ftrt_symbols_close). */
static const unsigned char *file_map;
static size_t file_size;
static const Elf64_Sym *syms;
static size_t nsyms;
static const char *strs;
static size_t strsize;
static uint64_t lo, span; /* link-time addresses of the executable segments: [lo, lo + span) */

/* Bounds-checked view of the mapped file. */
static const void *at(const unsigned char *file, size_t size, uint64_t off, uint64_t len)
{
	if (off > size || len > size - off)
		return NULL;
	return file + off;
}

/* Map [p, p + len) of the file in one call rather than a fault per 64
 * KiB as it is read; a kernel without MADV_POPULATE_READ refuses, and the
 * reads fault as before. */
static void prefault(const void *p, size_t len, size_t page)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
	madvise((void *)a, (uintptr_t)p + len - a, MADV_POPULATE_READ);
}

void ftrt_symbols_close(void)
{
	if (file_map)
		munmap((void *)file_map, file_size);
	file_map = NULL;
	syms = NULL;
	strs = NULL;
	nsyms = file_size = strsize = 0;
}

int ftrt_symbols_open(const char *path)
{
	ftrt_symbols_close();
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
	file_map = file, file_size = size; /* unmapped by ftrt_symbols_close, on every path */
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		goto bad;
	const Elf64_Shdr *sh = at(file, size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof *sh);
	const Elf64_Phdr *ph = at(file, size, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof *ph);
	if (!sh || !ph)
		goto bad;

	/* The executable segments' extent: no symbol outside can hold a
	 * site. On x86-64 a program's code spans less than 2 GiB unless
	 * built for the large code model; one whose executable segments
	 * span 4 GiB or more is refused, so offsets in it fit 32 bits. */
	uint64_t hi = 0;
	lo = UINT64_MAX;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
			lo = ph[i].p_vaddr < lo ? ph[i].p_vaddr : lo;
			hi = ph[i].p_vaddr + ph[i].p_memsz > hi ? ph[i].p_vaddr + ph[i].p_memsz : hi;
		}
	if (hi <= lo || hi - lo > UINT32_MAX)
		goto bad;
	span = hi - lo;

	const Elf64_Shdr *symtab = NULL;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB)
			symtab = &sh[i];
	if (!symtab || symtab->sh_link >= eh->e_shnum)
		goto bad; /* stripped */
	const Elf64_Shdr *strsh = &sh[symtab->sh_link];
	syms = at(file, size, symtab->sh_offset, symtab->sh_size);
	strs = at(file, size, strsh->sh_offset, strsh->sh_size);
	nsyms = symtab->sh_size / sizeof *syms;
	strsize = strsh->sh_size;
	if (!syms || !strs)
		goto bad;
	prefault(syms, symtab->sh_size, (size_t)sysconf(_SC_PAGESIZE));
	return 0;
bad:
	ftrt_symbols_close();
	return -1;
}

/* The name of symbol s, or NULL when it has none or its string is not
 * terminated inside the string table. */
static const char *name_of(const Elf64_Sym *s)
{
	if (s->st_name >= strsize || !strs[s->st_name])
		return NULL;
	if (strs[strsize - 1] != 0 && !memchr(strs + s->st_name, 0, strsize - s->st_name))
		return NULL;
	return strs + s->st_name;
}

/*
 * A site belongs to the function symbol that covers it (a symbol of size
 * 0 covers its own address) with the greatest address; of several at
 * that address (aliases), the last in the table. That function names the
 * site for pick (the filters); the site is at the function's entry if it
 * is at that address (or just after an endbr64 there), else after the
 * prologue (-pg). Without pick no name is needed, and a site is at an
 * entry if any symbol covering it starts there: the one that starts at
 * the greatest address covering it does.
 */
int ftrt_symbols_mark(uintptr_t bias, const uintptr_t *s, size_t m, unsigned char *want, unsigned char *marks,
		      int (*pick)(const char *name), const char **names)
{
	if (!file_map || m == 0)
		return 0;
	/* The index: bucket b of the executable span (offsets o with
	 * o * scale >> 32 == b) starts at site first[b]. Two buckets per
	 * site, so that the scan from a symbol's bucket to its first site
	 * is mostly no step at all (a scan of varying length mispredicts
	 * its end). best[i] (with pick): 1 + the offset of the symbol that
	 * names site i so far; 0 for none. */
	size_t nb = 2 * m + 1;
	uint64_t scale = ((uint64_t)nb << 32) / span; /* bucket of offset o: o * scale >> 32, < nb */
	size_t ibytes = (nb + 1) * sizeof(uint32_t), bbytes = pick ? m * sizeof(uint32_t) : 0;
	void *mem = mmap(NULL, ibytes + bbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -1;
	madvise(mem, ibytes + bbytes, MADV_POPULATE_WRITE);
	uint32_t *first = mem, *best = (uint32_t *)((char *)mem + ibytes);
	/* Sites outside the span are never covered: they index as the
	 * span's two ends. */
	uintptr_t base = lo + bias;
	size_t b = 0;
	for (size_t i = 0; i < m; i++) {
		uint64_t o = s[i] - base;
		size_t sb = s[i] < base ? 0 : o >= span ? nb : (size_t)(o * scale >> 32);
		while (b <= sb && b < nb)
			first[b++] = (uint32_t)i;
	}
	while (b <= nb)
		first[b++] = (uint32_t)m;

	for (size_t k = 0; k < nsyms; k++) {
		const Elf64_Sym *sym = &syms[k];
		/* The symbols are in hash order, so each one's index entry and
		 * sites are a cache miss: fetch those of the symbols a few
		 * ahead, the index two steps before the sites it points to. */
		if (k + 16 < nsyms) {
			uint64_t o = syms[k + 16].st_value - lo;
			if (o < span)
				__builtin_prefetch(&first[o * scale >> 32]);
			o = syms[k + 8].st_value - lo;
			if (o < span) {
				uint32_t f = first[o * scale >> 32];
				__builtin_prefetch(&s[f]);
				__builtin_prefetch(&want[f], 1);
			}
		}
		uint64_t start = sym->st_value - lo;
		if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF || start >= span)
			continue;
		uint64_t end = start + (sym->st_size ? sym->st_size : 1);
		uintptr_t a = base + start, e = base + (end < span ? end : span);
		size_t i = first[start * scale >> 32];
		while (i < m && s[i] < a)
			i++;
		if (i == m || s[i] >= e)
			continue; /* no site: the usual case for a function not built with instrumentation */
		const char *name = NULL;
		int verdict = PICK_TRACE;
		if (pick) {
			name = name_of(sym);
			if (!name)
				continue;
			verdict = -1; /* asked only if the symbol names a site */
		}
		for (; i < m && s[i] < e; i++) {
			if (pick) {
				if (start + 1 < best[i])
					continue; /* a symbol at a greater address names it */
				best[i] = (uint32_t)(start + 1);
				if (verdict < 0)
					verdict = pick(name);
				if (marks)
					marks[i] = (unsigned char)verdict;
				if (names)
					names[i] = name;
				if (!(verdict & PICK_TRACE)) {
					want[i] = WANT_NOP;
					continue;
				}
			} else if (want[i] == WANT_ENTRY) {
				continue;
			}
			want[i] = ftrt_arch_at_entry(s[i], a, e) ? WANT_ENTRY : WANT_MCOUNT;
		}
	}
	munmap(mem, ibytes + bbytes);
	return 0;
}

/* A key to sort by, and where it came from. */
struct keyed {
	uintptr_t key;
	size_t at;
};

static int by_key(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

int ftrt_symbols_mark_mod(const struct ftrt_mod *md, const uintptr_t *s, size_t m, unsigned char *want, unsigned char *marks,
			  int (*pick)(const char *name), const char **names)
{
	const uintptr_t *ps = md->prologues, *pf = md->prologue_funcs;
	size_t k = pf ? md->nprologues : 0;
	if (k == 0 || m == 0)
		return ftrt_symbols_mark(md->bias, s, m, want, marks, pick, names);
	/* Each site's key: its function's address for a trampoline's site
	 * (ps is sorted), else itself; marked in key order, results put
	 * back in the sites' order. Load-time work: libc's qsort. */
	size_t bytes = m * (sizeof(struct keyed) + sizeof(uintptr_t) + 2 + sizeof(const char *));
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -1;
	struct keyed *ks = mem;
	uintptr_t *keys = (uintptr_t *)(ks + m);
	const char **nm = (const char **)(keys + m);
	unsigned char *w = (unsigned char *)(nm + m), *mk = w + m;
	for (size_t i = 0; i < m; i++) {
		size_t lo = 0, hi = k;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (ps[mid] < s[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		ks[i].key = lo < k && ps[lo] == s[i] ? pf[lo] : s[i];
		ks[i].at = i;
	}
	/* Mostly sorted already: the trampolines lie together, in their
	 * functions' order, beside the compiler's sites; sorted only when
	 * the two interleave. */
	int sorted = 1;
	for (size_t i = 1; i < m && sorted; i++)
		sorted = ks[i - 1].key <= ks[i].key;
	if (!sorted)
		qsort(ks, m, sizeof *ks, by_key);
	for (size_t i = 0; i < m; i++) {
		keys[i] = ks[i].key;
		w[i] = want[ks[i].at];
		mk[i] = marks ? marks[ks[i].at] : 0;
		nm[i] = names ? names[ks[i].at] : NULL;
	}
	int r = ftrt_symbols_mark(md->bias, keys, m, w, marks ? mk : NULL, pick, names ? nm : NULL);
	for (size_t i = 0; i < m; i++) {
		want[ks[i].at] = w[i];
		if (marks)
			marks[ks[i].at] = mk[i];
		if (names)
			names[ks[i].at] = nm[i];
	}
	munmap(mem, bytes);
	return r;
}
