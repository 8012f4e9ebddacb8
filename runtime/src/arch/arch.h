/*
 * The architecture's part of the runtime (tracer.h, sys.h): one folder per
 * architecture, whose cpu.h gives rdtsc (the cycle counter) and
 * cpu_relax (a spin-wait's step), whose cpu.c says whether the counter
 * can be the clock (ftrt_tsc_trusted), whose dwarf.h numbers the
 * registers the graph hooks' unwind info names (frames.c: FTRT_DWARF_SP,
 * FTRT_DWARF_RA), whose sys.h makes the raw
 * system calls (sys.h's sys and sys_exit_group), and whose quick.h
 * recognises and writes the load-time pass's common site inline
 * (sites.c's loop: ftrt_quick_load, _hook, _target, _nop, _call_insn,
 * _put, FTRT_QUICK_LEN).
 */
#ifndef FTRT_ARCH_H
#define FTRT_ARCH_H

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
 * alike (arm64/mcount.c). So the graph tracer
 * tells a live call from a left one by stack pointers alone (take.h's
 * left), never writes into a graphed function's frame, and lets the
 * unwinder through the hooks with the unwind info frames.c gives them
 * (walk.c, backtrace.c). */
#define FTRT_ARCH_SLOTS 0
/* Bytes before a site that enabling it may write: its pre-function
 * literal, 8 or 12 bytes before it (arm64/literal.c). */
#define FTRT_ARCH_LEAD 16
/* The entry trampolines save a struct ftrace_regs (arm64/regs.h) and
 * call ftrt_entry_regs, or the handler of the ops record a literal
 * points at, with it. */
#define FTRT_ARCH_FREGS 1
#else
#error "ftrt: no runtime port to this architecture"
#endif

#endif
