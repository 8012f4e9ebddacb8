/*
 * Between the scheduler events' files (record/sched.c, which opens the
 * events and reads their rings; record/schedwhy.c, which says why it
 * could not; record/schedout.c, where what is read goes): what the
 * metadata says is tracer.h's (ftrt_sched_state, ftrt_sched_why, the
 * counts).
 */
#ifndef FTRT_SCHED_H
#define FTRT_SCHED_H

#include <stddef.h>
#include <stdint.h>

#ifndef HIDDEN
#define HIDDEN __attribute__((visibility("hidden")))
#endif

/* n bytes from in to out, and the length of s, without the C library
 * (the reader thread calls nothing through the program's PLT). */
void ftrt_sched_copy(void *out, const void *in, size_t n) HIDDEN;
size_t ftrt_sched_length(const char *s) HIDDEN;
/* ftrt_sched_why += s, within its size. */
void ftrt_sched_why_add(const char *s) HIDDEN;
/* The kernel refused call with -err: no events (SCHED_STATE_REFUSED),
 * ftrt_sched_why saying what failed, its error's name and what to
 * change (kernel.perf_event_paranoid, a seccomp filter, a container). */
void ftrt_sched_refuse(const char *call, long err) HIDDEN;

/* Where the drained events go (schedout.c), with sched.c's lock held:
 * the file, or the flight recorder's ring (ftrt_sched_out_ring, at the
 * start: 0 or -errno); the ring to the file at the end, into a
 * snapshot's directory; nothing of the parent's in a forked child. */
long ftrt_sched_out_ring(uint64_t thread_ring) HIDDEN;
int ftrt_sched_out_put(int pid, const uint64_t *chunks, uint64_t w) HIDDEN;
void ftrt_sched_out_end(int pid) HIDDEN;
int ftrt_sched_out_snapshot(int pid, int dir) HIDDEN;
void ftrt_sched_out_fork(void) HIDDEN;

#endif
