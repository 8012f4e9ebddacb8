/*
 * Where the graph tracer's per-thread state lies, for the assembly fast
 * paths (arch/x86_64/entry.S), which cannot see C's structs. trace.c checks
 * every value here against the structs with _Static_assert, so the two
 * cannot drift apart.
 */
#ifndef FTRT_LAYOUT_H
#define FTRT_LAYOUT_H

/* struct tbuf */
#define TB_CALLS 0x00     /* uint64_t calls: CALL records written (the stream's summary) */
#define TB_ENTRIES 0x08   /* uint64_t entries: ENTRY records written */
#define TB_EXITS 0x10     /* uint64_t exits: EXIT records written */
#define TB_N 0x18         /* uint32_t n: words in words[]; raised after the words are written */
#define TB_SUSPENDED 0x1c /* int suspended: an exception is being unwound */
#define TB_BUSY 0x20      /* uintptr_t busy: the tracer runs on this thread (its stack pointer) */
#define TB_BASE 0x28      /* uint64_t base: words flushed before words[0] */
#define TB_LAST 0x30      /* uint64_t last: the time of the last record written (the stream's clock) */
#define TB_OWN 0x38       /* struct shadow_stack own: the thread's own stack's graphed calls */
#define TB_DEPTH (TB_OWN + 0)    /* uint32_t own.depth: entries in own.e[] */
#define TB_STOPPED (TB_OWN + 4)  /* int own.stopped: own.e[] overflowed */
#define TB_CHOSEN (TB_OWN + 8)   /* uint32_t own.chosen: entries of chosen calls (FTRACE_GRAPH_FUNCS) */
#define TB_NOTRACE (TB_OWN + 12) /* uint32_t own.notrace: entries of notrace calls (FTRACE_GRAPH_NOTRACE) */
#define TB_SHADOW (TB_OWN + 16)  /* struct shadow own.e[SHADOW_MAX] */
#define TB_WORDS (TB_SHADOW + SH_SIZE * SHADOW_MAX) /* uint64_t words[TBUF_WORDS] */

/* struct shadow */
#define SH_RET 0
#define SH_IP 8
#define SH_SP 16
#define SH_HOOK 24
#define SH_POS 32
#define SH_MARK 40
#define SH_SIZE 48

/* struct ftrt_libslot (patch/libcall.h, which checks these): a
 * redirected GOT slot, as x86-64's graph stubs' ftrace_libgraph_enter
 * reads it. */
#define LS_IP 0     /* uintptr_t ip: the slot's address | its flags (LIBSLOT_*: 0 for the fast path) */
#define LS_FLAGS 7  /* the flags' bits of ip */
#define LS_TARGET 8 /* uintptr_t target: the function */
#define LS_SIZE 16

/* A shadow entry's mark: what the subtree filters made of its call
 * (subtree.c). 0: an ordinary call. */
#define MARK_CHOSEN 1  /* a call of a function FTRACE_GRAPH_FUNCS chooses: recorded, and so is all it calls */
#define MARK_NOTRACE 2 /* a call of a function FTRACE_GRAPH_NOTRACE names: neither it nor what it calls is recorded */

/* ftrt_subtree: which subtree filters the graph tracer applies (0: none). */
#define SUBTREE_ON 1    /* either variable is set: a call's site may be marked */
#define SUBTREE_FUNCS 2 /* FTRACE_GRAPH_FUNCS is set: nothing outside a chosen call is recorded */
#define SUBTREE_BITS 32768 /* bits in ftrt_subtree_maybe[], the sites that may be marked, by (site >> 4) */

#define SHADOW_MAX 1024         /* calls graphed at once per stack; deeper, that stack stops graphing */
#define TBUF_WORDS (192 * 1024) /* 1.5 MiB of records per thread */

/* The records the fast paths write: abi.h. */

#endif
