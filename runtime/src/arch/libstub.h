/*
 * Library-call stubs: what a redirected GOT slot points at (the patch
 * layer's libcall.c redirects a module's slots; the tracers' common
 * entry, ftrace_libcall in tracers/<isa>/libcall.S, records the call).
 *
 * A stub page holds stubs of one size, FTRT_LIBSTUB_SIZE bytes (or, on
 * x86-64 under function_graph, FTRT_LIBGRAPH_SIZE: below), and in its
 * last FTRT_LIBSTUB_WORDS words the addresses its stubs go through: the
 * common entry's in the last. Each stub puts its slot's index into a
 * scratch register the calling convention lets a call's path clobber
 * (x86-64 r11, arm64 x17: what a PLT stub or a veneer may clobber too)
 * and jumps to the entry through that word, so a page may lie anywhere.
 * A page is written while it is only writable, then made readable and
 * executable before any slot points at it: never writable and
 * executable at once.
 */
#ifndef FTRT_ARCH_LIBSTUB_H
#define FTRT_ARCH_LIBSTUB_H

#include <stddef.h>
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
/*
 * The page's words, last first: the common entry (ftrace_libcall),
 * function_graph's leave (ftrace_graph_leave), a graph stub's enter
 * (ftrace_libgraph_enter, tracers/x86_64/graph.S).
 */
#define FTRT_LIBSTUB_WORDS 3
#define FTRT_LIBPAGE_ENTRY (FTRT_LIBSTUB_PAGE - 8)
#define FTRT_LIBPAGE_LEAVE (FTRT_LIBSTUB_PAGE - 16)
#define FTRT_LIBPAGE_ENTER (FTRT_LIBSTUB_PAGE - 24)
/*
 * A graph stub: what a slot points at under function_graph when its
 * calls need nothing but the graph's push and pop (patch/libcall.c
 * decides, per slot). It is a per-site graph trampoline (the layout
 * tracers/x86_64/graph.S draws, abi.h's TRAMP_* offsets, LG_LEA at
 * TRAMP_LEA) with a landing pad before it, the slot's entry in the
 * table in place of the site, the function in place of the body, and
 * the stub's way into the common entry in place of the jump into the
 * body, so that a call the fast path leaves goes on as through an
 * ordinary stub:
 *
 *   +0   f3 0f 1e fa          endbr64
 *   +4   4c 8b 1d <rel32>     mov slot(%rip), %r11    the word at +64:
 *                                                     &ftrt_libslots[..][..]
 *   +11  ff 15 <rel32>        call *enter(%rip)       ftrace_libgraph_enter;
 *                                                     ZF=1: not graphed
 *   +17  74 0f                je +34
 *   +19  48 83 c4 08          add $8, %rsp            drop the caller's
 *                                                     return address...
 *   +23  e8 <rel32>           call +46                ...and call the
 *                                                     function in its place:
 *                                                     it returns to +28
 *   +28  ff 25 <rel32>        jmp *leave(%rip)        ftrace_graph_leave
 *   +34  41 bb <idx32>        mov $idx, %r11d         not graphed: as an
 *   +40  ff 25 <rel32>        jmp *entry(%rip)        ordinary stub
 *   +46  ff 25 <rel32>        jmp *function(%rip)     the word at +72
 *   +52  cc x 12              int3, never run
 *   +64  the slot's entry in the table (struct ftrt_libslot *)
 *   +72  the function
 *
 * The words are read, never written, once the page is executable.
 */
#define FTRT_LIBGRAPH_SIZE 80
#define LG_ENDBR 0
#define LG_LEA 4 /* TRAMP_LEA's place: the mov of the slot */
#define LG_SKIP 34
#define LG_ISLAND 46
#define LG_PAD 52
#define LG_SLOT 64
#define LG_FUNC 72
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
/* The page's one word: the common entry (ftrace_libcall). arm64's
 * sites have no graph fast path of their own either (a graphed call's
 * return is hijacked there too): its library calls take the C entry. */
#define FTRT_LIBSTUB_WORDS 1
#define FTRT_LIBPAGE_ENTRY (FTRT_LIBSTUB_PAGE - 8)
#endif
/* Stubs of size bytes a page holds, its last words kept for the
 * addresses they go through. */
#define FTRT_LIBSTUBS_OF(size) ((FTRT_LIBSTUB_PAGE - 8 * FTRT_LIBSTUB_WORDS) / (size))

/* Write, at at (in a page of stubs being filled, at a multiple of size
 * from its start), the stub that enters the common entry with idx, and
 * after it to size bytes (at least FTRT_LIBSTUB_SIZE) padding that
 * traps, never run. arch/<isa>/libstub.c. */
void ftrt_arch_libstub(unsigned char *at, size_t size, uint32_t idx) __attribute__((visibility("hidden")));

/* Fill the words at the end of page (a page of stubs being filled):
 * entry, the common entry's address, and what the ISA's graph stubs go
 * through. */
void ftrt_arch_libpage(unsigned char *page, uintptr_t entry) __attribute__((visibility("hidden")));

/* Write, at at (at a multiple of FTRT_LIBGRAPH_SIZE from its page's
 * start), slot idx's graph stub: slot is its entry in the table,
 * function where its calls go. 0, or -1 where the ISA has no graph
 * stubs (arm64) or the tracers gave no graph entry: the slot gets an
 * ordinary stub. */
int ftrt_arch_libgraph(unsigned char *at, uint32_t idx, uintptr_t slot, uintptr_t function) __attribute__((visibility("hidden")));

#endif
