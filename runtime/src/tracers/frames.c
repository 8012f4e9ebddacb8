/*
 * The unwinder's walks through graphed calls, whoever starts them:
 * unwind info for graph hooks, and the landing pads.
 *
 * Landing pads. Before the unwinder runs a landing pad (a cleanup that
 * runs destructors, or the handler that catches), the personality
 * routine (libstdc++'s, or libgcc's for C cleanups) gives it its address
 * with _Unwind_SetIP, through its PLT: the program's definition (the
 * linker exports it, as libstdc++ refers to it) comes first. The
 * context's CFA then is the CFA of the call the walk came through (libgcc
 * moves it on only after the personality routine), which is the stack
 * pointer the pad runs with: it says exactly which graphed calls are gone
 * (ftrt_graph_land), those whose frames lay at or below it.
 *
 * Unwind info for the hooks.
 * The walks that cross graphed calls are mostly seen before they start
 * (exceptions, unwind.c; the program's backtrace, backtrace.c), and the
 * real return addresses are put back into the slots first. Some are not:
 * the C library's forced unwinds (pthread_exit, pthread_cancel) call
 * libgcc_s through a handle of their own, and a shared object's
 * backtrace is not wrapped. Such a walk reads a hook where a return
 * address was, finds no unwind info for it and stops there: the forced
 * unwind of a thread then skipped the destructors of every C++ frame
 * above its innermost graphed call, and ended the thread.
 *
 * libgcc_s looks each frame's unwind info up with _Unwind_Find_FDE,
 * called through its PLT, so the program's definition comes first (the
 * linker exports it: libgcc_s refers to it). For an address the real
 * lookup knows nothing of and that is, one byte on, the hook of one of
 * this thread's graphed calls (the unwinder asks for the byte before a
 * return address), it answers with unwind info of its own, describing
 * the hook as a frame of its own:
 *
 *   CFA          = sp + 1: the graphed call has just returned into the
 *                  hook, so the stack pointer is the call's own stack
 *                  pointer at return, its shadow entry's sp; one more,
 *                  as the unwinder tells frames apart by their CFAs (the
 *                  frame that catches is found again by its callee's
 *                  CFA), and the hook's frame and the graphed call's
 *                  would otherwise share one: the walk would take the
 *                  hook's frame for the catching one and abort. No real
 *                  frame's CFA is odd.
 *   sp           = CFA - 1, said explicitly: the caller's stack pointer
 *                  (where its landing pad runs) is the stack pointer at
 *                  return
 *   return addr  = the real return address: the ret of the innermost
 *                  shadow entry whose sp is CFA - 1 and whose hook is
 *                  that address but not its return address (a DWARF
 *                  expression that searches the thread's shadow stack
 *                  when the unwinder evaluates it); 0, the walk's end,
 *                  when none is
 *   other regs   = unchanged
 *
 * The walk then goes on into the caller, as untraced, with one frame
 * more (the hook's, with no personality routine: no landing pad runs
 * there). Nothing on the stack or in the shadow stack changes, so the
 * calls the walk passed still return through their hooks. A call and
 * the graphed function it tail-called share one slot: the callee's
 * entry's real return address is the caller's hook. The search skips
 * such an entry when its hook is the caller's (return_to_handler, for
 * both), and goes on to the caller's, whose return address is real: the
 * chain is one frame of the walk, as it is one frame on the stack.
 * (With different hooks, x86-64's per-site trampolines, the callee's
 * return address, the caller's hook, is looked up in turn, as a second
 * frame at the same CFA; the search tells them apart by hook.)
 *
 * The info is built once per thread, in an area of its trace buffer: it
 * names the addresses of the thread's shadow stack and depth, and
 * nothing else, so it holds for every hook and every walk of the
 * thread, a signal handler's included. The lookup and the search read
 * the shadow stack without changing it; a lookup while the thread's
 * tracer runs (a signal handler interrupted it) answers nothing, and the
 * walk stops at the hook as before.
 *
 * Linked with unwind.c (whose hooks use ftrt_next), so where C++ code
 * (or C with cleanups) is, and libgcc_s with it: the next definitions
 * are libgcc_s's, found in the global scope. Weak definitions: in a
 * static link libgcc_eh's win, and the one the reference to
 * __register_frame_info below pulls in with its _Unwind_Find_FDE, which
 * this file's would otherwise replace for good, as nothing else refers
 * to that member of libgcc_eh (the graph tracer does not run in such a
 * program, see unwind.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "arch/arch.h"
#include "arch/layout.h"
#include "core/ftrt.h"
#include "entry.h"
#include "record/stack.h"

/* libgcc's, for the lookup's result. */
struct dwarf_eh_bases {
	void *tbase;
	void *dbase;
	void *func;
};
typedef const void *(*find_fn)(void *, struct dwarf_eh_bases *);

void return_to_handler(void);

/* DWARF call frame instructions and expression operations used below. */
enum {
	DW_CFA_nop = 0x00,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_val_expression = 0x16,
	DW_OP_deref = 0x06,
	DW_OP_const1u = 0x08,
	DW_OP_const8u = 0x0e,
	DW_OP_dup = 0x12,
	DW_OP_drop = 0x13,
	DW_OP_pick = 0x15,
	DW_OP_minus = 0x1c,
	DW_OP_mul = 0x1e,
	DW_OP_plus = 0x22,
	DW_OP_plus_uconst = 0x23,
	DW_OP_bra = 0x28,
	DW_OP_eq = 0x29,
	DW_OP_ne = 0x2e,
	DW_OP_skip = 0x2f,
	DW_OP_lit0 = 0x30,
	DW_OP_lit1 = 0x31,
	DW_OP_breg0 = 0x70, /* + the register number */
	DW_OP_deref_size = 0x94,
	DW_EH_PE_absptr = 0x00,
	/* The architecture's register numbers (arch.h). */
	REG_SP = FTRT_DWARF_SP,
	REG_RA = FTRT_DWARF_RA,
};

struct out {
	unsigned char *p;
};

static void put1(struct out *o, unsigned v)
{
	*o->p++ = (unsigned char)v;
}

static void put4(struct out *o, uint32_t v)
{
	memcpy(o->p, &v, 4);
	o->p += 4;
}

static void put8(struct out *o, uint64_t v)
{
	memcpy(o->p, &v, 8);
	o->p += 8;
}

/* A branch (DW_OP_bra or DW_OP_skip) whose target is set later (jump_to). */
static unsigned char *jump(struct out *o, unsigned op)
{
	put1(o, op);
	unsigned char *at = o->p;
	o->p += 2;
	return at;
}

/* The branch whose offset is at `at` goes to `to`: an offset from the end
 * of the branch instruction. */
static void jump_to(unsigned char *at, const unsigned char *to)
{
	int16_t off = (int16_t)(to - (at + 2));
	memcpy(at, &off, 2);
}

/* A branch (jump_to sets its target) taken when the word at offset off
 * of the shadow entry p at the top of the stack compares by cmp
 * (DW_OP_ne: differs; DW_OP_eq: equals) with the value `pick` places
 * below p: dup; plus_uconst off; deref; pick n; cmp; bra. */
static unsigned char *compare(struct out *o, unsigned off, unsigned pick, unsigned cmp)
{
	put1(o, DW_OP_dup);
	put1(o, DW_OP_plus_uconst);
	put1(o, off);
	put1(o, DW_OP_deref);
	put1(o, DW_OP_pick);
	put1(o, pick);
	put1(o, cmp);
	return jump(o, DW_OP_bra);
}

/* Pad with DW_CFA_nop so that [start, o->p) is a multiple of 8 bytes
 * long; returns what its length word (its first 4 bytes) must say. */
static uint32_t close_entry(struct out *o, unsigned char *start)
{
	while ((o->p - start) % 8)
		put1(o, DW_CFA_nop);
	return (uint32_t)(o->p - start - 4);
}

/*
 * The CIE and the FDE, .eh_frame style, into area (zero until then);
 * returns the FDE.
 *
 *   CIE  length, id 0, version 1, "zR", code alignment 1, data alignment
 *        -8, return address column FTRT_DWARF_RA (the architecture's:
 *        arch.h), augmentation data: the FDE's pointer encoding
 *        (absolute); DW_CFA_def_cfa FTRT_DWARF_SP, 1
 *   FDE  length, offset back to the CIE, pc_begin and pc_range (absolute,
 *        unused: the lookup sets the function's start itself), no
 *        augmentation data; DW_CFA_val_expression sp, (CFA) lit1 minus;
 *        DW_CFA_val_expression ra, the search:
 *
 *        (the unwinder pushes the CFA first)      CFA
 *        dup; lit1; minus                          CFA S        S = CFA - 1, the stack pointer at return
 *                                                               (libgcc's pick reaches all but the bottom)
 *        breg(RA) 0                                CFA S H      H: the hook, this frame's return address
 *          (or const8u return_to_handler, where that may be signed: FTRT_DWARF_RA_SIGNED)
 *        const8u &depth; deref_size 4              CFA S H i    i: entries left to look at
 *   loop: dup; bra body                            (i != 0)
 *        lit0; skip end                            CFA S H i 0  none: the walk ends
 *   body: lit1; minus                              CFA S H i    i: the entry looked at
 *        dup; const1u SH_SIZE; mul;
 *        const8u &shadow[0]; plus                  CFA S H i p  p = &shadow[i]
 *        dup; plus_uconst SH_SP; deref; pick 4; ne; bra next    (its sp is not S)
 *        dup; plus_uconst SH_HOOK; deref; pick 3; ne; bra next  (its hook is not H)
 *        dup; plus_uconst SH_RET; deref; pick 3; eq; bra next   (tail-called: returns to H)
 *        plus_uconst SH_RET; deref; skip end       CFA S H i ret
 *   next: drop; skip loop                          CFA S H i
 *   end:                                           the top is the return address
 */
static const void *build(unsigned char *area, uintptr_t shadow, uintptr_t depth)
{
	struct out o = { area };
	unsigned char *cie = o.p;
	put4(&o, 0); /* length, below */
	put4(&o, 0); /* CIE id */
	put1(&o, 1); /* version */
	put1(&o, 'z');
	put1(&o, 'R');
	put1(&o, 0);
	put1(&o, 1);    /* code alignment factor */
	put1(&o, 0x78); /* data alignment factor: -8, SLEB128 */
	put1(&o, REG_RA);
	put1(&o, 1); /* augmentation data: one byte */
	put1(&o, DW_EH_PE_absptr);
	put1(&o, DW_CFA_def_cfa);
	put1(&o, REG_SP);
	put1(&o, 1); /* CFA = sp + 1: see the top */
	uint32_t cie_len = close_entry(&o, cie);

	unsigned char *fde = o.p;
	put4(&o, 0);                              /* length, below */
	put4(&o, (uint32_t)(o.p - cie));          /* back to the CIE, from this field */
	put8(&o, 0);                              /* pc_begin */
	put8(&o, 0);                              /* pc_range */
	put1(&o, 0);                              /* augmentation data: none */
	put1(&o, DW_CFA_val_expression);          /* sp = CFA - 1 */
	put1(&o, REG_SP);
	put1(&o, 2);
	put1(&o, DW_OP_lit1);
	put1(&o, DW_OP_minus);
	put1(&o, DW_CFA_val_expression);
	put1(&o, REG_RA);
	unsigned char *len = o.p++; /* the expression's length: one byte, below */
	unsigned char *expr = o.p;
	put1(&o, DW_OP_dup); /* libgcc's pick cannot reach the bottom of the stack */
	put1(&o, DW_OP_lit1);
	put1(&o, DW_OP_minus);
#if FTRT_DWARF_RA_SIGNED
	put1(&o, DW_OP_const8u); /* the hook: the one there is (arch.h's dwarf.h) */
	put8(&o, (uintptr_t)return_to_handler);
#else
	put1(&o, DW_OP_breg0 + REG_RA); /* the hook: this frame's return address */
	put1(&o, 0);
#endif
	put1(&o, DW_OP_const8u);
	put8(&o, depth);
	put1(&o, DW_OP_deref_size);
	put1(&o, 4);
	unsigned char *loop = o.p;
	put1(&o, DW_OP_dup);
	unsigned char *to_body = jump(&o, DW_OP_bra);
	put1(&o, DW_OP_lit0);
	unsigned char *none_to_end = jump(&o, DW_OP_skip);
	jump_to(to_body, o.p);
	put1(&o, DW_OP_lit1);
	put1(&o, DW_OP_minus);
	put1(&o, DW_OP_dup);
	put1(&o, DW_OP_const1u);
	put1(&o, SH_SIZE);
	put1(&o, DW_OP_mul);
	put1(&o, DW_OP_const8u);
	put8(&o, shadow);
	put1(&o, DW_OP_plus);
	unsigned char *sp_differs = compare(&o, SH_SP, 4, DW_OP_ne);
	unsigned char *hook_differs = compare(&o, SH_HOOK, 3, DW_OP_ne);
	unsigned char *tail_called = compare(&o, SH_RET, 3, DW_OP_eq);
	put1(&o, DW_OP_plus_uconst);
	put1(&o, SH_RET);
	put1(&o, DW_OP_deref);
	unsigned char *found_to_end = jump(&o, DW_OP_skip);
	jump_to(sp_differs, o.p);
	jump_to(hook_differs, o.p);
	jump_to(tail_called, o.p);
	put1(&o, DW_OP_drop);
	jump_to(jump(&o, DW_OP_skip), loop);
	jump_to(none_to_end, o.p);
	jump_to(found_to_end, o.p);
	*len = (unsigned char)(o.p - expr); /* under 128 (a one-byte ULEB128): about 100 */
	uint32_t fde_len = close_entry(&o, fde);
	memcpy(fde, &fde_len, 4);
	/* The CIE's length last: until it is set, the info is not built (a
	 * signal handler's walk on this thread builds it again, alike). */
	__atomic_store_n((uint32_t *)cie, cie_len, __ATOMIC_RELEASE);
	return fde;
}

_Static_assert(SH_SP < 128 && SH_HOOK < 128 && SH_RET < 128 && SH_SIZE < 256, "one-byte operands");
_Static_assert(FTRT_FRAME_INFO >= 24 + 48 + 80, "room for the CIE and the FDE");

struct _Unwind_Context;
typedef void (*setip_fn)(struct _Unwind_Context *, uintptr_t);
typedef uintptr_t (*getcfa_fn)(struct _Unwind_Context *);

void *ftrt_next(const char *name, void **cache)
{
	void *f = __atomic_load_n(cache, __ATOMIC_RELAXED);
	if (!f) {
		ftrt_in_runtime++; /* the runtime's lookup, not a library call of the program's */
		f = dlsym(RTLD_NEXT, name);
		ftrt_in_runtime--;
		__atomic_store_n(cache, f, __ATOMIC_RELAXED);
	}
	return f;
}

/* In a static link, pulls libgcc_eh's lookup (see the top). */
extern void __register_frame_info(const void *, void *);
__attribute__((used)) static void (*const libgcc_lookup)(const void *, void *) = __register_frame_info;

__attribute__((weak, visibility("default"))) void _Unwind_SetIP(struct _Unwind_Context *ctx, uintptr_t ip)
{
	static void *setip, *getcfa;
	ftrt_graph_land(((getcfa_fn)ftrt_next("_Unwind_GetCFA", &getcfa))(ctx));
	((setip_fn)ftrt_next("_Unwind_SetIP", &setip))(ctx, ip);
}

__attribute__((weak, visibility("default"))) const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases)
{
	static void *cache;
	find_fn real = (find_fn)ftrt_next("_Unwind_Find_FDE", &cache);
	uintptr_t hook = (uintptr_t)pc + 1;
	/* return_to_handler is asked about first: whatever code precedes it,
	 * the byte before it is not the code of its callers. Any other hook
	 * is in a page of trampolines no unwind info covers. */
	if (hook != (uintptr_t)return_to_handler) {
		const void *f = real ? real(pc, bases) : NULL;
		if (f)
			return f;
	}
	struct ftrt_hook_info hi;
	if (!ftrt_graph_hook_info(hook, &hi))
		return hook == (uintptr_t)return_to_handler && real ? real(pc, bases) : NULL;
	uint32_t *cie_len = (uint32_t *)hi.area;
	if (__atomic_load_n(cie_len, __ATOMIC_ACQUIRE) == 0)
		build(hi.area, hi.shadow, hi.depth);
	bases->tbase = NULL;
	bases->dbase = NULL;
	bases->func = pc;
	return hi.area + *cie_len + 4;
}
