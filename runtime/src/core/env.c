/*
 * The runtime's environment: every FTRACE* variable is read through
 * ftrt_env, and none is trusted in a secure-execution process.
 *
 * A process runs in secure-execution mode when the kernel says so in
 * its auxiliary vector (AT_SECURE): a setuid or setgid program, one with
 * file capabilities, or one an LSM marks. Its environment is its
 * caller's, another user's perhaps: FTRACE_OUT could name a file of the
 * program's owner to move aside, FTRACE a tracer that writes where the
 * caller chooses. So there the runtime reads no FTRACE* variable at all
 * (the C library's secure_getenv gives NULL), and writes a trace only
 * where the binary itself says, a location `ftpatch enable --trace-dir`
 * recorded in its config record, after re-checking it (dir.c); with
 * none, it traces nothing and writes nothing.
 *
 * The settings a program was started with also go to the children it
 * starts with an environment of its own that holds no FTRACE* variable
 * (execve, execle, execvpe, fexecve, execveat, posix_spawn,
 * posix_spawnp: exec.c), so that such a child is traced as a child that
 * inherits the environment is; FTRACE_INHERIT=0 says not to. Nothing is
 * passed on from a secure-execution process.
 *
 * Preloaded (FTRT_PRELOAD), the child needs the runtime too: its
 * program, linked without it, is traced only with the runtime's shared
 * object preloaded. So the LD_PRELOAD entry this process started with
 * goes with the settings, to a child whose environment has no LD_PRELOAD
 * of its own (one that has keeps it: the program chose what its child
 * preloads, and that child runs untraced unless it names the runtime).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "ftrt.h"

int ftrt_secure(void)
{
	static int secure = -1;
	if (secure < 0)
		secure = getauxval(AT_SECURE) != 0;
	return secure;
}

const char *ftrt_env(const char *name)
{
	if (ftrt_secure())
		return NULL;
	return secure_getenv(name);
}

/* The FTRACE* entries of the environment the process started with
 * ("NAME=value", the C library's own strings, which outlive any setenv
 * or unsetenv), for children given an environment of their own. */
#define SETTINGS_MAX 24
static const char *settings[SETTINGS_MAX];
static int nsettings;
#define PRELOAD_VAR "LD_PRELOAD="
/* Preloaded, the process's LD_PRELOAD entry, which names the runtime;
 * NULL when there are no settings to pass on, or linked. */
static const char *preload;

extern char **environ;

void ftrt_env_capture(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	const char *inherit = ftrt_env(ENV_INHERIT);
	if (ftrt_secure() || (inherit && strcmp(inherit, "0") == 0) || !environ)
		return;
	for (char **e = environ; *e && nsettings < SETTINGS_MAX; e++)
		if (strncmp(*e, ENV_PREFIX, sizeof ENV_PREFIX - 1) == 0 && strchr(*e, '='))
			settings[nsettings++] = *e;
#ifdef FTRT_PRELOAD
	for (char **e = environ; *e && nsettings; e++)
		if (strncmp(*e, PRELOAD_VAR, sizeof PRELOAD_VAR - 1) == 0)
			preload = *e;
#endif
}

/* A child's environment bigger than this is left as the program made it:
 * its copy is made on the stack, which an exec in a child of vfork may
 * use (it shares its parent's memory: an mmap would be the parent's). */
#define CHILD_ENV_MAX 1024

/* Whether the child's environment envp needs the process's LD_PRELOAD
 * entry: preloaded, and envp has none. */
static int needs_preload(char *const envp[])
{
	if (!preload)
		return 0;
	for (size_t n = 0; envp && envp[n]; n++)
		if (strncmp(envp[n], PRELOAD_VAR, sizeof PRELOAD_VAR - 1) == 0)
			return 0;
	return 1;
}

size_t ftrt_child_env_size(char *const envp[])
{
	size_t n = 0;
	if (nsettings == 0)
		return 0;
	for (; envp && envp[n]; n++) {
		if (strncmp(envp[n], ENV_PREFIX, sizeof ENV_PREFIX - 1) == 0)
			return 0; /* the program chose the child's settings */
		if (n >= CHILD_ENV_MAX)
			return 0;
	}
	return n + (size_t)nsettings + (size_t)needs_preload(envp) + 1;
}

void ftrt_child_env_fill(char **out, char *const envp[])
{
	size_t n = 0;
	int add = needs_preload(envp);
	for (; envp && envp[n]; n++)
		out[n] = envp[n];
	for (int i = 0; i < nsettings; i++)
		out[n++] = (char *)settings[i];
	if (add)
		out[n++] = (char *)preload;
	out[n] = NULL;
}
