/*
 * record -P: sites made at load from functions' prologues, for a module
 * built without tracing flags (abi.h's PLAN_* protocol, served by
 * ftpatch record: package prologue's Server).
 *
 * For each module the runtime describes, the server on
 * FTRACE_PROLOGUE_SOCKET is asked "BUILD-ID PATH\n"; it answers how many
 * functions get a site and how many bytes their trampolines take. The
 * trampolines are mapped here, private, anonymous, within reach of the
 * module's code (a moved instruction's operands, the jumps both ways,
 * and the calls an enabled site makes into the runtime's near page); the
 * server is told where (less the module's load bias) and sends them, made
 * for that place, with each function's patch: its bytes as the file has
 * them, and the jump to its trampoline that replaces them.
 *
 * The trampolines are copied in while the mapping is writable and no
 * thread can run them, then it is made read-only and executable. Each
 * function's bytes are checked against the answer before its jump is
 * written through the code writer (arch/text.c: /proc/self/mem, no
 * mapping ever writable and executable); a function whose bytes differ
 * is left alone, and counted. The module's description then lists the
 * trampolines' sites beside its compiler's (each trampoline's start: an
 * ordinary disabled entry site, a patchable area of its own), which of
 * its sites were made so (prologues), and each one's function, by whose
 * symbol the pass names it (prologue_funcs).
 *
 * Only at a module's description, before its pass, with one thread
 * (the program's start): libc is used freely. Never waits past
 * ASK_TIMEOUT_MS; a socket that fails is warned about once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "arch/arch.h"
#include "arch/poke.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "prologue.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define ASK_TIMEOUT_MS 30000
#define PAGE 4096
/* The trampolines lie within this distance of every byte of the
 * module's code: x86-64's rel32 reaches ±2 GiB, and an enabled site
 * calls the runtime's near page, itself within 2 GiB less 256 MiB of the
 * code; arm64's b and bl reach ±128 MiB. */
#if defined(__x86_64__)
#define REACH (192ll << 20)
#else
#define REACH (96ll << 20)
#endif


static int gone; /* the socket failed once: warned, not asked again */

/* The trampolines' mappings, for the walk over a module's sites, which
 * finds every other site in a segment of the module's (sites.c). Only
 * added to, at a module's description (one thread), before its pass. */
#define REGIONS 64
static struct {
	uintptr_t lo, hi;
} regions[REGIONS];
static int nregions;

int ftrt_prologue_region(uintptr_t a, uintptr_t *lo, uintptr_t *hi)
{
	for (int i = 0; i < __atomic_load_n(&nregions, __ATOMIC_ACQUIRE); i++)
		if (a >= regions[i].lo && a < regions[i].hi) {
			*lo = regions[i].lo, *hi = regions[i].hi;
			return 1;
		}
	return 0;
}

static void failed(const char *sock, const char *why, const char *path)
{
	if (__atomic_exchange_n(&gone, 1, __ATOMIC_RELAXED))
		return;
	struct say s;
	ftrt_say_begin(&s);
	ftrt_say_text(&s, "FTRACE_PROLOGUE_SOCKET ");
	ftrt_say_str(&s, sock);
	ftrt_say_text(&s, ": no sites made from prologues: ");
	ftrt_say_text(&s, why);
	if (path) {
		ftrt_say_text(&s, ", asked about ");
		ftrt_say_str(&s, path);
	}
	ftrt_say_end(&s);
}

/* Read or write exactly n bytes, within the socket's timeouts. */
static int xfer(int fd, void *buf, size_t n, int out)
{
	for (size_t done = 0; done < n;) {
		ssize_t k = out ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL) : recv(fd, (char *)buf + done, n - done, 0);
		if (k > 0)
			done += (size_t)k;
		else if (k == 0 || errno != EINTR)
			return -1;
	}
	return 0;
}

/* Whether every byte of [p, p + size) is within REACH of every byte of
 * the module's code [lo, hi). */
static int near(uintptr_t p, size_t size, uintptr_t lo, uintptr_t hi)
{
	uintptr_t top = p + size > hi ? p + size : hi, bottom = p < lo ? p : lo;
	return top - bottom <= (uintptr_t)REACH;
}

/* A private anonymous mapping of size bytes near the module's code
 * [lo, hi), writable for now; MAP_FAILED when none is granted in reach.
 * Asked for at first (the place the server made the trampolines for
 * already), then just above the code, then below it, then further out. */
static void *map_near(size_t size, uintptr_t first, uintptr_t lo, uintptr_t hi)
{
	void *m = mmap((void *)first, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m != MAP_FAILED && (uintptr_t)m == first && near(first, size, lo, hi))
		return m;
	if (m != MAP_FAILED)
		munmap(m, size);
	for (int k = 0; k < 24; k++) {
		uintptr_t step = (uintptr_t)(k / 2) * (8u << 20);
		uintptr_t hint = (k & 1) ? lo - size - step : ((hi + PAGE - 1) & ~(uintptr_t)(PAGE - 1)) + step;
		hint &= ~(uintptr_t)(PAGE - 1);
		void *m = mmap((void *)hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (m == MAP_FAILED)
			continue;
		if (near((uintptr_t)m, size, lo, hi))
			return m;
		munmap(m, size);
	}
	return MAP_FAILED;
}

/* An array of n words, mapped; NULL when none. */
static uintptr_t *words(size_t n)
{
	void *p = mmap(NULL, (n ? n : 1) * sizeof(uintptr_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The server's answer for one module, and where it went. */
struct answer {
	uint32_t count, size;
	unsigned char *image; /* the trampolines' mapping */
	size_t mapped;        /* its length */
	unsigned char *entries; /* mapped, entries_size bytes; MAP_FAILED for none */
	size_t entries_size;
};

/* Ask the server about the module at path (build_id "" for none), its
 * trampolines mapped near [lo, hi): 0 with a->count 0 (nothing for it),
 * 0 with the answer, or -1 (said why). */
static int ask(const char *sock, const char *path, const char *build_id, uintptr_t bias, uintptr_t lo, uintptr_t hi, struct answer *a)
{
	memset(a, 0, sizeof *a);
	a->image = a->entries = MAP_FAILED;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(sock) >= sizeof sa.sun_path) {
		failed(sock, "its path is too long", NULL);
		return -1;
	}
	strcpy(sa.sun_path, sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		failed(sock, "no socket", NULL);
		return -1;
	}
	struct timeval tv = { ASK_TIMEOUT_MS / 1000, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	const char *why = NULL;
	unsigned char hdr[PLAN_HEADER];
	size_t plen = strlen(path), blen = strlen(build_id);
	char *q = malloc(plen + blen + 4);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		why = "no server there (ftpatch record is gone?)";
		goto out;
	}
	if (!q) {
		why = "no memory";
		goto out;
	}
	memcpy(q, blen ? build_id : "-", blen ? blen : 1);
	size_t qlen = blen ? blen : 1;
	q[qlen++] = ' ';
	memcpy(q + qlen, path, plen);
	qlen += plen;
	q[qlen++] = '\n';
	if (xfer(fd, q, qlen, 1) != 0 || xfer(fd, hdr, sizeof hdr, 0) != 0 || memcmp(hdr, PLAN_MAGIC, 8) != 0) {
		why = "no answer";
		goto out;
	}
	uint64_t canon;
	memcpy(&a->count, hdr + 8, 4);
	memcpy(&a->size, hdr + 12, 4);
	memcpy(&canon, hdr + 16, 8);
	if (!a->count || !a->size)
		goto out; /* nothing for this module */
	a->mapped = ((size_t)a->size + PAGE - 1) & ~(size_t)(PAGE - 1);
	a->image = map_near(a->mapped, bias + (uintptr_t)canon, lo, hi);
	if (a->image != MAP_FAILED)
		madvise(a->image, a->mapped, MADV_POPULATE_WRITE); /* faulted in at once, not page by page as the answer arrives */
	if (a->image == MAP_FAILED) {
		struct say s;
		ftrt_say_begin(&s);
		ftrt_say_str(&s, path);
		ftrt_say_text(&s, ": no memory within reach of its code for the trampolines of its prologue sites; none made");
		ftrt_say_end(&s);
		a->count = 0;
		goto out;
	}
	uint64_t at = (uint64_t)(uintptr_t)a->image - (uint64_t)bias; /* modulo 2^64 */
	unsigned char st[8];
	uint32_t status;
	if (xfer(fd, &at, 8, 1) != 0 || xfer(fd, st, 8, 0) != 0) {
		why = "no answer";
		goto out;
	}
	uint32_t ebytes;
	memcpy(&status, st, 4);
	memcpy(&ebytes, st + 4, 4);
	if (status != PLAN_OK) {
		a->count = 0; /* out of reach, or the server could not make them: said there */
		goto out;
	}
	a->entries_size = ebytes ? ebytes : 1;
	a->entries = mmap(NULL, a->entries_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (a->entries == MAP_FAILED) {
		why = "no memory";
		goto out;
	}
	if (xfer(fd, a->image, a->size, 0) != 0 || xfer(fd, a->entries, ebytes, 0) != 0)
		why = "an answer cut short";
out:
	free(q);
	close(fd);
	if (why) {
		failed(sock, why, path);
		a->count = 0;
	}
	if (!a->count) {
		if (a->image != MAP_FAILED)
			munmap(a->image, a->mapped);
		if (a->entries != MAP_FAILED)
			munmap(a->entries, a->entries_size);
		a->image = a->entries = MAP_FAILED;
	}
	return why ? -1 : 0;
}

int ftrt_prologue_make(struct ftrt_module *m, const char *path, const char *build_id, uintptr_t bias, uintptr_t lo, uintptr_t hi)
{
	const char *sock = ftrt_env(ENV_PROLOGUE_SOCKET);
	if (!sock || !*sock || __atomic_load_n(&gone, __ATOMIC_RELAXED) || !path || strchr(path, '\n'))
		return 0;
	struct answer a;
	if (ask(sock, path, build_id, bias, lo, hi, &a) != 0 || !a.count)
		return 0;
	/* The trampolines, read-only and executable before any jump leads
	 * there; no thread has run them. */
	__builtin___clear_cache((char *)a.image, (char *)a.image + a.size);
	if (nregions == REGIONS || mprotect(a.image, a.mapped, PROT_READ | PROT_EXEC) != 0) {
		munmap(a.image, a.mapped);
		munmap(a.entries, a.entries_size);
		return 0;
	}
	regions[nregions].lo = (uintptr_t)a.image, regions[nregions].hi = (uintptr_t)a.image + a.mapped;
	__atomic_store_n(&nregions, nregions + 1, __ATOMIC_RELEASE);
	size_t ns = (size_t)(m->stop - m->start), na = (size_t)(m->areas_end - m->areas);
	uintptr_t *s = words(ns + a.count), *ar = words(na + a.count), *fn = words(a.count);
	if (!s || !ar || !fn || ftrt_text_open() != 0) {
		struct say sy;
		ftrt_say_begin(&sy);
		ftrt_say_str(&sy, path);
		ftrt_say_text(&sy, ": its prologue sites cannot be written (no memory, or no code writer); none made");
		ftrt_say_end(&sy);
		munmap(a.entries, a.entries_size);
		return 0; /* the trampolines stay mapped, unreached */
	}
	memcpy(s, m->start, ns * sizeof *s);
	memcpy(ar, m->areas, na * sizeof *ar);
	size_t k = 0;
	uintptr_t last = 0;
	size_t pos = 0;
	for (uint32_t i = 0; i < a.count; i++) {
		if (pos + PLAN_ENTRY_HEAD > a.entries_size)
			break; /* cut short: the rest are left alone */
		const unsigned char *e = a.entries + pos;
		uint64_t func, patch;
		uint32_t off, len;
		memcpy(&func, e, 8);
		memcpy(&patch, e + 8, 8);
		memcpy(&off, e + 16, 4);
		memcpy(&len, e + 20, 4);
		if (len > PLAN_PATCH_MAX || pos + ((PLAN_ENTRY_HEAD + 2 * (size_t)len + 7) & ~(size_t)7) > a.entries_size)
			break;
		pos += (PLAN_ENTRY_HEAD + 2 * (size_t)len + 7) & ~(size_t)7;
		const unsigned char *orig = e + PLAN_ENTRY_HEAD, *jump = e + PLAN_ENTRY_HEAD + len;
		uintptr_t at = bias + (uintptr_t)patch;
		if (len == 0 || len > PLAN_PATCH_MAX || off >= a.size || at < lo || at + len > hi || at < last ||
		    memcmp((const void *)at, orig, len) != 0) {
			ftrt_prologue_changed++;
			continue;
		}
		/* Queued in address order (the entries come in their
		 * functions'), 8 bytes a write at most, and written in runs
		 * of nearby writes below: one write of /proc/self/mem per
		 * run, not one per function. No thread runs the program's
		 * code yet. */
		int err = 0;
		for (uint32_t done = 0; done < len && !err; done += 8)
			err = ftrt_text_queue(at + done, jump + done, len - done < 8 ? len - done : 8);
		if (err) {
			ftrt_prologue_changed++;
			continue;
		}
		last = at + len;
		s[ns + k] = ar[na + k] = (uintptr_t)a.image + off;
		fn[k++] = bias + (uintptr_t)func;
	}
	munmap(a.entries, a.entries_size);
	if (ftrt_text_flush() != 0) {
		struct say sy;
		ftrt_say_begin(&sy);
		ftrt_say_str(&sy, path);
		ftrt_say_text(&sy, ": its prologue sites could not be written: ");
		ftrt_say_text(&sy, ftrt_text_why());
		ftrt_say_end(&sy);
		return 0; /* what was written jumps to trampolines whose sites are NOPs: the functions run as before */
	}
	m->start = s, m->stop = s + ns + k;
	m->areas = ar, m->areas_end = ar + na + k;
	m->prologues = s + ns, m->prologues_end = s + ns + k;
	m->prologue_funcs = fn;
	return (int)k;
}
