/*
 * C++ exceptions (and pthread_exit/cancel) through graphed frames.
 *
 * function_graph replaces a traced call's return address with
 * return_to_handler; the unwinder reads return addresses to find each
 * frame's unwind info, and would find ours instead and give up
 * (std::terminate). So the unwinder's entry points are interposed:
 *
 *   _Unwind_RaiseException, _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind
 *       before unwinding, write every graphed frame's real return address
 *       back into its slot (the shadow entries stay, "suspended");
 *   __cxa_begin_catch
 *       in the frame that caught: the suspended entries below it were
 *       unwound (recorded so); the ones at and above it survive and are
 *       hijacked again, so their exits are still traced.
 *
 * Each looks the real function up with dlsym(RTLD_NEXT) and calls it. The
 * definitions are weak: in a -static link against libgcc_eh the real ones
 * win rather than colliding, and exceptions cannot be followed through
 * graphed frames there (ftrt_unwind_hooked says so, and function_graph
 * falls back to function). In a dynamic link the program's definitions
 * come first and libstdc++'s calls reach them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

#include "ftrt.h"

struct _Unwind_Exception;
typedef int (*raise_fn)(struct _Unwind_Exception *);
typedef int (*forced_fn)(struct _Unwind_Exception *, void *, void *);
typedef void *(*catch_fn)(void *);

#define WEAK __attribute__((weak, visibility("default")))

static int raise_hook(struct _Unwind_Exception *e)
{
	static raise_fn real;
	if (!real)
		real = (raise_fn)dlsym(RTLD_NEXT, "_Unwind_RaiseException");
	ftrt_graph_suspend();
	return real(e);
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
	static raise_fn real;
	if (!real)
		real = (raise_fn)dlsym(RTLD_NEXT, "_Unwind_Resume_or_Rethrow");
	ftrt_graph_suspend();
	return real(e);
}

WEAK int _Unwind_ForcedUnwind(struct _Unwind_Exception *e, void *stop, void *arg)
{
	static forced_fn real;
	if (!real)
		real = (forced_fn)dlsym(RTLD_NEXT, "_Unwind_ForcedUnwind");
	ftrt_graph_suspend();
	return real(e, stop, arg);
}

WEAK void *__cxa_begin_catch(void *e)
{
	static catch_fn real;
	if (!real)
		real = (catch_fn)dlsym(RTLD_NEXT, "__cxa_begin_catch");
	/* The catching frame's stack pointer before it called us. */
	ftrt_graph_resume((uintptr_t)__builtin_frame_address(0) + 16);
	return real(e);
}
