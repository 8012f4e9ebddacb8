/*
 * Changing x86-64 sites while other threads run them (live.h): the
 * breakpoint protocol of the kernel's text_poke_bp, for a batch.
 *
 * An instruction of several bytes cannot be replaced in one store that
 * every core is sure to fetch whole: a core may have fetched the first
 * bytes of the old one and go on to fetch the rest of the new. So, for
 * every site of the batch at once:
 *
 *   1. int3 (cc) over the site's first byte; sync every core
 *      (membarrier SYNC_CORE: each serialises its instruction stream,
 *      so none runs the old instruction past this point). A thread
 *      that reaches a site now traps.
 *   2. the new instruction's other bytes, where they differ; sync.
 *   3. its first byte over the int3. No sync: the kernel's text_poke_bp
 *      syncs here so that no core is still in its int3 handler when the
 *      batch's array goes; a thread here that fetches the int3 late
 *      traps, and its handler runs the site again (below), whether the
 *      batch is still published or not: the patcher does not wait.
 *
 * A thread that traps on a site's int3 meanwhile goes on as if the site
 * held its new instruction (ftrt_arch_trap emulates it; or its old one,
 * before step 2 wrote the new one's other bytes): a NOP is
 * stepped over, a call pushes its return address and goes to its
 * target, a jump goes to its target. One that trapped on the int3 just
 * before step 3 replaced it, and reaches the handler after, finds the
 * site's new first byte there, and runs the site again.
 *
 * The handler finds a site in the batch published for it (batch, nbatch)
 * by binary search; the batch is read without a lock while the patcher
 * may publish the next, so it is bracketed by a sequence count (odd
 * while it changes), and a read that straddles a change is done again.
 * The patcher holds every signal it may hold back while it publishes, so
 * no handler on its own thread waits for it.
 *
 * The bytes are written through text.c (/proc/self/mem: the code is
 * never writable), each step's writes in as few writes as the sites'
 * spread allows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "arch/poke.h"
#include "arch/site.h"
#include "arch/sys.h"
#include "insn.h"

#define INT3 0xcc
#define CMP_EAX 0x3d /* cmp $imm32, %eax: a site disabled live (ftrt_arch_live_off) */

static const struct ftrt_poke *volatile batch; /* the sites being changed, by ip */
static volatile size_t nbatch;
static volatile unsigned seq; /* odd while batch and nbatch change */

static void publish(const struct ftrt_poke *p, size_t n)
{
	__atomic_fetch_add(&seq, 1, __ATOMIC_SEQ_CST);
	batch = p;
	nbatch = n;
	__atomic_fetch_add(&seq, 1, __ATOMIC_SEQ_CST);
}

/* Queue byte (or bytes) of each site and write them all. */
static int step(struct ftrt_poke *p, size_t n, int what)
{
	int err = 0, any = 0;
	for (size_t i = 0; i < n && !err; i++) {
		if (what == 0) {
			static const unsigned char int3 = INT3;
			err = ftrt_text_queue(p[i].ip, &int3, 1);
		} else if (what == 1) {
			if (p[i].len > 1 && memcmp(p[i].old + 1, p[i].new + 1, p[i].len - 1u) != 0)
				err = ftrt_text_queue(p[i].ip + 1, p[i].new + 1, p[i].len - 1u);
			else
				continue;
		} else {
			err = ftrt_text_queue(p[i].ip, p[i].new, 1);
		}
		any = 1;
	}
	if (err) {
		ftrt_text_flush();
		return err;
	}
	if (!any)
		return 1; /* nothing to write: no sync either */
	return ftrt_text_flush();
}

const char *ftrt_arch_live_refused(void)
{
	return NULL;
}

int ftrt_arch_poke(struct ftrt_poke *p, size_t n)
{
	if (n == 0)
		return 0;
	unsigned long mask;
	sys_sigs_hold(&mask);
	publish(p, n);
	sys_sigs_release(&mask);
	int err = step(p, n, 0);
	if (err < 0) {
		/* Some sites may hold the int3: give them their old first byte
		 * back (the handler serves them until then). */
		for (size_t i = 0; i < n; i++)
			memcpy(p[i].new, p[i].old, p[i].len);
		step(p, n, 2);
		ftrt_text_sync();
	} else {
		ftrt_text_sync();
		err = step(p, n, 1);
		if (err == 0)
			ftrt_text_sync();
		if (err >= 0)
			err = step(p, n, 2);
		/* No sync after step 3: a thread that still fetches a site's
		 * int3 traps, and its handler, finding the new first byte there,
		 * runs the site again (ftrt_arch_trap), batch published or not.
		 * No thread runs a site's old instruction after step 1's sync. */
		err = err < 0 ? err : 0;
	}
	sys_sigs_hold(&mask);
	publish(NULL, 0);
	sys_sigs_release(&mask);
	return err;
}

void ftrt_arch_poke_after_fork(void)
{
	const struct ftrt_poke *p = batch;
	size_t n = nbatch;
	if (!p || !n || ftrt_text_open() != 0)
		return;
	ftrt_text_put_new(p, n);
	publish(NULL, 0);
}

/* The batch's entry for the site at ip into *e: 1 found, 0 not, -1 the
 * batch changed while it was read. */
static int lookup(uintptr_t ip, struct ftrt_poke *e)
{
	unsigned s = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
	if (s & 1)
		return -1;
	const struct ftrt_poke *p = batch;
	size_t lo = 0, hi = nbatch;
	while (p && lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p[mid].ip < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	int found = p && lo < nbatch && p[lo].ip == ip;
	if (found)
		*e = p[lo];
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&seq, __ATOMIC_RELAXED) != s)
		return -1;
	return found;
}

static int32_t rel32(const unsigned char *p)
{
	int32_t r;
	memcpy(&r, p, 4);
	return r;
}

/* Go on as if the site at ip, len bytes, held the instruction n: the
 * forms live.c writes (arch/x86_64/site.c), e8 rel32 and 67 e8 rel32 (calls,
 * returning past themselves: to the site's end, or to the NOP that ends
 * a 6-byte site called by e8), ff 15 disp32 (a call through the GOT, put
 * back at a detach), e9 rel32 (a jump), else a NOP (the whole site). */
static void emulate(greg_t *g, uintptr_t ip, int len, const unsigned char *n)
{
	uintptr_t end = ip + (uintptr_t)len;
	if (n[0] == 0xe8 || (n[0] == 0x67 && n[1] == 0xe8)) {
		uintptr_t ret = ip + (n[0] == 0xe8 ? 5 : 6);
		uintptr_t target = ret + (uintptr_t)(intptr_t)rel32(n[0] == 0xe8 ? n + 1 : n + 2);
		g[REG_RSP] -= 8;
		*(uintptr_t *)g[REG_RSP] = ret; /* below the stack pointer at an entry: free */
		g[REG_RIP] = (greg_t)target;
	} else if (n[0] == 0xff && n[1] == 0x15) {
		/* call *disp32(%rip): PIE -mfentry's call of __fentry__
		 * through the GOT, a site as a process had it before ftpatch
		 * record -p (live.c's ftrt_live_restore puts it back). */
		uintptr_t ret = ip + 6;
		g[REG_RSP] -= 8;
		*(uintptr_t *)g[REG_RSP] = ret;
		g[REG_RIP] = (greg_t)*(const uintptr_t *)(ret + (uintptr_t)(intptr_t)rel32(n + 2));
	} else if (n[0] == 0xe9) {
		g[REG_RIP] = (greg_t)(ip + 5 + (uintptr_t)(intptr_t)rel32(n + 1));
	} else {
		g[REG_RIP] = (greg_t)end;
	}
}

int ftrt_arch_trap(const siginfo_t *si, void *ctx, int (*is_site)(uintptr_t ip))
{
	if (si->si_code != SI_KERNEL) /* not an int3: raise, kill, a debugger's trap */
		return 0;
	greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	uintptr_t ip = (uintptr_t)g[REG_RIP] - 1;
	for (int tries = 0; tries < 1000000; tries++) {
		if (*(const volatile unsigned char *)ip != INT3) {
			/* Step 3 wrote the site since: run it again as it is. */
			if (!is_site(ip))
				return 0;
			g[REG_RIP] = (greg_t)ip;
			return 1;
		}
		struct ftrt_poke e;
		int r = lookup(ip, &e);
		if (r > 0) {
			/* The new instruction once its other bytes are written
			 * (step 2), the old one before: a call of a 6-byte site's e8
			 * form returns to the site's last byte, which must be the
			 * new one's NOP by then. Half written: look again. */
			const volatile unsigned char *m = (const volatile unsigned char *)ip;
			int is_new = 1, is_old = 1;
			for (int k = 1; k < e.len; k++) {
				unsigned char c = m[k];
				is_new &= c == e.new[k];
				is_old &= c == e.old[k];
			}
			if (is_new || is_old) {
				emulate(g, ip, e.len, is_new ? e.new : e.old);
				return 1;
			}
			continue;
		}
		if (r == 0 && !is_site(ip))
			return 0; /* the program's own int3 */
		/* The batch is changing, or was retired after this thread
		 * read the int3: look again. */
	}
	return 0;
}

/*
 * What a site holds (live.h): enabled (a call of one of the module's
 * trampolines, or function_graph's jump to a trampoline of its own),
 * disabled (a NOP, or gcc's five 90s; the compare a live disable
 * leaves; or the compiler's call of a hook, below), or anything else.
 */
int ftrt_arch_live_state(uintptr_t ip, int *len)
{
	const unsigned char *p = (const unsigned char *)ip;
	int l = 0;
	enum ftrt_site_state st = ftrt_arch_classify(p, &l);
	/* A compiler's call of a hook counts as disabled too: the load-time
	 * pass of a runtime loaded into a running process writes nothing
	 * (patch/pass.h's ftrt_pass_late), and its sites call the hook as
	 * the program was linked to (the C library's __fentry__, which
	 * records nothing) until a live change. */
	if (st == FTRT_SITE_NOP || st == FTRT_SITE_NOPS || st == FTRT_SITE_CALL) {
		*len = l;
		return 0;
	}
	if (p[0] == CMP_EAX || (p[0] == 0x67 && p[1] == CMP_EAX)) {
		*len = p[0] == CMP_EAX ? 5 : 6; /* disabled live (ftrt_arch_live_off) */
		return 0;
	}
	if (ftrt_arch_tramp_call(p, &l, 0)) {
		*len = l;
		return 1;
	}
	if (p[0] == 0xe8 && (ftrt_arch_live_ops_rec(ip, 5) || ftrt_arch_direct_known(ftrt_arch_live_target(ip, 5)))) {
		*len = 5; /* e8 rel32: a call of an ops trampoline or a direct one (a 6-byte site's NOP after it) */
		return 1;
	}
	if (p[0] != 0xe9 || !(l = ftrt_arch_tramp_site(ip + 5 + (uintptr_t)(intptr_t)rel32(p + 1), ip)))
		return -1;
	*len = l;
	return 1;
}

/*
 * A site enabled live calls its module's caller for where it is (at the
 * entry, after the prologue, after push %r10), which serves every
 * tracer: no trampoline is built while threads run. A 6-byte site (gcc's
 * `addr32 call __fentry__` in a PIE, PIE -mfentry's `call
 * *__fentry__@GOTPCREL`, or the NOP recordmcount wrote over either)
 * becomes a 5-byte call of the caller for 5-byte sites (it returns to
 * site + 5, the site's address to the tracer either way) and a NOP: then
 * the site is a 5-byte site to every change after this one, which the
 * compare form (live_off) makes a change of its first byte alone, one
 * sync, where `67 e8` and `67 3d` differ in the second byte too. But
 * whole (a process ftpatch attached to, whose detach gives each site
 * back its bytes: patch/live.c's ftrt_live_restore): `67 e8`, a call of
 * the caller for 6-byte sites, which returns past the whole site, so a
 * thread still inside the tracer when the site's bytes are given back
 * returns past every byte written; each change then takes the
 * protocol's three syncs.
 */
int ftrt_arch_live_call(uintptr_t ip, int len, int want, int whole, unsigned char *buf)
{
	if (len == 6 && !whole) {
		if (put_call(ip, 5, ftrt_arch_caller(5, want), buf) != 0)
			return -1;
		buf[5] = 0x90; /* nop */
		return 0;
	}
	return put_call(ip, len, ftrt_arch_caller(len, want), buf);
}

/*
 * The bytes that disable the site. A call (e8 rel32, 67 e8 rel32)
 * becomes a compare that keeps its rel32 as an immediate, 3d imm32
 * (cmp $imm32, %eax; 67 3d: the prefix changes nothing without a memory
 * operand): the opcode alone changes, both ways. For e8, the first
 * byte, so the protocol's step 2 writes nothing and needs no sync; a
 * 67 e8 site is enabled again as e8 and a NOP (ftrt_arch_live_call, but
 * whole), and is such a site from then on. The compare only sets flags,
 * which no site's code needs: at a function's entry and in place of a
 * call of mcount they hold nothing the calling convention keeps (the
 * direction flag, which it does, is left alone). Anything else (a jump
 * to a trampoline of the site's own) becomes the load-time pass's NOP.
 */
void ftrt_arch_live_off(uintptr_t ip, int len, unsigned char *buf)
{
	const unsigned char *p = (const unsigned char *)ip;
	int l;
	memcpy(buf, p, (size_t)len);
	if ((ftrt_arch_tramp_call(p, &l, 0) && l == len) ||
	    (len == 5 && (ftrt_arch_live_ops_rec(ip, len) || ftrt_arch_direct_known(ftrt_arch_live_target(ip, len))))) {
		buf[len - 5] = CMP_EAX; /* the e8 */
		return;
	}
	memcpy(buf, ftrt_arch_off(ip, len), (size_t)len);
}

/* Whether the enabled site at ip calls a trampoline that follows the
 * process-wide tracer: one of the module's callers, not the empty
 * tracer's stub nor function_graph's jump to a trampoline of its own. */
int ftrt_arch_live_shared(uintptr_t ip, int len)
{
	return ftrt_arch_tramp_call((const unsigned char *)ip, &len, FTRT_FUNCTION);
}
