/*
 * Library-call stubs: what a redirected GOT slot points at (the patch
 * layer's libcall.c redirects a module's slots; the tracers' common
 * entry, ftrace_libcall in tracers/<isa>/libcall.S, records the call).
 *
 * A stub page holds FTRT_LIBSTUBS stubs of FTRT_LIBSTUB_SIZE bytes, and
 * in its last 8 bytes the address of the common entry. Each stub puts
 * its slot's index into a scratch register the calling convention lets
 * a call's path clobber (x86-64 r11, arm64 x17: what a PLT stub or a
 * veneer may clobber too) and jumps to the entry through that word, so
 * a page may lie anywhere. A page is written while it is only writable,
 * then made only executable before any slot points at it: never both.
 */
#ifndef FTRT_ARCH_LIBSTUB_H
#define FTRT_ARCH_LIBSTUB_H

#include <stdint.h>

#define FTRT_LIBSTUB_PAGE 4096
#if defined(__x86_64__)
/*
 *   f3 0f 1e fa           endbr64           (a landing pad: the GOT slot
 *                                           is called indirectly)
 *   41 bb <idx32>         mov $idx, %r11d
 *   ff 25 <rel32>         jmp *entry(%rip)  (the page's last word)
 */
#define FTRT_LIBSTUB_SIZE 16
#define FTRT_R_JUMP_SLOT 7 /* R_X86_64_JUMP_SLOT */
#define FTRT_R_GLOB_DAT 6  /* R_X86_64_GLOB_DAT */
#elif defined(__aarch64__)
/*
 *   d503245f              bti c             (a landing pad for br/blr)
 *   52800011 | imm16<<5   movz w17, #idx[15:0]
 *   72a00011 | imm16<<5   movk w17, #idx[31:16], lsl #16
 *   58000010 | imm19<<5   ldr x16, entry    (the page's last word)
 *   d61f0200              br x16
 *   (3 words of padding: udf)
 */
#define FTRT_LIBSTUB_SIZE 32
#define FTRT_R_JUMP_SLOT 1026 /* R_AARCH64_JUMP_SLOT */
#define FTRT_R_GLOB_DAT 1025  /* R_AARCH64_GLOB_DAT */
#endif
/* Stubs a page holds, its last word kept for the entry's address. */
#define FTRT_LIBSTUBS ((FTRT_LIBSTUB_PAGE - 8) / FTRT_LIBSTUB_SIZE)

/* Write, at at (in a page of stubs being filled, at a multiple of
 * FTRT_LIBSTUB_SIZE from its start), the stub that enters the common
 * entry with idx. arch/<isa>/libstub.c. */
void ftrt_arch_libstub(unsigned char *at, uint32_t idx) __attribute__((visibility("hidden")));

#endif
