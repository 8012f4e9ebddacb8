/*
 * C++ exceptions (and forced unwinds) through graphed frames.
 *
 * function_graph replaces a traced call's return address with its hook;
 * the unwinder reads return addresses to find each frame's unwind info,
 * and would find the hook instead and give up (std::terminate). So the
 * unwinder's entry points are interposed, and tell the graph tracer what
 * the unwinder does (walk.c):
 *
 *   _Unwind_RaiseException, _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind
 *       before unwinding, write every graphed frame's real return address
 *       back into its slot (the shadow entries stay, "suspended"); if the
 *       call comes back (no handler), hook them again;
 *   _Unwind_SetIP (frames.c, as forced unwinds need it too)
 *       before each landing pad: the graphed calls below its frame are
 *       recorded unwound, before the pad's destructors run, which are so
 *       graphed under the frame whose locals they destroy;
 *   __cxa_begin_catch
 *       in the frame that caught: the survivors are hooked again, so
 *       their exits are still traced.
 *
 * _Unwind_Resume, which a cleanup's landing pad calls to go on unwinding,
 * needs nothing: the slots still hold the real addresses. It is defined
 * only to pull this file in (below).
 *
 * Each looks the real function up with dlsym(RTLD_NEXT) and calls it. The
 * definitions are weak: in a -static link against libgcc_eh the real ones
 * win rather than colliding, and exceptions cannot be followed through
 * graphed frames there (ftrt_unwind_hooked says so, and function_graph
 * falls back to function). In a dynamic link the program's definitions
 * come first: libstdc++ calls every one of them through its PLT, as
 * libgcc_s calls _Unwind_RaiseException (from _Unwind_Resume_or_Rethrow),
 * and the linker exports the program's definitions because libstdc++
 * refers to them.
 */
#include <stdint.h>

#include "core/ftrt.h"
#include "entry.h"

struct _Unwind_Exception;
typedef int (*raise_fn)(struct _Unwind_Exception *);
typedef int (*forced_fn)(struct _Unwind_Exception *, void *, void *);
typedef void *(*catch_fn)(void *);

#define WEAK __attribute__((weak, visibility("default")))

#define NEXT(type, name)                        \
	({                                      \
		static void *cache;             \
		(type) ftrt_next(name, &cache); \
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
 * does not graph (options.c).
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

/*
 * Nothing to do here (the slots still hold the real addresses, see the
 * top): defined so that every object whose landing pads go on unwinding
 * pulls this file, and frames.c with it, out of the archive, which a
 * forced unwind through its frames needs, whether the program catches
 * or not.
 */
WEAK void _Unwind_Resume(struct _Unwind_Exception *e)
{
	typedef void (*resume_fn)(struct _Unwind_Exception *);
	NEXT(resume_fn, "_Unwind_Resume")(e);
	__builtin_unreachable();
}

WEAK void *__cxa_begin_catch(void *e)
{
	catch_fn real = NEXT(catch_fn, "__cxa_begin_catch");
	/* The catching frame's stack pointer when it called us (this
	 * frame's CFA): a fallback for walk.c, should no landing pad have
	 * been seen. */
	ftrt_graph_resume(e, (uintptr_t)__builtin_frame_address(0) + 16);
	return real(e);
}
