/*
 * The tracers' layer's interface. tracers/ owns what runs at a traced
 * call: the entry assembly each ISA's sites call, its register access
 * and, on arm64, the C entry of -pg sites (tracers/x86_64/,
 * tracers/arm64/: entry.S, graph.S, ops.S, makecontext.S, fregs.c,
 * mcount.c); the function tracer and the C entry of the call-site
 * trampolines (function.c; entry.h declares the entry points);
 * function_graph (graph.c), its shadow stacks (graph.h, shadow.c,
 * take.h), its walks under the unwinder (walk.c, frames.c, unwind.c,
 * backtrace.c) and makecontext's contexts (context.c); graph users
 * (fgraph.c) and fprobe (fprobe.c), over patch/'s ops; arguments and
 * return values in the trace (capture.c, argspec.c, argread.c; a
 * module's own FTRACE_ARGS asked of ftpatch, argask.c); and what it
 * gives the layers below at start (wire.c).
 *
 * It may call patch/, record/, core/, arch/ and abi.h (and ftrace.h's
 * types, beside abi.h).
 */
#ifndef FTRT_TRACERS_H
#define FTRT_TRACERS_H

#include "argread.h"
#include "argspec.h"
#include "entry.h"
#include "fgraph.h"
#include "graph.h"
#include "patch/ops.h"
#include "take.h"

#endif
