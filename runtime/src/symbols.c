/*
 * A module's function symbols, read from its file (the program's from
 * /proc/self/exe) for the length of its load-time pass, so FTRACE_FILTER
 * can name functions and the pass can tell a site at a function's entry
 * from one after its prologue. Init-time only: uses libc freely; the
 * file stays mapped for the names until ftrt_free_symbols.
 *
 * The load-time pass asks for the function of every site, so this is on
 * its budget (20 ns per site, for a program whose every function has a
 * site): the symbols are kept as 8-byte keys rather than copied out, and
 * sorted by a bucket sort on their address. A linker writes a symbol
 * table's global symbols in hash order, so a comparison sort of 100,000
 * of them mispredicts its way through several milliseconds; and fresh
 * memory costs a page fault per 4 KiB, so every byte per symbol counts.
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

/*
 * The function symbols in address order, one key each: the symbol's
 * address as an offset from lo (the start of the lowest executable
 * segment) in the high 32 bits; in the low 32, its index in the symbol
 * table, or, when the pass needs no names (no FTRACE_FILTER), its size:
 * then ftrt_func_at answers from the keys alone, without a read of the
 * symbol table per site (the table is in hash order, so each is a cache
 * miss). Only symbols inside the executable segments are kept (none outside
 * can hold a site), so the offsets fit: on x86-64 a program's code spans
 * less than 2 GiB unless built for the large code model, and one whose
 * executable segments span 4 GiB or more is refused.
 */
static uint64_t *keys;
static size_t nkeys;
static const Elf64_Sym *syms;
static const char *strs;
static uint64_t lo, span; /* link-time addresses of the executable segments: [lo, lo + span) */
static uintptr_t bias;    /* load bias: run-time address = link-time address + bias */
static size_t last;       /* ftrt_func_at's last answer: keys[last] */
static size_t keys_bytes; /* the keys' mapping */
static const unsigned char *file_map; /* the file's, for the names */
static size_t file_size;
static struct ftrt_func found; /* and the answer itself, good until the next call */
static int names;             /* keys hold indices: the answer has a name */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

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

/* Whether symbol s is one to keep: a function defined in this file, inside
 * the executable segments, and, when names are wanted, with one. A string
 * table that ends in a NUL (as every linker writes one) ends each of its
 * names; otherwise each name is checked. */
static inline int keep(const Elf64_Sym *s, size_t strsize, int terminated)
{
	if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || s->st_value - lo >= span)
		return 0;
	if (!names)
		return 1;
	if (s->st_name >= strsize || !strs[s->st_name])
		return 0;
	return terminated || memchr(strs + s->st_name, 0, strsize - s->st_name) != NULL;
}

/* Insertion sort of k[0..n): for keys each a few places from where they
 * belong. */
static void sort_keys_short(uint64_t *k, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t t = k[i];
		size_t j = i;
		for (; j > 0 && k[j - 1] > t; j--)
			k[j] = k[j - 1];
		k[j] = t;
	}
}

/* Sort k[0..n) (one bucket of a skewed layout): quicksort, recursing
 * into the smaller side, down to runs short enough for insertion. */
static void sort_keys(uint64_t *k, size_t n)
{
	while (n > 16) {
		uint64_t p = k[n / 2];
		size_t i = 0, j = n - 1;
		for (;;) {
			while (k[i] < p)
				i++;
			while (k[j] > p)
				j--;
			if (i >= j)
				break;
			uint64_t t = k[i];
			k[i++] = k[j];
			k[j--] = t;
		}
		size_t left = j + 1;
		if (left < n - left) {
			sort_keys(k, left);
			k += left;
			n -= left;
		} else {
			sort_keys(k + left, n - left);
			n = left;
		}
	}
	sort_keys_short(k, n);
}

void ftrt_free_symbols(void)
{
	if (keys)
		munmap(keys, keys_bytes);
	if (file_map)
		munmap((void *)file_map, file_size);
	keys = NULL;
	file_map = NULL;
	syms = NULL;
	strs = NULL;
	nkeys = keys_bytes = file_size = 0;
	last = 0;
}

int ftrt_load_symbols(const char *path, uintptr_t load_bias, int with_names)
{
	ftrt_free_symbols();
	names = with_names;
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
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return -1;
	const Elf64_Shdr *sh = at(file, size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof *sh);
	const Elf64_Phdr *ph = at(file, size, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof *ph);
	if (!sh || !ph)
		return -1;

	/* The executable segments' extent. */
	uint64_t hi = 0;
	lo = UINT64_MAX;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
			lo = ph[i].p_vaddr < lo ? ph[i].p_vaddr : lo;
			hi = ph[i].p_vaddr + ph[i].p_memsz > hi ? ph[i].p_vaddr + ph[i].p_memsz : hi;
		}
	if (hi <= lo || hi - lo > UINT32_MAX)
		return -1;
	span = hi - lo;

	const Elf64_Shdr *symtab = NULL;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB)
			symtab = &sh[i];
	if (!symtab || symtab->sh_link >= eh->e_shnum)
		return -1; /* stripped */
	const Elf64_Shdr *strsh = &sh[symtab->sh_link];
	syms = at(file, size, symtab->sh_offset, symtab->sh_size);
	strs = at(file, size, strsh->sh_offset, strsh->sh_size);
	size_t n = symtab->sh_size / sizeof *syms, strsize = strsh->sh_size;
	if (!syms || !strs || n > UINT32_MAX / 2)
		return -1;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	prefault(syms, symtab->sh_size, page);
	if (names)
		prefault(strs, strsize, page);
	int terminated = strsize > 0 && strs[strsize - 1] == 0;

	/*
	 * Bucket sort: as many buckets as symbols, by address, so most
	 * buckets hold one. One pass over the symbol table counts each
	 * bucket's symbols and marks the symbols kept, a second drops each
	 * kept one's key into its bucket, and a bucket of several is sorted
	 * alone. The keys, the counts and the marks share one mapping; all
	 * but the keys are given back at the end. (A radix sort reads the
	 * table once but moves every key twice, and on the VM measured, a
	 * scattered store costs more than a second sequential read of the
	 * table.)
	 */
	size_t nb = n + 1;
	uint64_t scale = ((uint64_t)nb << 32) / span; /* bucket of offset o: o * scale >> 32, < nb */
	size_t kbytes = (n * sizeof *keys + page - 1) & ~(page - 1);
	size_t sbytes = nb * sizeof(uint32_t) + (n + 63) / 64 * sizeof(uint64_t);
	void *m = mmap(NULL, kbytes + sbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	keys = m;
	keys_bytes = kbytes;
	uint32_t *count = (uint32_t *)((char *)m + kbytes);
	uint64_t *kept = (uint64_t *)(count + nb);
	madvise(count, sbytes, MADV_POPULATE_WRITE);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (keep(&syms[i], strsize, terminated)) {
			count[(syms[i].st_value - lo) * scale >> 32]++;
			kept[i / 64] |= 1ull << i % 64;
			k++;
		}
	madvise(keys, k * sizeof *keys, MADV_POPULATE_WRITE);
	/* count[b] becomes where bucket b ends; then, as the bucket is
	 * filled from its end, where it starts. */
	uint32_t sum = 0, most = 0;
	for (size_t b = 0; b < nb; b++) {
		most = count[b] > most ? count[b] : most;
		sum += count[b];
		count[b] = sum;
	}
	for (size_t i = n; i-- > 0;)
		if (kept[i / 64] >> i % 64 & 1) {
			uint64_t off = syms[i].st_value - lo, low = i;
			if (!names)
				low = syms[i].st_size < UINT32_MAX ? syms[i].st_size : UINT32_MAX;
			keys[--count[off * scale >> 32]] = off << 32 | low;
		}
	/* Buckets of a few keys at most (the usual case): one insertion
	 * sort of the whole, in which no key moves past its bucket's start.
	 * Otherwise each bucket of several on its own. */
	if (most <= 16)
		sort_keys_short(keys, k);
	else
		for (size_t b = 0; b < nb; b++) {
			size_t end = b + 1 < nb ? count[b + 1] : k;
			if (end - count[b] > 1)
				sort_keys(keys + count[b], end - count[b]);
		}
	munmap(count, sbytes);
	nkeys = k;
	last = 0;
	bias = load_bias;
	return 0;
}


const struct ftrt_func *ftrt_func_at(uintptr_t addr)
{
	/* Locals: stores to `found` could alias the globals, which the
	 * compiler would otherwise load again after each. */
	const uint64_t *k = keys;
	size_t n = nkeys, i = last; /* i < n when n > 0 */
	uint64_t off = addr - bias - lo;
	if (!n || off >= span)
		return NULL;
	/* The last key at or before addr: the largest below (off + 1) << 32. */
	uint64_t probe = (off + 1) << 32;
	/* The load-time pass asks in address order: the key after the last
	 * answer (the next function), or the last answer, before searching. */
	if (i + 1 < n && k[i + 1] < probe)
		i++;
	if (k[i] >= probe || (i + 1 < n && k[i + 1] < probe))
		i = n;
	if (i == n) {
		size_t l = 0, h = n;
		while (l < h) {
			size_t mid = l + (h - l) / 2;
			if (k[mid] < probe)
				l = mid + 1;
			else
				h = mid;
		}
		if (l == 0)
			return NULL;
		i = l - 1;
	}
	last = i;
	uint64_t start = k[i] >> 32, size = (uint32_t)k[i];
	const char *name = NULL;
	if (names) {
		/* The symbols are in the table's order, not the keys': fetch
		 * the one the pass will ask for a few sites from now, so that
		 * its cache miss overlaps this one's. */
		if (i + 8 < n)
			__builtin_prefetch(&syms[(uint32_t)k[i + 8]]);
		const Elf64_Sym *s = &syms[(uint32_t)k[i]];
		size = s->st_size;
		name = strs + s->st_name;
	}
	if (off >= start + size && off != start)
		return NULL;
	uintptr_t a = addr - (uintptr_t)(off - start);
	found = (struct ftrt_func){ a, a + size, name };
	return &found;
}
