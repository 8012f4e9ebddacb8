/*
 * The arch layer's interface. arch/ holds everything that differs by
 * instruction set, a folder per ISA (arch/x86_64/, arch/arm64/), and
 * the headers the rest of the runtime reaches it through: this one,
 * which includes the ISA's headers and says what the layers above may
 * assume of it (FTRT_ARCH_*), site.h (a site's bytes), poke.h (writing
 * code while threads run), sys.h, fds.h, and the assembly's offsets
 * (layout.h, opslayout.h: the kernel's asm-offsets, macros only, so
 * the assembly can include them too).
 *
 * It owns: a site's bytes, read and written (site.h, what the layers
 * above tell the ISA's site code and what it gives them; site.c, insn.h,
 * tramp.c, opstramp.c, and on arm64 literal.c and veneer.c), and quick.h,
 * which recognises and writes the load-time pass's common site inline
 * (patch/sites.c's loop: ftrt_quick_load, _hook, _target, _nop,
 * _call_insn, _put, FTRT_QUICK_LEN); writing code while threads run it
 * (poke.h: each ISA's protocol, poke.c, over text.c's writes through
 * /proc/self/mem and its membarrier; the direct trampolines ops were
 * given, arch/site.c); a call's registers (regs.h, args.h, and on arm64
 * frame.h); the cycle counter and a spin-wait's step (cpu.h: rdtsc,
 * cpu_relax) and whether the counter can be the clock (cpu.c:
 * ftrt_tsc_trusted); the registers the graph hooks' unwind info names
 * (dwarf.h: FTRT_DWARF_SP, FTRT_DWARF_RA, for tracers/frames.c); raw
 * system calls (the ISA's sys.h: sys, sys_exit_group; sys.h here over
 * them), and the runtime's descriptors over them, kept above the
 * program's and checked before each use (fds.c: text.c's and every
 * writer's above it, and ftrt_put, every writer's write).
 *
 * The entry assembly (the hooks and trampolines a site calls,
 * return_to_handler, the ops callers, makecontext's wrapper) is the
 * tracers' (tracers/x86_64/, tracers/arm64/): it calls them. What code
 * written here must reach of it, the tracers hand down at start
 * (site.h's ftrt_arch_entries; a module's targets, core/ftrt.h).
 *
 * It may call nothing above it: abi.h's definitions and its own files.
 * The data the layers above set for it (the module whose sites are
 * written, the tracer, the pass's counts, whether SIGTRAP is the
 * runtime's) is defined here (site.c), so nothing here names a layer
 * above.
 */
#ifndef FTRT_ARCH_H
#define FTRT_ARCH_H

#include <stdint.h>

#if defined(__x86_64__)
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/dwarf.h"
#include "arch/x86_64/quick.h"
#include "arch/x86_64/regs.h"
#include "arch/x86_64/sys.h"
/* A call's return address is a word on the stack at its entry, just
 * below its stack pointer at return (its slot): the graph tracer may
 * read it to tell a live call from one left (take.h's left), and put the
 * real return address back into it for the unwinder (walk.c). */
#define FTRT_ARCH_SLOTS 1
/* Bytes before a site that enabling it may write: none. */
#define FTRT_ARCH_LEAD 0
/* The entry trampolines hand the C side the parent ip's slot
 * (ftrt_entry), not a struct ftrace_regs. */
#define FTRT_ARCH_FREGS 0
#elif defined(__aarch64__)
#include "arch/arm64/cpu.h"
#include "arch/arm64/dwarf.h"
#include "arch/arm64/quick.h"
#include "arch/arm64/regs.h"
#include "arch/arm64/sys.h"
/* No slots: at the entry the return address is in x30, and where the
 * function saves it is its own prologue's choice. function_graph hands
 * the function return_to_handler in x30 in place of its return address
 * (ftrace_caller), before the function saves it (and signs it, with
 * pointer authentication); a -pg site comes after the prologue has saved
 * (and perhaps signed) it, and the frame record gets the hook, signed
 * alike (arch/arm64/mcount.c). So the graph tracer
 * tells a live call from a left one by stack pointers alone (take.h's
 * left), never writes into a graphed function's frame, and lets the
 * unwinder through the hooks with the unwind info frames.c gives them
 * (walk.c, backtrace.c). */
#define FTRT_ARCH_SLOTS 0
/* Bytes before a site that enabling it may write: its pre-function
 * literal, 8 or 12 bytes before it (arch/arm64/literal.c). */
#define FTRT_ARCH_LEAD 16
/* The entry trampolines save a struct ftrace_regs (arch/arm64/regs.h) and
 * call ftrt_entry_regs, or the handler of the ops record a literal
 * points at, with it. */
#define FTRT_ARCH_FREGS 1
#else
#error "ftrt: no runtime port to this architecture"
#endif

/* Whether the cycle counter can be the trace's clock (cpu.c), and its
 * rate in Hz where the architecture gives it (arm64's cntfrq_el0), else
 * 0: the reader then takes the rate from the clock pairs of the trace's
 * start and end. */
int ftrt_tsc_trusted(void) __attribute__((visibility("hidden")));
uint64_t ftrt_tsc_hz(void) __attribute__((visibility("hidden")));

#endif
