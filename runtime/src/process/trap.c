/*
 * Signals the runtime takes, shared with the program (live.h):
 *   - SIGTRAP, for live patching: a thread that meets a site being
 *     changed traps (x86-64's int3, poke.c), and the runtime's handler
 *     must see every trap first (the front: it is SIGTRAP's action from
 *     the first live change on, whatever the program sets);
 *   - the signals a fault raises, SIGSEGV, SIGBUS, SIGILL, SIGFPE, and
 *     SIGABRT, under the flight recorder (ring.c, watched from the
 *     trace's start): a program that dies of one has its threads' rings
 *     written out first (the trace's end), then dies of it as it would
 *     have, core dump included.
 *
 * A watched signal is the runtime's only while it would kill the
 * process: while the program's action is the default, the kernel holds
 * the runtime's handler (the catcher), which writes the rings and dies.
 * Any other action the program sets goes to the kernel as it is, so its
 * handler runs as the kernel runs it, with its mask, flags and stack,
 * and SIG_IGN ignores; the one exception is a handler with SA_RESETHAND,
 * which the kernel would reset to the default as it delivers the signal,
 * out of the runtime's sight: the kernel holds the runtime's handler
 * with exactly the program's mask and flags (SA_RESETHAND, SA_NODEFER,
 * SA_ONSTACK, SA_RESTART: the kernel applies them, the same), which puts
 * the catcher back at once (the program's action is the default now)
 * and calls the program's handler; if the signal then kills, the rings
 * are written.
 *
 * SIGTRAP's front is installed with the program's mask (less SIGTRAP),
 * SA_ONSTACK and SA_RESTART, and SA_NODEFER always: a trap that is not
 * the runtime's runs the program's action on the stack and with the mask
 * it asked for, its SA_RESETHAND done here; SIGTRAP itself is never
 * blocked, not even in the program's own SIGTRAP handler (a handler, or
 * what it calls, may meet a site being changed, and the kernel kills a
 * thread that traps with SIGTRAP blocked): a SIGTRAP raised while that
 * handler runs reaches it at once, nested, where the kernel would hold it
 * until the handler returns.
 *
 * The program's calls that set or read a signal's action, or block
 * signals, are wrapped (ftpatch flags --libs passes --wrap=sigaction and
 * the rest, as for exec: exec.c):
 *   - sigaction and signal of a watched signal, or of SIGTRAP once the
 *     front is in, go to the kernel as they are or put the runtime's
 *     handler in front (above), and read back the program's own action
 *     (kept here, prog, while the kernel holds the runtime's handler);
 *   - once live patching may happen in the process (ftrt_trap_armed: the
 *     program links the API, or listens for ftpatch ctl), sigprocmask,
 *     pthread_sigmask, and sigaction's sa_mask for any signal, never
 *     block SIGTRAP.
 * What they cannot see: a shared object's calls (not wrapped), raw
 * system calls, and the C library's own calls (abort's reset of
 * SIGABRT, sigset, thread start blocking every signal): a shared object
 * that sets a watched signal's action sets the kernel's, exactly; one
 * that reads it while the catcher is in sees the runtime's handler, and
 * a handler of its own that calls that one (chaining) has the rings
 * written and the process killed, as the default action would.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "patch/live.h"
#include "record/tracer.h"

int ftrt_end_signal;

/* SIGTRAP is the runtime's from the start (ftrt_trap_start): never
 * given back (ftrt_trap_release). */
static int armed_at_start;

int __real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
sighandler_t __real_signal(int sig, sighandler_t handler);
int __real_sigprocmask(int how, const sigset_t *set, sigset_t *old);
int __real_pthread_sigmask(int how, const sigset_t *set, sigset_t *old);

/* The API (api.c), linked or not: SIGTRAP is the runtime's from the
 * start in a program that may patch itself. */
extern int ftrace_enable_functions(const char *globs) __attribute__((weak));

#define SIGS 65
#define SLOTS 4

/* Per signal: whether it is watched, or SIGTRAP's front in; and the
 * program's action, for when the kernel holds the runtime's handler.
 * The action is written by the wrappers and by the handler (an
 * SA_RESETHAND), read by the handler: each write goes to a fresh slot,
 * published by at, so a handler never reads a half-written one (unless
 * SLOTS writes raced with its copy). */
static struct {
	int watched, front;
	unsigned at, next;
	struct sigaction prog[SLOTS];
} sigs[SIGS];

static void prog_load(int sig, struct sigaction *p)
{
	*p = sigs[sig].prog[__atomic_load_n(&sigs[sig].at, __ATOMIC_ACQUIRE) % SLOTS];
}

static void prog_store(int sig, const struct sigaction *p)
{
	unsigned at = __atomic_add_fetch(&sigs[sig].next, 1, __ATOMIC_RELAXED);
	sigs[sig].prog[at % SLOTS] = *p;
	__atomic_store_n(&sigs[sig].at, at, __ATOMIC_RELEASE);
}

static void on_signal(int sig, siginfo_t *si, void *uc);

static int is_ours(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_signal;
}

static int is_handler(const struct sigaction *a)
{
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* What the kernel holds for sig while the program's action is *p: *p
 * itself, or the runtime's handler, made in *k. */
static const struct sigaction *kernel_action(int sig, const struct sigaction *p, struct sigaction *k)
{
	memset(k, 0, sizeof *k);
	k->sa_sigaction = on_signal;
	sigemptyset(&k->sa_mask);
	if (sig == SIGTRAP && sigs[sig].front) {
		k->sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
		if (is_handler(p)) {
			k->sa_flags = SA_SIGINFO | SA_NODEFER | (p->sa_flags & (SA_ONSTACK | SA_RESTART));
			k->sa_mask = p->sa_mask;
			sigdelset(&k->sa_mask, SIGTRAP);
		}
		return k;
	}
	if (!sigs[sig].watched)
		return p;
	if (p->sa_handler == SIG_DFL) {
		/* The catcher: on the alternate stack where there is one, so a
		 * stack overflow's death writes the rings too. */
		k->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		return k;
	}
	if (is_handler(p) && (p->sa_flags & SA_RESETHAND)) {
		k->sa_flags = p->sa_flags | SA_SIGINFO;
		k->sa_mask = p->sa_mask;
		return k;
	}
	return p;
}

/* The program's action for sig is now *p: to the kernel, as it is or
 * behind the runtime's handler. 0, or -1 with errno set. */
static int settle(int sig, const struct sigaction *p, struct sigaction *old)
{
	struct sigaction k, was;
	const struct sigaction *to = kernel_action(sig, p, &k);
	if (to != &k)
		return __real_sigaction(sig, to, old);
	/* Kept before the kernel has it: a signal that comes meanwhile runs
	 * the action the program is setting, not the one it replaces. */
	prog_load(sig, &was);
	prog_store(sig, p);
	int r = __real_sigaction(sig, to, old);
	if (r != 0)
		prog_store(sig, &was);
	return r;
}

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

/*
 * The runtime's handler: a trap of a site being changed is the
 * runtime's; otherwise the program's action runs. The kernel set the
 * program's mask and chose its stack already (kernel_action); a handler
 * with SA_RESETHAND leaves the default action behind it, the catcher in
 * the kernel for a watched signal (the kernel reset the action as it
 * delivered this one), the front's own flags for SIGTRAP (which the
 * kernel did not).
 */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	/* Whether the front is still in or not: a trap taken on a site's
	 * int3 before ftrt_trap_release let the front go is delivered to
	 * this handler all the same, and runs the site again. */
	if (sig == SIGTRAP && ftrt_arch_trap(si, uc, ftrt_live_is_site))
		return;
	struct sigaction a;
	prog_load(sig, &a);
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
		/* As the kernel resets it: the handler alone, its flags and
		 * mask kept (they read back so). */
		struct sigaction dfl = a;
		dfl.sa_handler = SIG_DFL;
		settle(sig, &dfl, NULL);
	}
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else
		h(sig);
}

/* Put the runtime's handler in sig's action where kernel_action says,
 * keeping the program's as it is now. */
static int take(int sig)
{
	struct sigaction cur;
	if (__real_sigaction(sig, NULL, &cur) != 0)
		return -errno;
	if (is_ours(&cur))
		return 0;
	return settle(sig, &cur, NULL) == 0 ? 0 : -errno;
}

int ftrt_trap_install(void)
{
	if (__atomic_load_n(&sigs[SIGTRAP].front, __ATOMIC_ACQUIRE))
		return 0;
	__atomic_store_n(&sigs[SIGTRAP].front, 1, __ATOMIC_RELEASE);
	int err = take(SIGTRAP);
	if (err)
		__atomic_store_n(&sigs[SIGTRAP].front, 0, __ATOMIC_RELEASE);
	else
		ftrt_trap_armed = 1;
	return err;
}

/* Whether a thread of the process has a SIGTRAP pending (its own or
 * the process's, /proc/self/task/N/status's SigPnd and ShdPnd), or
 * whether that cannot be read. */
static int trap_pending(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return 1;
	int pending = 0;
	for (struct dirent *e; !pending && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[sizeof "/proc/self/task//status" + sizeof e->d_name], buf[2048];
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* the thread ended */
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		for (const char *k = buf; (k = strstr(k, "Pnd:")) != NULL; k += 4)
			pending |= (strtoull(k + 4, NULL, 16) >> (SIGTRAP - 1)) & 1;
	}
	closedir(d);
	return pending;
}

int ftrt_trap_release(void)
{
	if (!__atomic_load_n(&sigs[SIGTRAP].front, __ATOMIC_ACQUIRE) || armed_at_start)
		return 0;
	if (trap_pending())
		return -EBUSY;
	struct sigaction p;
	prog_load(SIGTRAP, &p);
	__atomic_store_n(&sigs[SIGTRAP].front, 0, __ATOMIC_RELEASE);
	ftrt_trap_armed = 0;
	return __real_sigaction(SIGTRAP, &p, NULL) == 0 ? 0 : -errno;
}

void ftrt_trap_fatal(void)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
		__atomic_store_n(&sigs[fatal[i]].watched, 1, __ATOMIC_RELEASE);
		take(fatal[i]);
	}
}

/* At start (lifetime.c): a program that links the API, or listens for
 * ftpatch ctl (FTRACE_CTL=1), has SIGTRAP the runtime's from the start,
 * before any thread could block it. */
void ftrt_trap_start(void)
{
#ifdef FTRT_PRELOAD
	/* Preloaded, the API is always there: only ftpatch ctl patches. */
	int api = 0;
#else
	int api = ftrace_enable_functions != NULL;
#endif
	if (api || ftrt_ctl_wanted()) {
		ftrt_trap_armed = armed_at_start = 1;
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

/* Whether sig's action is the wrappers' to keep. */
static int kept(int sig)
{
	return sig > 0 && sig < SIGS &&
	       (__atomic_load_n(&sigs[sig].watched, __ATOMIC_ACQUIRE) || __atomic_load_n(&sigs[sig].front, __ATOMIC_ACQUIRE));
}

int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction copy, was, got;
	if (act && ftrt_trap_armed && sigismember(&act->sa_mask, SIGTRAP)) {
		copy = *act;
		sigdelset(&copy.sa_mask, SIGTRAP);
		act = &copy;
	}
	if (!kept(sig))
		return __real_sigaction(sig, act, old);
	prog_load(sig, &was);
	int r = act ? settle(sig, act, &got) : __real_sigaction(sig, NULL, &got);
	if (r != 0)
		return r;
	if (old)
		*old = is_ours(&got) ? was : got;
	return 0;
}

/* glibc's signal, by the wrapped sigaction: BSD semantics (the signal
 * blocked in its handler, system calls restarted). */
sighandler_t __wrap_signal(int sig, sighandler_t handler)
{
	if (!kept(sig) || handler == SIG_ERR)
		return __real_signal(sig, handler);
	struct sigaction a, was;
	memset(&a, 0, sizeof a);
	a.sa_handler = handler;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, sig);
	a.sa_flags = SA_RESTART;
	if (__wrap_sigaction(sig, &a, &was) != 0)
		return SIG_ERR;
	return was.sa_handler;
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

#ifdef FTRT_PRELOAD
#include "tracers/entry.h"

/* Preloaded: the C library's functions that set a signal's action or
 * block signals are these wrappers (tracers/entry.h). */
FTRT_INTERPOSE(sigaction);
FTRT_INTERPOSE(signal);
FTRT_INTERPOSE(sigprocmask);
FTRT_INTERPOSE(pthread_sigmask);
FTRT_REAL(int, sigaction, (int sig, const struct sigaction *act, struct sigaction *old), (sig, act, old))
FTRT_REAL(sighandler_t, signal, (int sig, sighandler_t handler), (sig, handler))
FTRT_REAL(int, sigprocmask, (int how, const sigset_t *set, sigset_t *old), (how, set, old))
FTRT_REAL(int, pthread_sigmask, (int how, const sigset_t *set, sigset_t *old), (how, set, old))
#endif
