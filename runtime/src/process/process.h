/*
 * The process layer's interface. process/ owns the process around the
 * trace: when tracing begins and ends (lifetime.c: .preinit_array, and
 * after the last destructor; it wires the layers below together), exec
 * and spawn (exec.c), _exit and _Exit (exit.c), the signals the runtime
 * takes first (trap.c: SIGTRAP for live changes, faults under the flight
 * recorder), the control socket ftpatch ctl talks to (ctl.c), and the
 * public API (ftrace.h, installed for the programs that link the
 * runtime; api.c).
 *
 * It may call every layer below it: tracers/, patch/, record/, core/,
 * arch/ and abi.h. It is the top layer, so nothing of it should be
 * reached from below but through what it registers; today patch/live.c
 * and record/trace.c still call trap.c (their interfaces say where), and
 * tracers/ and arch/ include ftrace.h for the API's types.
 */
#ifndef FTRT_PROCESS_H
#define FTRT_PROCESS_H

#include "ftrace.h"

#endif
