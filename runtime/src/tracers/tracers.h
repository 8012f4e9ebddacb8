/*
 * The tracers' layer's interface. tracers/ owns what runs at a traced
 * call: the function tracer and the C entry of the call-site
 * trampolines (function.c); function_graph (graph.c), its shadow stacks
 * (graph.h, shadow.c, take.h), its walks under the unwinder (walk.c,
 * frames.c, unwind.c, backtrace.c), makecontext's contexts (context.c)
 * and subtree filters (subtree.c); ftrace_ops (ops.c), graph users
 * (fgraph.c) and fprobe (fprobe.c); arguments and return values in the
 * trace (capture.c, argspec.c, argread.c; a module's own FTRACE_ARGS
 * asked of ftpatch, argask.c). arch/arm64/mcount.c, the C entry of
 * arm64's -pg sites, is this layer's too (runtime/layers.txt names it),
 * in the ISA's folder until the ISA's entry points reach the tracers
 * through what the tracers register.
 *
 * It may call patch/, record/, core/, arch/ and abi.h. Today only
 * includes run up from it: ops.c, fgraph.c, fprobe.c, capture.c and
 * argread.c include process/ftrace.h, the public API whose types they
 * implement.
 */
#ifndef FTRT_TRACERS_H
#define FTRT_TRACERS_H

#include "argread.h"
#include "argspec.h"
#include "fgraph.h"
#include "graph.h"
#include "ops.h"
#include "take.h"

#endif
