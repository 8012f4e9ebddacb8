/*
 * What dir.c and session.c share: the session's side of making a trace
 * directory (session.c) and the directory's side of a session (dir.c).
 */
#ifndef FTRT_SESSION_H
#define FTRT_SESSION_H

#define HIDDEN_S __attribute__((visibility("hidden")))

/* session.c: the session name in parent, opened and locked (shared),
 * when this process joins it; else -1. */
int ftrt_session_join(int parent, const char *name) HIDDEN_S;
/* session.c: write the session file into the directory fd being made:
 * 0, or -1. */
int ftrt_session_mark(int fd) HIDDEN_S;
/* session.c: the pid a new session's directory is named by beside a
 * directory in use (path.PID): its root's. */
int ftrt_session_pid(void) HIDDEN_S;
/* session.c: whether the directory fd is a session whose root process
 * (the session file's) still runs. */
int ftrt_session_running(int fd) HIDDEN_S;

/* dir.c: make (or join) the session's directory at path, as
 * ftrt_dir_make makes a trace directory; and the modes it gives files
 * and directories (FTRACE_MODE). */
int ftrt_dir_make_session(const char *path, int recorded, const char **why) HIDDEN_S;
unsigned ftrt_dir_file_mode(void) HIDDEN_S;
unsigned ftrt_dir_dir_mode(void) HIDDEN_S;

#undef HIDDEN_S
#endif
