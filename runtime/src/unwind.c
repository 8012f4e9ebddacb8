/*
 * C++ exceptions (and forced unwinds) through graphed frames.
 *
 * function_graph replaces a traced call's return address with its hook;
 * the unwinder reads return addresses to find each frame's unwind info,
 * and would find the hook instead and give up (std::terminate). So the
 * unwinder's entry points are interposed, and tell the graph tracer what
 * the unwinder does (trace.c, "Walks of the stack"):
 *
 *   _Unwind_RaiseException, _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind
 *       before unwinding, write every graphed frame's real return address
 *       back into its slot (the shadow entries stay, "suspended"); if the
 *       call comes back (no handler), hook them again;
 *   _Unwind_SetIP
 *       called by the personality routine (libstdc++'s, or libgcc's for
 *       C cleanups) for the frame whose landing pad the unwinder is about
 *       to run, just before it jumps there. The context's CFA, which is
 *       then the CFA of the call the exception came through (libgcc's
 *       context holds the callee's CFA until it moves on), is the stack
 *       pointer the pad runs with: it says exactly which graphed calls
 *       are gone (those whose frames lay at or below it). They are
 *       recorded unwound then, before the pad's destructors run, which
 *       are so graphed under the frame whose locals they destroy;
 *   __cxa_begin_catch
 *       in the frame that caught: the survivors are hooked again, so
 *       their exits are still traced.
 *
 * _Unwind_Resume, which a cleanup's landing pad calls to go on unwinding,
 * needs nothing: the slots still hold the real addresses.
 *
 * Each looks the real function up with dlsym(RTLD_NEXT) and calls it. The
 * definitions are weak: in a -static link against libgcc_eh the real ones
 * win rather than colliding, and exceptions cannot be followed through
 * graphed frames there (ftrt_unwind_hooked says so, and function_graph
 * falls back to function). In a dynamic link the program's definitions
 * come first: libstdc++ calls every one of them through its PLT, as
 * libgcc_s calls _Unwind_SetIP (its C personality) and
 * _Unwind_RaiseException (from _Unwind_Resume_or_Rethrow), and the
 * linker exports the program's definitions because libstdc++ refers to
 * them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

#include "ftrt.h"

struct _Unwind_Exception;
struct _Unwind_Context;
typedef int (*raise_fn)(struct _Unwind_Exception *);
typedef int (*forced_fn)(struct _Unwind_Exception *, void *, void *);
typedef void (*setip_fn)(struct _Unwind_Context *, uintptr_t);
typedef uintptr_t (*getcfa_fn)(struct _Unwind_Context *);
typedef void *(*catch_fn)(void *);

#define WEAK __attribute__((weak, visibility("default")))

/* The next definition of name (libgcc_s's, libstdc++'s), looked up once;
 * threads that race here store the same value. */
static void *next(const char *name, void **cache)
{
	void *f = __atomic_load_n(cache, __ATOMIC_RELAXED);
	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		__atomic_store_n(cache, f, __ATOMIC_RELAXED);
	}
	return f;
}
#define NEXT(type, name)                  \
	({                                \
		static void *cache;       \
		(type) next(name, &cache); \
	})

static int raise_hook(struct _Unwind_Exception *e)
{
	raise_fn real = NEXT(raise_fn, "_Unwind_RaiseException");
	int opened = ftrt_graph_suspend(e);
	int r = real(e); /* returns only when no handler was found */
	if (opened)
		ftrt_graph_resume(e, 0);
	return r;
}
extern __typeof__(raise_hook) _Unwind_RaiseException WEAK __attribute__((alias("raise_hook")));

/*
 * Whether a throw reaches the hooks here. In a static link libgcc_eh's
 * unwinder is linked whole, and its strong definitions win over these
 * weak ones: a throw through a graphed frame would find a hook in a
 * return slot and end the program (std::terminate). The runtime then
 * does not graph (patch.c).
 */
int ftrt_unwind_hooked(void)
{
	return _Unwind_RaiseException == raise_hook;
}

WEAK int _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e)
{
	raise_fn real = NEXT(raise_fn, "_Unwind_Resume_or_Rethrow");
	int opened = ftrt_graph_suspend(e);
	int r = real(e);
	if (opened)
		ftrt_graph_resume(e, 0);
	return r;
}

WEAK int _Unwind_ForcedUnwind(struct _Unwind_Exception *e, void *stop, void *arg)
{
	forced_fn real = NEXT(forced_fn, "_Unwind_ForcedUnwind");
	int opened = ftrt_graph_suspend(e);
	int r = real(e, stop, arg);
	if (opened)
		ftrt_graph_resume(e, 0);
	return r;
}

WEAK void _Unwind_SetIP(struct _Unwind_Context *ctx, uintptr_t ip)
{
	setip_fn real = NEXT(setip_fn, "_Unwind_SetIP");
	getcfa_fn cfa = NEXT(getcfa_fn, "_Unwind_GetCFA");
	ftrt_graph_land(cfa(ctx));
	real(ctx, ip);
}

WEAK void *__cxa_begin_catch(void *e)
{
	catch_fn real = NEXT(catch_fn, "__cxa_begin_catch");
	/* The catching frame's stack pointer when it called us (this
	 * frame's CFA): a fallback for trace.c, should no landing pad have
	 * been seen. */
	ftrt_graph_resume(e, (uintptr_t)__builtin_frame_address(0) + 16);
	return real(e);
}
