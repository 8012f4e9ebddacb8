/*
 * arm64's DWARF register numbers (the AArch64 DWARF ABI), for the unwind
 * info the runtime writes for its graph hooks (frames.c, through arch.h).
 */
#ifndef FTRT_ARM64_DWARF_H
#define FTRT_ARM64_DWARF_H

#define FTRT_DWARF_SP 31 /* sp: the hook frame's CFA is the stack pointer */
#define FTRT_DWARF_RA 30 /* the return address column (x30, the link register) */
/* A return address read through unwind info may still carry its
 * signature (pointer authentication: the unwinder strips it only from
 * the address it goes on with, not from the register an expression
 * reads), so the hook's address is not read from x30: it is
 * return_to_handler, the one hook there is here. */
#define FTRT_DWARF_RA_SIGNED 1

#endif
