/*
 * What the layers above tell the ISA's site code, and what it gives
 * them: the hooks and trampolines a module's sites may call (its
 * targets, abi.h's list), what a site holds and the bytes that make it a
 * NOP or a call (site.c, tramp.c, quick.h of each ISA), the ops record a
 * trampoline or an arm64 literal points at, the tracer the sites are
 * written for, and the running pass's counts. The variables are set by
 * the load-time pass and the live part (patch/) and defined here
 * (arch/site.c), so nothing of arch/ names a layer above it.
 */
#ifndef FTRT_ARCH_SITE_H
#define FTRT_ARCH_SITE_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

/* The first index of the sorted a[0, n) whose value is key or more (n:
 * none): the runtime's searches of sorted addresses. */
static inline size_t ftrt_lower_bound(const uintptr_t *a, size_t n, uintptr_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* What the load-time pass did to a module's table: kept in its record
 * (struct ftrt_mod), written into the trace's metadata. */
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
	uint64_t literal;  /* enabled sites served through their pre-function literal (arm64: ftrace_ops_caller) */
	uint64_t misaligned; /* sites with a pre-function slot that is not 8-byte aligned: the shared path */
	uint64_t init_ns;  /* time the load-time pass took */
	uint64_t pages;    /* code pages made writable (and written): 0 for a pre-patched file */
	uint64_t config;   /* what the pass made of .ftrt_config: an FTRT_CFG_STATE_* */
};
/* The running pass's counts (the ISA's site code adds to them; sites.c,
 * patch.c): the pass's own, copied to its module's record when it is
 * done (ftrt_pass). NULL between passes. */
extern struct ftrt_stats *ftrt_pass_stats __attribute__((visibility("hidden")));

/* Whether SIGTRAP is kept out of every mask the program sets from now
 * on: live patching may happen in this process (set by process/trap.c;
 * arm64's site.c leaves a patchable area ready for it). */
extern int ftrt_trap_armed __attribute__((visibility("hidden")));

/* The process-wide tracer (FTRT_FUNCTION, FTRT_GRAPH, FTRT_NOP, abi.h;
 * 0 before one is chosen) the sites are written for: set when the
 * tracer is chosen (patch/options.c) and changed live (patch/live.c). */
extern int ftrt_mode;

/*
 * A module's targets: what a site of the module may call, the hooks its
 * compiler called and the trampolines `ftpatch enable` writes calls to
 * (core/ftrt.h's struct ftrt_module has them), by FTRT_T_* index.
 */
#define FTRT_T_ENUM(id, sym) FTRT_T_##id, /* sym */
enum { FTRT_TARGETS_ARCH(FTRT_T_ENUM) FTRT_T_N };
#undef FTRT_T_ENUM
/* The hooks and trampolines (entry.S; a shared object's in module/). */
#define FTRT_T_DECLARE(id, sym) void sym(void);
FTRT_TARGETS_ARCH(FTRT_T_DECLARE)
#undef FTRT_T_DECLARE
/* targets[] of a module whose hooks and trampolines go by their usual
 * names (the program's are the runtime's; a shared object's are its
 * stub's hidden copies). */
#define FTRT_T_INIT(id, sym) [FTRT_T_##id] = (uintptr_t)sym,
#define FTRT_TARGETS { FTRT_TARGETS_ARCH(FTRT_T_INIT) }
/* The first trampoline among the targets: the hooks come before it, the
 * stub last. */
#if defined(__aarch64__)
enum { FTRT_T_FIRST_TRAMP = FTRT_T_CALLER };
#else
enum { FTRT_T_FIRST_TRAMP = FTRT_T_CALLER5 };
#endif
/* The slots a module's trampolines jump through, in targets[] order from
 * FTRT_T_FIRST_TRAMP. */
#define FTRT_SLOTS (FTRT_T_STUB - FTRT_T_FIRST_TRAMP)

/* Per architecture (arch/x86_64/site.c, arch/arm64/site.c): read the site at ip and say what it
 * holds (reading 8 bytes from ip, which walk() makes sure are there);
 * write a NOP over it. */
enum ftrt_site_state {
	FTRT_SITE_CALL,    /* the compiler's call to a hook */
	FTRT_SITE_NOP,     /* one NOP covering the site */
	FTRT_SITE_NOPS,    /* several NOPs covering the site (-fpatchable-function-entry) */
	FTRT_SITE_UNKNOWN, /* anything else: never written */
};

/* The module whose sites the pass is over: its targets decide which calls
 * are hooks and which are the runtime's (site.c, patch.c). */
extern const uintptr_t *ftrt_targets __attribute__((visibility("hidden")));
/* Its sites made from functions' prologues, sorted (set with
 * ftrt_targets: core's ftrt_module_use), and whether ip is one of them
 * (a binary search): such a site's function was compiled without
 * tracing flags, and every path the runtime takes from it keeps every
 * general register (WANT_PROLOGUE). */
extern const uintptr_t *ftrt_prologues, *ftrt_prologues_end __attribute__((visibility("hidden")));
int ftrt_site_prologue(uintptr_t ip) __attribute__((visibility("hidden")));

/* Where the segment whose sites are being classified begins (sites.c's
 * walk sets it): the architecture may read before a site, but not
 * before this. */
extern uintptr_t ftrt_walk_seg_lo __attribute__((visibility("hidden")));

enum ftrt_site_state ftrt_arch_classify(const unsigned char *ip, int *len);
const unsigned char *ftrt_arch_nop(int len);
/* Probe which NOPs this CPU runs (or take FTRACE_NOP's choice); returns
 * the style's name: p6, k8 or jmp. */
const char *ftrt_arch_probe(const char *force);
/* The call that enables the site at ip of len bytes (into buf, 8 bytes),
 * where want says (WANT_ENTRY: at a function's entry; WANT_MCOUNT: after
 * its prologue, -pg; WANT_CHAIN: at its entry after push %r10); 0, or -1
 * when the trampoline is out of reach. */
int ftrt_arch_call(uintptr_t ip, int len, int want, unsigned char *buf);
/* What ftrt_arch_call's site of len bytes calls, for the load-time
 * pass's inline path; 0 when it does not call (function_graph's jump to
 * an entry site's own trampoline). */
uintptr_t ftrt_arch_call_target(int len, int want);
/* For a module's pass: the starts of its patchable areas [start, end)
 * (its __patchable_function_entries, relocated; any order), which the
 * architecture may need to tell what a site's area holds (arm64's
 * literal.c); (NULL, NULL) after the pass. */
void ftrt_arch_areas(const uintptr_t *start, const uintptr_t *end);
/* What the site at ip of len bytes becomes when the pass leaves it
 * disabled: its NOP (ftrt_arch_nop), or, in a traced run, at an arm64
 * patchable area, `mov x9, x30; nop`. */
const unsigned char *ftrt_arch_off(uintptr_t ip, int len);
/* Before a module's pass: what ftrt_arch_call builds from now on
 * (per-site trampolines) belongs to module `owner` (never shared with
 * another module, so it can go when the module does). */
void ftrt_arch_begin(int owner);
/* At the end of a module's pass: make what ftrt_arch_call built for it
 * read-only and executable. */
void ftrt_arch_seal(void);
/* The module `owner` is unloaded: unmap what was built for it. */
void ftrt_arch_release(int owner);
/* Whether the site at ip calls the entry hook (__fentry__), in any form. */
int ftrt_arch_entry_call(const unsigned char *ip);
/* Whether a site at ip is at the entry of the function [start, end):
 * before its frame is built, with nothing but endbr64 and NOPs before it
 * (-fpatchable-function-entry with -mfentry), or a chain site whose push
 * %r10 starts the function (after endbr64). Reads nothing outside the
 * function. */
int ftrt_arch_at_entry(uintptr_t ip, uintptr_t start, uintptr_t end);
/* Whether the site at ip of len bytes is a chain site: gcc's `push %r10;
 * [endbr64;] [nop...;] call __fentry__; pop %r10` of a GNU C nested
 * function, which keeps its static chain across the call; the return
 * address is then a word above the top of the stack. Reads the site's 8
 * bytes and back to lo at most (the start of its segment). */
int ftrt_arch_chain(uintptr_t ip, int len, uintptr_t lo);

/* The site of the patchable area (-fpatchable-function-entry) that
 * starts at area, a module's __patchable_function_entries word, for a
 * module with no __mcount_loc to list it (the preloaded runtime's
 * core/tables.c); 0 when its bytes are no area's. */
uintptr_t ftrt_arch_area_site(uintptr_t area) __attribute__((visibility("hidden")));

/* The targets[] of a module that no stub describes (the preloaded
 * runtime serves it), given the runtime's own (runtime): its hooks,
 * which the module's sites call through its PLT or GOT, and its
 * trampolines, reached from code near `near` (x86-64: through jumps in
 * a page the runtime maps within rel32 reach; arm64: directly, or
 * through veneer.c's veneers). 0, or -1 when no page in reach could be
 * had. */
int ftrt_arch_targets_near(uintptr_t near, const uintptr_t runtime[FTRT_T_N], uintptr_t targets[FTRT_T_N])
	__attribute__((visibility("hidden")));

/* Where the segment whose sites are being classified ends (sites.c's
 * walk sets it, with ftrt_walk_seg_lo): a site's call may be followed
 * into a PLT entry that lies inside it. */
extern uintptr_t ftrt_walk_seg_hi __attribute__((visibility("hidden")));

/* What the load-time pass makes of a site. */
enum {
	WANT_NOP,
	WANT_ENTRY,   /* call the tracer, at a function's entry */
	WANT_MCOUNT,  /* after the prologue (-pg) */
	WANT_CHAIN,   /* at a function's entry after push %r10: found by ftrt_arch_chain when a WANT_ENTRY site is written */
	WANT_UNKNOWN, /* not decided yet: for the symbol table (patch.c's choose) */
	WANT_AUTO,    /* no filter: enable a call of __fentry__, leave the rest WANT_UNKNOWN */
	/* A WANT_ENTRY site made from a function's prologue (the module's
	 * prologues list it: ftrt_site_prologue), told when it is written:
	 * its function was compiled without tracing flags, so its callers
	 * may keep values in call-clobbered registers across the call (gcc's
	 * -fipa-ra), and every path the site takes keeps every general
	 * register (x86-64: its own graph trampolines' entry and return;
	 * arm64: a site form that leaves x9 alone, and trampolines of its
	 * own). */
	WANT_PROLOGUE,
};

/* The architecture's (arch/x86_64/tramp.c): whether the site at ip calls one
 * of the module's trampolines that a site of the tracer `mode` may call
 * (mode 0: any of them), as `ftpatch enable` writes them; sets *len. */
int ftrt_arch_tramp_call(const unsigned char *ip, int *len, int mode) __attribute__((visibility("hidden")));

struct ftrace_regs; /* the architecture's (arch/x86_64/regs.h, arch/arm64/regs.h) */
/*
 * An ops record, as the kernel's struct ftrace_ops: what serves a
 * function whose site reaches it through the function's own pre-function
 * literal (arm64's ftrace_ops_caller loads the record's address from the
 * literal and calls func with it). func gets, as the kernel's does, the
 * site, the parent ip, the record and the function's registers at the
 * site (its return address in fregs->lr, which function_graph
 * replaces). One per tracer of the runtime (function.c); ftrt_ops_nop's
 * does nothing.
 */
struct ftrt_ops {
	void (*func)(uintptr_t ip, uintptr_t parent_ip, const struct ftrt_ops *ops, struct ftrace_regs *fregs);
};

/*
 * The tracers' entry points that code the ISA's site code writes must
 * reach and that no module's targets hold: x86-64's per-site graph
 * trampolines call graph_enter and jump to graph_leave
 * (tracers/x86_64/graph.S), its library calls' graph stubs
 * (arch/libstub.h) call libgraph_enter and jump to graph_leave; arm64's ops trampolines go on to
 * ops_regs_caller or ops_regs_mcount_caller (tracers/arm64/ops.S); x86-64's
 * to ops_caller, ops_mcount_caller and ops_chain_caller
 * (tracers/x86_64/ops.S); the tracers' ops records, which arm64's
 * literals point at (tracers/function.c). Given by the tracers (ftrt_tracers_wire)
 * before the program's load-time pass.
 */
struct ftrt_arch_entries {
	uintptr_t graph_enter, graph_leave, libgraph_enter;
	/* x86-64's per-site graph trampolines of sites made from prologues
	 * call and jump to these, which keep every general register. */
	uintptr_t prologue_graph_enter, prologue_graph_leave;
	/* arm64's sites made from prologues call these (`mov x17, x30; bl
	 * ...`), which keep every general register but x16 and x17. */
	uintptr_t prologue_caller, prologue_stub;
	uintptr_t ops_caller, ops_mcount_caller, ops_chain_caller;
	uintptr_t ops_regs_caller, ops_regs_mcount_caller;
	/* A site made from a prologue's ops caller, which keeps every
	 * register and the vector state (both ISAs). */
	uintptr_t ops_prologue_caller;
	/* The tracers' own ops records, by tracer (FTRT_FUNCTION,
	 * FTRT_GRAPH; [0]: the empty one): what arm64's literals point at. */
	const struct ftrt_ops *tracer_ops[FTRT_NOP + 1];
};
extern struct ftrt_arch_entries ftrt_arch_entries __attribute__((visibility("hidden")));

#endif
