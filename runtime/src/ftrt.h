/*
 * ftrt: the ftpatch runtime, linked into a traced program.
 *
 * This slice holds the entry hooks and the load-time pass over the site
 * table: before main runs, every site listed between __start___mcount_loc
 * and __stop___mcount_loc is checked and turned into a NOP, so a program
 * nobody asked to trace runs with nothing but NOPs at its function
 * entries. Tracers come next.
 *
 * Built without instrumentation and with -mgeneral-regs-only, so nothing
 * here calls a hook or clobbers the FP/SIMD registers that carry
 * arguments and return values.
 */
#ifndef FTRT_H
#define FTRT_H

#include <stddef.h>
#include <stdint.h>

/* What the load-time pass did to the table; read by tests and, later,
 * written into the trace's metadata. */
struct ftrt_stats {
	uint64_t entries;  /* words in the table, zero words included */
	uint64_t zero;     /* zero words: padding, or sites in discarded sections */
	uint64_t dups;     /* addresses listed twice */
	uint64_t patched;  /* calls turned into NOPs */
	uint64_t nops;     /* sites already a single NOP (recordmcount --nop, -mnop-mcount, clang's padding) */
	uint64_t skipped;  /* sites whose bytes were not what a site may hold: left alone */
	uint64_t failed;   /* sites that could not be written */
	uint64_t enabled;  /* sites made to call the tracer */
	uint64_t unsupported; /* sites the filter chose that the tracer cannot serve */
	uint64_t init_ns;  /* time the load-time pass took */
	uint64_t pages;    /* code pages made writable (and written): 0 for a pre-patched file */
	uint64_t config;   /* what the pass made of .ftrt_config: an FTRT_CFG_STATE_* */
};

extern struct ftrt_stats ftrt_stats;

/*
 * The config record (config.c), in its own section ".ftrt_config", which
 * `ftpatch enable` and `ftpatch disable` rewrite in the linked file (Go:
 * package patch, which must agree with this layout byte for byte). Fixed
 * size, little-endian, no padding: 56 bytes.
 */
struct ftrt_config {
	char magic[8];      /* FTRT_CFG_MAGIC: "ftrtcfg1", no NUL */
	uint32_t size;      /* sizeof(struct ftrt_config): a reader refuses another size */
	uint32_t tracer;    /* 0: nothing baked in; else FTRT_FUNCTION, FTRT_GRAPH or FTRT_NOP */
	uint32_t flags;     /* FTRT_CFG_PATCHED */
	uint32_t reserved;  /* 0 */
	uint64_t sites;     /* table entries ftpatch wrote (non-zero, distinct): the pass's own count must agree */
	uint64_t enabled;   /* of which calls into the runtime */
	uint64_t list_hash; /* hash of the normalised function list (ftpatch's; the runtime ignores it) */
	uint64_t text_hash; /* hash of the executable segments with sites masked (for ftpatch verify) */
};

#define FTRT_CFG_MAGIC { 'f', 't', 'r', 't', 'c', 'f', 'g', '1' }
/* ftpatch wrote every site: each is a NOP or a call to the trampoline its
 * kind calls, so the load-time pass only checks, and writes nothing. */
#define FTRT_CFG_PATCHED 1u

extern const struct ftrt_config ftrt_config __attribute__((visibility("hidden")));

/* What the load-time pass made of the record (ftrt_stats.config), and its
 * name for the trace's metadata (`config <name>`). */
enum {
	FTRT_CFG_STATE_NONE,       /* not patched: the environment decides */
	FTRT_CFG_STATE_PATCHED,    /* pre-patched: sites checked, nothing written, the recorded tracer started */
	FTRT_CFG_STATE_OVERRIDDEN, /* pre-patched, but FTRACE or FTRACE_FILTER was set: the normal pass ran */
	FTRT_CFG_STATE_MISMATCH,   /* the record disagrees with the table: ignored, the normal pass ran */
};
const char *ftrt_config_state(void);

/* The entry hooks the compiler calls (entry.S): return at once until a
 * site is enabled. */
void __fentry__(void);
void mcount(void);

/* The load-time pass (patch.c), run as a constructor. */
void ftrt_init(void);

/* Per architecture (x86_64/site.c): read the site at ip and say what it
 * holds (reading 8 bytes from ip, which walk() makes sure are there);
 * write a NOP over it. */
enum ftrt_site_state {
	FTRT_SITE_CALL,    /* the compiler's call to a hook */
	FTRT_SITE_NOP,     /* one NOP covering the site */
	FTRT_SITE_NOPS,    /* several NOPs covering the site (-fpatchable-function-entry) */
	FTRT_SITE_UNKNOWN, /* anything else: never written */
};

enum ftrt_site_state ftrt_arch_classify(const unsigned char *ip, int *len);
const unsigned char *ftrt_arch_nop(int len);
/* Probe which NOPs this CPU runs (or take FTRACE_NOP's choice); returns
 * the style's name: p6, k8 or jmp. */
const char *ftrt_arch_probe(const char *force);
/* The call that enables the site at ip of len bytes (into buf, 8 bytes), at a
 * function's entry or after its prologue (-pg); 0, or -1 when the
 * trampoline is out of reach. */
int ftrt_arch_call(uintptr_t ip, int len, int entry, unsigned char *buf);
/* At the end of the load-time pass: make what ftrt_arch_call built
 * (per-site trampolines) read-only and executable. */
void ftrt_arch_seal(void);
/* Whether a site at ip is at the entry of the function starting at start. */
int ftrt_arch_at_entry(uintptr_t ip, uintptr_t start);

/* The program's functions (symbols.c). ftrt_func_at answers the function
 * holding addr, or NULL; fastest when asked in address order. Its answer
 * is good until the next call (or the next ftrt_load_symbols). */
struct ftrt_func {
	uintptr_t start, end; /* run-time addresses */
	const char *name;
};
int ftrt_load_symbols(void);
const struct ftrt_func *ftrt_func_at(uintptr_t addr);

/* The tracers (trace.c). */
enum { FTRT_FUNCTION = 1, FTRT_GRAPH = 2, FTRT_NOP = 3 /* sites call ftrace_stub: records nothing */ };
extern int ftrt_mode;
extern unsigned ftrt_max_depth __attribute__((visibility("hidden")));
extern uint64_t ftrt_thresh_tsc __attribute__((visibility("hidden")));
uint64_t ftrt_ns_to_tsc(uint64_t ns);
int ftrt_trace_start(const char *dir);
void ftrt_entry(uintptr_t ip, uintptr_t *parent_slot);
int ftrt_graph_enter(uintptr_t ip, uintptr_t *slot, uintptr_t hook);
uintptr_t ftrt_graph_exit(uintptr_t sp);
/* Exceptions (unwind.c): give the unwinder the real return addresses;
 * after the catch, record what was unwound and hijack the survivors again. */
void ftrt_graph_suspend(void);
void ftrt_graph_resume(uintptr_t sp);

#endif
