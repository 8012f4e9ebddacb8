/*
 * x86-64's vector state kept around a program's callbacks at a site made
 * from a prologue (ftpatch instrument, record -P): the function was
 * compiled without tracing flags, so its callers may keep values in any
 * call-clobbered register across the call (gcc's -fipa-ra, when it sees
 * the function leave them alone), and a callback, compiled normally, may
 * change any of them: xmm0-15, the upper halves of ymm0-15 (AVX), of
 * zmm0-15, zmm16-31 and k0-7 (AVX-512; glibc's evex memcpy and strlen
 * use ymm16-31). The x87 registers are not among them (a call is made
 * with the x87 stack empty, and its control word is callee-saved), nor
 * is what no callback changes as a side effect (MPX, PKRU, AMX's tiles).
 *
 * What the CPU has is read once at start (fregs.c's ftrt_arch_vec_init,
 * by CPUID and XCR0) into ftrt_vec_kind, which the code tests at each
 * call (one predicted branch), and the registers are moved one by one
 * (on the AMD EPYC measured, xsave and xrstor of the AVX-512 state cost
 * an ops call some 180 ns; these moves some 35):
 *
 *   VEC_SSE     no AVX: xmm0-15 (movaps; the ops caller's xmm0-7 are
 *               the ftrace_regs')
 *   VEC_AVX     ymm0-15 (vmovdqa), then vzeroupper, so that a
 *               callback's SSE code pays no transition
 *   VEC_AVX512  zmm0-31 (vmovdqa64), k0-7 (kmovq with AVX512BW, else
 *               kmovw: without BW nothing writes their upper bits), then
 *               vzeroupper
 *
 * The area: 64-byte aligned, VS_SIZE bytes; register n's slot at n * 64
 * (its low 16 or 32 bytes alone for xmm, ymm), k0-7 at VS_K, 8 bytes
 * each, mxcsr at VS_MXCSR (a callback's arithmetic may set its status
 * flags, which fetestexcept reads). The code is tracers/x86_64/ops.S's
 * (VEC_SAVE, VEC_RESTORE).
 */
#ifndef FTRT_X86_64_VECSAVE_H
#define FTRT_X86_64_VECSAVE_H

#define VEC_SSE 0
#define VEC_AVX 1
#define VEC_AVX512 2    /* with AVX512BW: kmovq */
#define VEC_AVX512_F 3  /* AVX512F without BW: kmovw */

#define VS_K 2048       /* k0-7 */
#define VS_MXCSR 2112   /* mxcsr (the ops caller's: its status flags) */
#define VS_SIZE 2176    /* a multiple of 64 */

#endif
