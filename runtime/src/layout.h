/*
 * Where the graph tracer's per-thread state lies, for the assembly fast
 * paths (x86_64/entry.S), which cannot see C's structs. trace.c checks
 * every value here against the structs with _Static_assert, so the two
 * cannot drift apart.
 */
#ifndef FTRT_LAYOUT_H
#define FTRT_LAYOUT_H

/* struct tbuf */
#define TB_N 0x14         /* uint32_t n: words in words[]; raised after the words are written */
#define TB_BUSY 0x18      /* uintptr_t busy: the tracer runs on this thread (its stack pointer) */
#define TB_SUSPENDED 0x20 /* int suspended: an exception is being unwound */
#define TB_BASE 0x28      /* uint64_t base: words flushed before words[0] */
#define TB_OWN 0x58       /* struct shadow_stack own: the thread's own stack's graphed calls */
#define TB_DEPTH (TB_OWN + 0)   /* uint32_t own.depth: entries in own.e[] */
#define TB_STOPPED (TB_OWN + 4) /* int own.stopped: own.e[] overflowed */
#define TB_SHADOW (TB_OWN + 8)  /* struct shadow own.e[SHADOW_MAX] */
#define TB_WORDS (TB_SHADOW + SH_SIZE * SHADOW_MAX) /* uint64_t words[TBUF_WORDS] */

/* struct shadow */
#define SH_RET 0
#define SH_IP 8
#define SH_SP 16
#define SH_HOOK 24
#define SH_POS 32
#define SH_SIZE 40

#define SHADOW_MAX 1024         /* calls graphed at once per stack; deeper, that stack stops graphing */
#define TBUF_WORDS (192 * 1024) /* 1.5 MiB of records per thread */

/* Record kinds, in a record's first word's top two bits. */
#define REC_CALL 0
#define REC_ENTRY 1
#define REC_EXIT 2
#define REC_UNWOUND 3

#endif
