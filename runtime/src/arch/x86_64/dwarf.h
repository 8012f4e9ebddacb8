/*
 * x86-64's DWARF register numbers (the psABI's DWARF register mapping),
 * for the unwind info the runtime writes for its graph hooks (frames.c,
 * through arch.h).
 */
#ifndef FTRT_X86_64_DWARF_H
#define FTRT_X86_64_DWARF_H

#define FTRT_DWARF_SP 7  /* rsp: the hook frame's CFA is the stack pointer */
#define FTRT_DWARF_RA 16 /* the return address column (rip): read as the hook's address */
/* The hook's address is the return address column's value as it is:
 * return addresses are never signed here, and each hook (a per-site
 * trampoline's, or return_to_handler) is its own. */
#define FTRT_DWARF_RA_SIGNED 0

#endif
