/*
 * ftrace.h's accessors of a struct ftrace_regs (regs.h), for x86-64,
 * and the tracer's call from a list of ops (ops.c). Async-signal-safe:
 * they run in callbacks.
 */
#include <cpuid.h>
#include <stdint.h>

#include "arch/x86_64/regs.h"
#include "arch/x86_64/vecsave.h"
#include "core/ftrt.h"
#include "ftrace.h"
#include "patch/live.h"
#include "tracers/argread.h"
#include "tracers/entry.h"
#include "tracers/fgraph.h"

void ftrace_stub(void);

unsigned long ftrace_regs_get_argument(struct ftrace_regs *f, unsigned int n)
{
	switch (n) {
	case 0: return f->di;
	case 1: return f->si;
	case 2: return f->dx;
	case 3: return f->cx;
	case 4: return f->r8;
	case 5: return f->r9;
	}
	/* The stack's, above the return address, as an item of FTRACE_ARGS
	 * reads them: never faulting (a function at the top of its stack
	 * has nothing mapped above it), 0 past the first ARG_STACK_MAX
	 * bytes or where they cannot be read. */
	return ftrt_stack_word(ftrt_arch_stack_args(f, f->ip), n - 6);
}

unsigned long long ftrace_regs_get_fp_argument_bits(struct ftrace_regs *f, unsigned int n)
{
	return n < 8 ? f->xmm[n][0] : 0;
}

unsigned long ftrace_regs_get_stack_pointer(struct ftrace_regs *f)
{
	return f->sp;
}

unsigned long ftrace_regs_get_instruction_pointer(struct ftrace_regs *f)
{
	return f->ip;
}

unsigned long ftrace_regs_get_return_value(struct ftrace_regs *f)
{
	return f->ax;
}

void ftrace_regs_set_return_value(struct ftrace_regs *f, unsigned long ret)
{
	f->ax = ret;
}

/* Only at an entry site: the stack there is as the function got it, so
 * the ops caller's ret enters ip as the function would have been. */
int ftrace_regs_set_instruction_pointer(struct ftrace_regs *f, unsigned long ip)
{
	if (f->kind != FREGS_ENTRY)
		return -1;
	f->ip = ip;
	return 0;
}

/* ftrace_stub is a lone ret: entered with the function's stack, it
 * returns to the caller. */
int ftrace_override_function_with_return(struct ftrace_regs *f)
{
	return ftrace_regs_set_instruction_pointer(f, (unsigned long)(uintptr_t)ftrace_stub);
}

/* The function's return slot is where its stack pointer was at entry. */
void ftrt_arch_ops_tracer(uintptr_t ip, struct ftrace_regs *f)
{
	ftrt_entry(ip, (uintptr_t *)f->sp);
}

void return_to_handler(void);

/* Graph users (fgraph.h): the return address is on the stack at sp, at
 * every site kind; the function returns with the stack pointer above
 * it. */
int ftrt_arch_fgraph_hook(struct ftrace_regs *f, uintptr_t ip, struct fgraph_hook *h)
{
	(void)ip;
	h->slot = (uintptr_t *)f->sp;
	h->sp = f->sp + 8;
	h->ret = *h->slot;
	h->val = (uintptr_t)return_to_handler;
	return 0;
}

/* return_to_handler and ftrace_graph_leave (graph.S) keep rax and rdx
 * 32 and 24 bytes below the stack pointer the function returned with. */
void ftrt_arch_fgraph_exit_regs(struct ftrace_regs *f, uintptr_t sp, uintptr_t ret, const unsigned char *fp)
{
	const uint64_t *save = (const uint64_t *)sp - 4;
	__builtin_memset(f, 0, sizeof *f);
	f->ax = save[0];
	f->dx = save[1];
	f->sp = sp;
	f->ip = ret;
	f->kind = FREGS_MCOUNT; /* nothing to redirect at a return */
	__builtin_memcpy(f->xmm, fp + 160, 2 * 16); /* fxsave's xmm0, xmm1 */
}

/* Arguments and return values (capture.c). Every site kind's sp holds
 * the return address, the stack arguments above it. */
uintptr_t ftrt_arch_stack_args(const struct ftrace_regs *f, uintptr_t ip)
{
	(void)ip;
	return f->sp + 8;
}

/* Every site kind sees the arguments in their registers (an mcount
 * call after the prologue too: gcc assumes mcount preserves them). */
int ftrt_arch_int_arg_known(const struct ftrace_regs *f, unsigned n)
{
	(void)f;
	(void)n;
	return 1;
}

void ftrt_arch_vec(const struct ftrace_regs *f, unsigned n, uint64_t out[2])
{
	out[0] = n < 8 ? f->xmm[n][0] : 0;
	out[1] = n < 8 ? f->xmm[n][1] : 0;
}

uint64_t ftrt_arch_ret_int(const struct ftrace_regs *f, unsigned i)
{
	return i ? f->dx : f->ax;
}

/* st0 is fxsave's first register slot (bytes 32-41, the x87 stack's top
 * whatever TOP is): a long double result, as the function left it. */
int ftrt_arch_ret_x87(const unsigned char *fp, uint64_t out[2])
{
	out[1] = 0;
	__builtin_memcpy(out, fp + 32, 10);
	return 0;
}

/*
 * What of the vector state the prologue sites' code keeps (ops.S's
 * VEC_SAVE, arch/x86_64/vecsave.h): VEC_SSE, VEC_AVX, VEC_AVX512 or
 * VEC_AVX512_F, by what the CPU has (CPUID) and the system enables
 * (XCR0: AVX's ymm state, bits 1-2; AVX-512's opmask and zmm state,
 * bits 5-7, besides). Set once, by ftrt_arch_vec_init, before any site
 * is enabled; read by ops.S at each call.
 */
uint32_t ftrt_vec_kind HIDDEN;

#define XCR0_AVX 0x6u
#define XCR0_AVX512 0xe6u

void ftrt_arch_vec_init(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
		return;
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	if ((lo & XCR0_AVX) != XCR0_AVX)
		return;
	ftrt_vec_kind = VEC_AVX;
	if ((lo & XCR0_AVX512) != XCR0_AVX512 || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX512F))
		return;
	ftrt_vec_kind = b & bit_AVX512BW ? VEC_AVX512 : VEC_AVX512_F;
}

_Static_assert(FTRT_ARCH_FP_SAVE == 512 + VS_SIZE && VS_SIZE % 64 == 0, "fgraph.h's FTRT_ARCH_FP_SAVE: fxsave's and vecsave.h's");

void ftrt_vec_save(unsigned char *area) HIDDEN;
void ftrt_vec_restore(const unsigned char *area) HIDDEN;

/* x87 (a long double result in st0) and the SSE registers (fxsave);
 * after a site made from a prologue the rest a callback may change
 * (vecsave.h), into the area after fxsave's 512 bytes. */
void ftrt_arch_fp_save(unsigned char *buf, int full)
{
	__asm__ volatile("fxsave64 %0" : "=m"(*(unsigned char(*)[512])buf));
	if (full)
		ftrt_vec_save(buf + 512);
}

void ftrt_arch_fp_restore(const unsigned char *buf, int full)
{
	__asm__ volatile("fxrstor64 %0" : : "m"(*(const unsigned char(*)[512])buf));
	if (full)
		ftrt_vec_restore(buf + 512);
}

int ftrt_arch_fregs_prologue(const struct ftrace_regs *f)
{
	return f->prologue != 0;
}
