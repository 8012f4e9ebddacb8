/*
 * x86-64 site knowledge for the runtime: what a site may hold, and the
 * NOP that replaces it. The same facts as the Go package nops, which
 * checks its encodings against golang.org/x/arch; runtime_test.go checks
 * these bytes against that package.
 */
#include <string.h>

#include "../ftrt.h"

/* One instruction per size: a thread stopped inside a multi-NOP site
 * could resume in the middle of a call written there later. */
static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };       /* nopl 0x0(%rax,%rax,1) */
static const unsigned char nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }; /* nopw 0x0(%rax,%rax,1) */

const unsigned char *ftrt_arch_nop(int len)
{
	return len == 6 ? nop6 : nop5;
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

/* e8 rel32 to ftrace_caller5, or 67 e8 rel32 to ftrace_caller6 (the
 * mcount variants for sites after the prologue): the
 * return address, and so the instruction after the site, is site + len
 * in either case (see nops.X86Call and nops.X86Call6). */
int ftrt_arch_call(uintptr_t ip, int len, int entry, unsigned char *buf)
{
	uintptr_t target = entry ? (len == 6 ? (uintptr_t)ftrace_caller6 : (uintptr_t)ftrace_caller5)
				 : (len == 6 ? (uintptr_t)ftrace_mcount_caller6 : (uintptr_t)ftrace_mcount_caller5);
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
