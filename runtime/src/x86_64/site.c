/*
 * x86-64 site knowledge for the runtime: what a site may hold, and the
 * NOP that replaces it. The same facts as the Go package nops, which
 * checks its encodings against golang.org/x/arch; runtime_test.go checks
 * these bytes against that package.
 */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "../ftrt.h"

/* One instruction per size: a thread stopped inside a multi-NOP site
 * could resume in the middle of a call written there later. */
static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };       /* nopl 0x0(%rax,%rax,1) */
static const unsigned char nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }; /* nopw 0x0(%rax,%rax,1) */

/* Fallbacks, for a CPU that cannot run the P6 NOP (none that runs
 * x86-64 code is known; the kernel probed for them on 32-bit CPUs). */
static const unsigned char k8nop5[5] = { 0x66, 0x66, 0x66, 0x66, 0x90 };       /* data16 x4; nop */
static const unsigned char k8nop6[6] = { 0x66, 0x66, 0x66, 0x66, 0x66, 0x90 }; /* data16 x5; nop */
static const unsigned char jmpnop5[5] = { 0xeb, 0x03, 0x90, 0x90, 0x90 };       /* jmp .+5; padding never run */
static const unsigned char jmpnop6[6] = { 0xeb, 0x04, 0x90, 0x90, 0x90, 0x90 }; /* jmp .+6; padding never run */

static const unsigned char *cur5 = nop5, *cur6 = nop6;

const unsigned char *ftrt_arch_nop(int len)
{
	return len == 6 ? cur6 : cur5;
}

static sigjmp_buf probe_env;

static void probe_fault(int sig)
{
	(void)sig;
	siglongjmp(probe_env, 1);
}

/* Whether this CPU runs nop: copy it and a `ret` into a fresh executable
 * page and call it, with SIGILL and SIGSEGV caught. A page that cannot be
 * made executable (a policy forbids it) counts as yes: every x86-64 CPU
 * runs the P6 NOP. */
static int runs(const unsigned char *nop, int len)
{
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	memcpy(page, nop, len);
	page[len] = 0xc3; /* ret */
	volatile int ok = 1; /* volatile: set after the longjmp back */
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) == 0) {
		struct sigaction sa = { .sa_handler = probe_fault }, oldill, oldsegv;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGILL, &sa, &oldill);
		sigaction(SIGSEGV, &sa, &oldsegv);
		if (sigsetjmp(probe_env, 1) == 0)
			((void (*)(void))page)();
		else
			ok = 0;
		sigaction(SIGILL, &oldill, NULL);
		sigaction(SIGSEGV, &oldsegv, NULL);
	}
	munmap(page, 4096);
	return ok;
}

/* Choose the NOPs: the P6 NOP if this CPU runs it, else the K8 form, else
 * a jump over padding. FTRACE_NOP=p6|k8|jmp forces one (for tests of the
 * fallbacks). Returns the style's name. */
const char *ftrt_arch_probe(const char *force)
{
	if (force && !strcmp(force, "jmp")) {
		cur5 = jmpnop5, cur6 = jmpnop6;
		return "jmp";
	}
	if (force && !strcmp(force, "k8")) {
		cur5 = k8nop5, cur6 = k8nop6;
		return "k8";
	}
	if ((force && !strcmp(force, "p6")) || (runs(nop5, 5) && runs(nop6, 6)))
		return "p6";
	if (runs(k8nop5, 5) && runs(k8nop6, 6)) {
		cur5 = k8nop5, cur6 = k8nop6;
		return "k8";
	}
	cur5 = jmpnop5, cur6 = jmpnop6;
	return "jmp";
}

static int is_hook(uintptr_t target)
{
	return target == (uintptr_t)__fentry__ || target == (uintptr_t)mcount;
}

/* Inline compare: a libc call per byte pattern costs more than the pass's
 * whole budget per site. */
static inline int same(const unsigned char *p, const unsigned char *q, int n)
{
	for (int i = 0; i < n; i++)
		if (p[i] != q[i])
			return 0;
	return 1;
}

static int32_t rel32(const unsigned char *p)
{
	int32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

/*
 * The shapes a site takes in a linked program:
 *   e8 rel32          call hook                    (-fno-pie, or relaxed)   5
 *   67 e8 rel32       addr32 call hook             (ld's relaxation of ...) 6
 *   ff 15 disp32      call *hook@GOTPCREL(%rip)    (PIE -mfentry, unrelaxed) 6
 *   66 0f 1f 44 00 00 nopw                         (recordmcount --nop)     6
 *   0f 1f 44 00 xx    nopl xx(%rax,%rax,1)         (--nop; clang's padding) 5
 *   90 90 90 90 90    five nops                    (gcc's padding)          5
 * A call counts only if it reaches one of our hooks.
 */
enum ftrt_site_state ftrt_arch_classify(const unsigned char *ip, int *len)
{
	if (ip[0] == 0xe8) {
		*len = 5;
		return is_hook((uintptr_t)ip + 5 + rel32(ip + 1)) ? FTRT_SITE_CALL : FTRT_SITE_UNKNOWN;
	}
	if (ip[0] == 0x67 && ip[1] == 0xe8) {
		*len = 6;
		return is_hook((uintptr_t)ip + 6 + rel32(ip + 2)) ? FTRT_SITE_CALL : FTRT_SITE_UNKNOWN;
	}
	if (ip[0] == 0xff && ip[1] == 0x15) {
		uintptr_t slot = (uintptr_t)ip + 6 + rel32(ip + 2);
		*len = 6;
		return is_hook(*(const uintptr_t *)slot) ? FTRT_SITE_CALL : FTRT_SITE_UNKNOWN;
	}
	if (same(ip, nop6, 6)) {
		*len = 6;
		return FTRT_SITE_NOP;
	}
	if (ip[0] == 0x0f && ip[1] == 0x1f && ip[2] == 0x44 && ip[3] == 0x00) {
		*len = 5;
		return FTRT_SITE_NOP;
	}
	if (same(ip, k8nop6, 6) || same(ip, jmpnop6, 6)) {
		*len = 6;
		return FTRT_SITE_NOP;
	}
	if (same(ip, k8nop5, 5) || same(ip, jmpnop5, 5)) {
		*len = 5;
		return FTRT_SITE_NOP;
	}
	if (same(ip, (const unsigned char *)"\x90\x90\x90\x90\x90", 5)) {
		*len = 5;
		return FTRT_SITE_NOPS;
	}
	return FTRT_SITE_UNKNOWN;
}

void ftrace_caller5(void);
void ftrace_caller6(void);
void ftrace_mcount_caller5(void);
void ftrace_mcount_caller6(void);
void ftrace_stub(void);

/* e8 rel32 to ftrace_caller5, or 67 e8 rel32 to ftrace_caller6 (the
 * mcount variants for sites after the prologue): the
 * return address, and so the instruction after the site, is site + len
 * in either case (see nops.X86Call and nops.X86Call6). */
int ftrt_arch_call(uintptr_t ip, int len, int entry, unsigned char *buf)
{
	uintptr_t target = entry ? (len == 6 ? (uintptr_t)ftrace_caller6 : (uintptr_t)ftrace_caller5)
				 : (len == 6 ? (uintptr_t)ftrace_mcount_caller6 : (uintptr_t)ftrace_mcount_caller5);
	if (ftrt_mode == FTRT_NOP)
		target = (uintptr_t)ftrace_stub; /* the empty tracer: call and return */
	int64_t rel = (int64_t)(target - (ip + (uintptr_t)len));
	if (rel != (int32_t)rel)
		return -1;
	int32_t r = (int32_t)rel;
	if (len == 6) {
		buf[0] = 0x67; /* addr32 */
		buf[1] = 0xe8; /* call rel32 */
		memcpy(buf + 2, &r, 4);
	} else {
		buf[0] = 0xe8; /* call rel32 */
		memcpy(buf + 1, &r, 4);
	}
	return 0;
}

int ftrt_arch_at_entry(uintptr_t ip, uintptr_t start)
{
	return ip == start || (ip == start + 4 && same((const unsigned char *)start, (const unsigned char *)"\xf3\x0f\x1e\xfa", 4)); /* endbr64 */
}
