/*
 * The record layer's interface. record/ owns the trace as it is
 * written: the record format and a thread's buffer (tracer.h); records
 * encoded into the buffer, inline in each tracer (encode.h); each
 * thread's buffer made, listed, flushed at its exit and kept across fork
 * (thread.c); a full buffer written to its thread's stream (stream.c),
 * pushed into the flight recorder's ring (ring.c) or handed to the
 * writer thread (writer.c); a snapshot of the rings (snapshot.c); the
 * metadata file (meta.c); the trace directory (dir.c); the trace's
 * opening (trace.c) and its end, with the flush before an exec (end.c).
 * tracer.h also declares the tracers' shared state and entry points,
 * until those move to tracers/tracers.h.
 *
 * It may call core/, arch/ and abi.h. Today it still reaches up, and the
 * next steps of the runtime's layering remove each of these
 * (runtime/layers.txt counts them):
 *   - thread.c asks tracers/shadow.c where a thread's shadow stack is
 *     (ftrt_stack_at) at its exit; end.c takes the thread's buffer with
 *     tracers/take.h's take before an exec; encode.h's pop_left marks a
 *     left call with tracers/graph.h's MARK_RECORDED, and tracer.h
 *     includes graph.h;
 *   - trace.c installs process/trap.c's fatal-signal handler
 *     (ftrt_trap_fatal) when the flight recorder starts;
 *   - trace.c and snapshot.c include patch/live.h.
 */
#ifndef FTRT_RECORD_H
#define FTRT_RECORD_H

#include "encode.h"
#include "tracer.h"

#endif
