/*
 * The record layer's interface. record/ owns the trace as it is
 * written: the record format and a thread's buffer (tracer.h), the
 * shadow stack a buffer holds (stack.h: definitions, which the tracers
 * push and pop); the state the tracers and the fast paths share
 * (state.c); records encoded into the buffer, inline in each tracer
 * (encode.h); each thread's buffer made, listed, flushed at its exit and
 * kept across fork (thread.c); a full buffer written to its thread's
 * stream (stream.c), pushed into the flight recorder's ring (ring.c) or
 * handed to the writer thread (writer.c); a snapshot of the rings
 * (snapshot.c); the metadata file (meta.c); the trace directory
 * (dir.c); the trace's opening (trace.c) and its end, with the flush
 * before an exec (end.c).
 *
 * It may call core/, arch/ and abi.h. What it needs of the tracers (to
 * take a thread's buffer, to record a thread's open calls as left at
 * its exit) it calls through tracer.h's ftrt_record_up, which the
 * tracers give it (tracers/wire.c); the end at exit and the flight
 * recorder's fatal signals are armed through ftrt_trace_arm
 * (process/lifetime.c gives both).
 */
#ifndef FTRT_RECORD_H
#define FTRT_RECORD_H

#include "encode.h"
#include "stack.h"
#include "tracer.h"

#endif
