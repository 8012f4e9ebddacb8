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
#include "x86_64/cpu.h"
#include "x86_64/dwarf.h"
#include "x86_64/quick.h"
#include "x86_64/sys.h"
/* function_graph: the return address is a word on the stack at a call's
 * entry (its slot: take.h, unwind.c, frames.c). */
#define FTRT_ARCH_GRAPH 1
#elif defined(__aarch64__)
#include "arm64/cpu.h"
#include "arm64/dwarf.h"
#include "arm64/quick.h"
#include "arm64/sys.h"
/* function_graph is not yet: at a patchable entry the return address is
 * in x30, and where the function saves it is its own prologue's choice,
 * so the graph tracer's slots (take.h's check that a call is still live,
 * the exception and backtrace walks that put return addresses back) have
 * no word to read or write. FTRACE=function_graph traces with function,
 * and says so (options.c). */
#define FTRT_ARCH_GRAPH 0
#else
#error "ftrt: no runtime port to this architecture"
#endif

#endif
