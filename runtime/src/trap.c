/*
 * Signals the runtime takes first, shared with the program (live.h):
 *   - SIGTRAP, for live patching: a thread that meets a site being
 *     changed traps (x86-64's int3, poke.c), and the runtime's handler
 *     must see that trap first;
 *   - the signals a fault raises, SIGSEGV, SIGBUS, SIGILL, SIGFPE, and
 *     SIGABRT, under the flight recorder (ring.c): a program that dies of
 *     one has its threads' rings written out first (the trace's end),
 *     then dies of it as it would have, core dump included.
 * Every other trap, and every one of those signals the program handles
 * itself, goes to the action the program set, whenever it set it.
 *
 * So once live patching may happen in the process (ftrt_trap_armed: the
 * program links ftrace.h's API), the program's calls that set SIGTRAP's
 * action or would block it are wrapped (ftpatch flags --libs passes
 * --wrap=sigaction and the rest, as for exec: exec.c):
 *   - sigaction and signal of SIGTRAP, once the runtime's handler is in,
 *     set and report the program's action, kept here (prog), which the
 *     handler runs for a trap that is not the runtime's: as the kernel
 *     would, with its mask and flags (SA_SIGINFO, SA_RESETHAND), or its
 *     default (the process dies of SIGTRAP, with a core where the system
 *     makes one), or ignored (a trap instruction's SIGTRAP cannot be:
 *     the kernel kills the process then too);
 *   - sigprocmask, pthread_sigmask, and sigaction's sa_mask for any
 *     signal, never block SIGTRAP: a thread that blocked it and trapped
 *     on a site being changed would be killed by the kernel.
 * What they cannot see: a shared object's calls (not wrapped), raw
 * system calls, and the C library's own blocking of every signal in
 * code that runs no traced function (thread start, posix_spawn's child).
 *
 * The runtime's handler runs with SA_NODEFER, so a program's handler it
 * calls may itself meet a site being changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>

#include "live.h"
#include "tracer.h"

int ftrt_trap_armed;
int ftrt_end_signal;

int __real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
sighandler_t __real_signal(int sig, sighandler_t handler);
int __real_sigprocmask(int how, const sigset_t *set, sigset_t *old);
int __real_pthread_sigmask(int how, const sigset_t *set, sigset_t *old);

/* The API (api.c), linked or not: SIGTRAP is the runtime's from the
 * start in a program that may patch itself. */
extern int ftrace_enable_functions(const char *globs) __attribute__((weak));

#define SIGS 65
/* Per signal: the runtime's handler is its action, and the program's
 * action while it is. */
static struct {
	int installed;
	struct sigaction prog;
} taken[SIGS];

/* The program dies of sig, as its default action says (a core dump, for
 * every signal the runtime takes). */
static void die(int sig, const siginfo_t *si)
{
	/* Under the flight recorder, the rings first: the last calls before
	 * a crash are what its trace is for. */
	if (ftrt_ring_slots) {
		ftrt_end_signal = sig;
		ftrt_trace_end();
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	__real_sigaction(sig, &dfl, NULL);
	/* A fault the instruction raised (si_code > 0) is raised again when
	 * the handler returns to it, now with the default action, so the
	 * core shows the fault itself; but not an int3's, past which the
	 * thread would go on. Sent signals (kill, raise, abort) are sent
	 * again. */
	if (si->si_code > 0 && !(sig == SIGTRAP && si->si_code == SI_KERNEL))
		return;
	sys(SYS_tgkill, sys(SYS_getpid, 0, 0, 0, 0, 0, 0), sys(SYS_gettid, 0, 0, 0, 0, 0, 0), sig, 0, 0, 0);
}

/* The program's action for a signal that is not the runtime's. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = taken[sig].prog;
	void (*h)(int) = a.sa_handler;
	if (h == SIG_IGN && si->si_code <= 0)
		return; /* sent by a process (kill, raise, sigqueue), ignored */
	if (h == SIG_DFL || h == SIG_IGN) {
		/* The default action; or a fault ignored, which the kernel would
		 * end the process for too. */
		die(sig, si);
		return;
	}
	if (a.sa_flags & SA_RESETHAND) {
		memset(&taken[sig].prog, 0, sizeof taken[sig].prog);
		taken[sig].prog.sa_handler = SIG_DFL;
	}
	/* Its mask for the length of its handler (the kernel's sigreturn
	 * gives the interrupted code's back); SIGTRAP is never in it. */
	sigset_t m = a.sa_mask;
	sigdelset(&m, SIGTRAP);
	if (!(a.sa_flags & SA_NODEFER))
		sigaddset(&m, sig);
	sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&m, 0, 8, 0, 0);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else
		h(sig);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	if (sig == SIGTRAP && ftrt_arch_trap(si, uc))
		return;
	pass_on(sig, si, uc);
}

/* Take sig (flags: the runtime's handler's, beyond SA_SIGINFO and
 * SA_ONSTACK), keeping the program's action. */
static int take_sig(int sig, int flags)
{
	if (taken[sig].installed)
		return 0;
	struct sigaction a;
	memset(&a, 0, sizeof a);
	a.sa_sigaction = on_signal;
	a.sa_flags = SA_SIGINFO | SA_ONSTACK | flags;
	sigemptyset(&a.sa_mask);
	if (__real_sigaction(sig, &a, &taken[sig].prog) != 0)
		return -errno;
	taken[sig].installed = 1;
	return 0;
}

int ftrt_trap_install(void)
{
	int err = take_sig(SIGTRAP, SA_RESTART | SA_NODEFER);
	if (!err)
		ftrt_trap_armed = 1;
	return err;
}

void ftrt_trap_fatal(void)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
		take_sig(fatal[i], SA_RESTART);
}

/* At start (lifetime.c): a program that links the API, or listens for
 * ftpatch ctl (FTRACE_CTL=1), has SIGTRAP the runtime's from the start,
 * before any thread could block it. */
void ftrt_trap_start(void)
{
	if (ftrace_enable_functions || ftrt_ctl_wanted()) {
		ftrt_trap_armed = 1;
		ftrt_live_arm();
	}
}

/* set, less SIGTRAP when it is armed, in *copy. */
static const sigset_t *unblockable(const sigset_t *set, sigset_t *copy)
{
	if (!set || !ftrt_trap_armed || !sigismember(set, SIGTRAP))
		return set;
	*copy = *set;
	sigdelset(copy, SIGTRAP);
	return copy;
}

int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction copy;
	if (act && ftrt_trap_armed && sigismember(&act->sa_mask, SIGTRAP)) {
		copy = *act;
		sigdelset(&copy.sa_mask, SIGTRAP);
		act = &copy;
	}
	if (sig > 0 && sig < SIGS && taken[sig].installed) {
		if (old)
			*old = taken[sig].prog;
		if (act)
			taken[sig].prog = *act;
		return 0;
	}
	return __real_sigaction(sig, act, old);
}

sighandler_t __wrap_signal(int sig, sighandler_t handler)
{
	if (sig <= 0 || sig >= SIGS || !taken[sig].installed)
		return __real_signal(sig, handler);
	struct sigaction was = taken[sig].prog;
	memset(&taken[sig].prog, 0, sizeof taken[sig].prog);
	taken[sig].prog.sa_handler = handler;
	taken[sig].prog.sa_flags = SA_RESTART; /* glibc's signal: BSD semantics */
	return was.sa_flags & SA_SIGINFO ? (sighandler_t)(void *)was.sa_sigaction : was.sa_handler;
}

int __wrap_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	return __real_sigprocmask(how, how == SIG_UNBLOCK ? set : unblockable(set, &copy), old);
}

int __wrap_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	return __real_pthread_sigmask(how, how == SIG_UNBLOCK ? set : unblockable(set, &copy), old);
}
