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
 */
#define _GNU_SOURCE
#include <stdlib.h>
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
