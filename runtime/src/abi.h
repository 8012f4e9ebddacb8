/*
 * The runtime's interface with ftpatch, defined once: what the runtime
 * writes and what ftpatch reads or writes in its place. The records of a
 * trace's streams, the trace directory's metadata keys, the config
 * record that `ftpatch enable` rewrites, the names of the hooks,
 * trampolines and entry points ftpatch looks up in a linked file, and the
 * layout of the per-site graph trampolines.
 *
 * Go's package ftpatch/runtime/abi mirrors every value here (each Go
 * name's comment names its macro); its test TestHeader compiles a
 * program that includes this header and prints every value, size and
 * offset, and fails on any that differs from the Go side's, or on a
 * #define here the Go side lacks. Change a value on both sides together.
 *
 * Plain preprocessor values and one struct, so the assembly (entry.S)
 * can include it too: the struct only where C reads it.
 */
#ifndef FTRT_ABI_H
#define FTRT_ABI_H

/*
 * A trace directory (trace.c writes it, Go's package trace reads it):
 * META_FILE, key value lines (the keys below), and a stream per thread,
 * <pid>-<tid>[-<n>]STREAM_SUFFIX, a STREAM_HEADER-byte header
 * (STREAM_MAGIC, pid, tid: u32 LE) followed by records.
 */
#define META_FILE "meta"
/*
 * A session (dir.c): everything one recording traced, a process tree, in
 * one directory: SESSION_FILE, whose first line is SESSION_MAGIC, and a
 * directory per process image (a process, or what it exec'd) holding a
 * trace directory's files as above, named "PID@START" for a process's
 * first image (START: its start time, /proc/PID/stat's, so a pid used
 * again is another name) and "PID@START.N" for the Nth.
 */
#define SESSION_FILE "session"
#define SESSION_MAGIC "ftrt-session 1"
#define SESSION_ROOT "root" /* the session file's second line: "root PID@START", the process the session is rooted at */
#define STREAM_SUFFIX ".trace"
#define STREAM_MAGIC "ftrtrec4" /* 8 bytes, no NUL: format 4's records */
#define STREAM_HEADER 16
/*
 * A process's scheduler events (record/sched.c): when each of its
 * traced threads left the CPU and ran again, as the kernel's
 * context-switch records gave them. One file per process in its trace
 * directory, "<pid>SCHED_SUFFIX": a SCHED_HEADER-byte header
 * (SCHED_MAGIC, pid: u32 LE, 0: u32 LE), then chunks, each one thread's
 * events from one read of the kernel's ring, in time order: a word
 * tid | count << 32, then count words, each an event: its time (the
 * trace's clock, as the records') << SCHED_KIND_BITS | its kind.
 */
#define SCHED_SUFFIX ".sched"
#define SCHED_MAGIC "ftrtsch1" /* 8 bytes, no NUL */
#define SCHED_HEADER 16
#define SCHED_KIND_BITS 2
#define SCHED_IN 0      /* the thread ran again */
#define SCHED_SLEEP 1   /* it left the CPU blocked: it slept (I/O, a lock, a timer, a wait) */
#define SCHED_PREEMPT 2 /* it left the CPU runnable: pre-empted (or it yielded) */

/*
 * Prologue sites made at load (ftpatch record -P). The runtime asks the
 * server on ENV_PROLOGUE_SOCKET about each module it passes over:
 *
 *   runtime: "BUILD-ID PATH\n"  (BUILD-ID "-" for none; PATH the file the
 *            loader mapped)
 *   server:  PLAN_HEADER bytes: PLAN_MAGIC, count: u32, image: u32 (the
 *            trampolines' bytes; 0, 0 when the module gets none, and the
 *            server closes), then where to map them first: an address
 *            less the module's load bias (u64, modulo 2^64), for which
 *            the server has them made already (just below the module)
 *   runtime: the trampolines' address less the module's load bias: u64
 *            (modulo 2^64), where it has mapped image bytes in reach
 *   server:  status: u32 (PLAN_OK; PLAN_FAR: the place is out of reach
 *            of a moved instruction's operand, try another; PLAN_NONE:
 *            the module gets no site after all), the entries' bytes: u32,
 *            then the image, then count entries, in the order of their
 *            functions' addresses, each a PLAN_ENTRY_HEAD-byte head: the
 *            function's address less the bias (u64), the patch's (u64),
 *            the site's offset in the image (u32), the patch's length,
 *            len (u32, at most PLAN_PATCH_MAX); then the len bytes there
 *            now and the len bytes of the jump that replaces them,
 *            zero-padded to a multiple of 8.
 *
 * All words little-endian. The runtime checks each patch's bytes before
 * it writes its jump, and leaves a function whose bytes differ alone.
 * It writes what it made, "<pid>PROLOGUE_SUFFIX" in the trace directory:
 * a PROLOGUE_HEADER-byte header (PROLOGUE_MAGIC, pid: u32, 0: u32), then
 * a pair of words per site: the site's run-time address (in its
 * trampoline: what the records hold) and its function's, by which a
 * reader names it.
 */
#define PLAN_MAGIC "ftrtpla1" /* 8 bytes, no NUL */
#define PLAN_HEADER 24
#define PLAN_OK 0
#define PLAN_FAR 1
#define PLAN_NONE 2
#define PLAN_PATCH_MAX 24
#define PLAN_ENTRY_HEAD 24 /* 8 + 8 + 4 + 4 */
#define PROLOGUE_SUFFIX ".prologue"
#define PROLOGUE_MAGIC "ftrtpro1" /* 8 bytes, no NUL */
#define PROLOGUE_HEADER 16

/*
 * Records (format 4; tracer.h describes them): little-endian 64-bit
 * words. A record's first word's top two bits (from REC_KIND_SHIFT) are
 * its kind; CALL and ENTRY pack the time since the stream's last record
 * (the delta) above the site, EXIT the delta alone; EXT records say what
 * they are in the next four bits (from REC_EXT_BITS), a sub-kind, and
 * hold a delta of up to 58 bits.
 */
#define REC_KIND_SHIFT 62   /* a record's kind: w0 >> 62 */
#define REC_CALL 0          /* w0 = delta << 47 | site; parent ip */
#define REC_ENTRY 1         /* w0 = 1 << 62 | delta << 47 | site */
#define REC_EXIT 2          /* w0 = 2 << 62 | delta */
#define REC_EXT 3           /* w0 = 3 << 62 | sub << 58 | payload */
#define REC_DELTA_BITS 15   /* a CALL's or ENTRY's delta: under 2^15 */
#define REC_SITE_BITS 47    /* a CALL's or ENTRY's site: under 2^47 */
#define REC_DELTA_MAX 0x7fff /* 2^15 - 1: the largest delta a CALL or ENTRY holds */
#define REC_EXIT_BITS 62    /* an EXIT's delta: under 2^62 */
#define REC_EXT_BITS 58     /* an EXT record's payload; its sub-kind above it */
#define REC_EXT_SUB_BITS 4  /* an EXT record's sub-kind: bits 58-61 */
/* Words of a record of each kind; 0: EXT, whose sub-kind says. */
#define REC_WORDS { [REC_CALL] = 2, [REC_ENTRY] = 1, [REC_EXIT] = 1, [REC_EXT] = 0 }

/* EXT sub-kinds; EXT_RESERVED up to 15 are reserved (an error to read). */
#define EXT_UNWOUND 0   /* payload delta; 1 word */
#define EXT_TIME 1      /* payload 0; the stream's clock is set to w1; 2 words */
#define EXT_CONTEXT 2   /* payload delta; w1 = context id; 2 words */
#define EXT_LONGENTRY 3 /* payload delta; w1 = site; 2 words */
#define EXT_LONGCALL 4  /* payload delta; w1 = site, w2 = parent ip; 3 words */
#define EXT_WRAPPED 5   /* payload: words of earlier records the flight recorder's ring overwrote; no time; 1 word */
#define EXT_ARGS 6      /* payload: words after w0 (ARG_WORDS_MASK); no time; w1 = site, w2 = items, then each: the arguments of the call whose CALL or ENTRY follows */
#define EXT_RETVAL 7    /* as EXT_ARGS, one item: the return value of the call whose EXIT follows */
#define EXT_SUMMARY 8   /* payload: words after w0 (SUM_WORDS - 1 or more); no time; the stream's counts (SUM_*): format 4 */
#define EXT_RESERVED 9  /* the first reserved sub-kind */
/* Words of a record of each sub-kind (1 << REC_EXT_SUB_BITS of them); 0:
 * reserved, or EXT_ARGS, EXT_RETVAL and EXT_SUMMARY, whose payload says. */
#define EXT_WORDS { [EXT_UNWOUND] = 1, [EXT_TIME] = 2, [EXT_CONTEXT] = 2, [EXT_LONGENTRY] = 2, [EXT_LONGCALL] = 3, [EXT_WRAPPED] = 1 }

/*
 * An EXT_ARGS or EXT_RETVAL record (FTRACE_ARGS, FTRACE_RETVAL: capture.c)
 * precedes the CALL or ENTRY of its call (the site in w1 names it), or
 * its EXIT (a TIME may come between). w2 holds how many items (its low ARG_TYPE_BITS) and
 * each item's type (ARG_TYPE_BITS each above it, the first lowest);
 * each item is one word, a string's more: w = its length (ARG_LEN_MASK)
 * | ARG_TRUNCATED | ARG_UNREADABLE, then the bytes (w of them, padded
 * to a word with zeros), or, unreadable, the pointer. A long double is
 * two words, its 16 bytes as memory holds them (ARG_F80: the x87's
 * 80-bit extended format in the low 10, the rest undefined; ARG_F128:
 * IEEE binary128). A struct is its bytes as a string's are (length
 * word, bytes; or ARG_UNREADABLE and the address it could not be read
 * at), then its layout, the text of its format ({i32,i32}: package
 * ftpatch/trace's Layout reads it), as a string's (length word, bytes).
 * Traces without types 12-14 read as before.
 */
#define ARG_WORDS_MASK 0xffff /* an EXT_ARGS's, EXT_RETVAL's or EXT_SUMMARY's payload: the words after w0 */
#define ARG_TYPE_BITS 4
#define ARG_MAX 15     /* items a record holds at most */
#define ARG_INT 1      /* a signed integer, sign-extended from its bits: in decimal */
#define ARG_UINT 2     /* an unsigned integer, zero-extended from its bits: in hex */
#define ARG_PTR 3      /* a pointer: in hex */
#define ARG_DOUBLE 4   /* a double's bits */
#define ARG_STRING 5   /* a C string: length word, then bytes or the pointer */
#define ARG_CHAR 6     /* a char: the low 8 bits */
#define ARG_UDEC 7     /* an unsigned integer, zero-extended from its bits: in decimal */
#define ARG_FLOAT 8    /* a float's bits: the low 32 */
#define ARG_BOOL 9     /* a bool: the low 8 bits, 0 false, 1 true */
#define ARG_ENUM 10    /* an enum: the register, then its enum's name as a string's (length word, bytes) */
#define ARG_NONE 11    /* a value not read (shown as ?): no word */
#define ARG_F80 12     /* an x87 long double (80-bit extended): two words, its 16 bytes in memory */
#define ARG_F128 13    /* an IEEE binary128 (arm64's long double, x86-64's __float128): two words */
#define ARG_STRUCT 14  /* a struct: its bytes as a string's, then its layout's text as a string's */
#define ARG_STRUCT_MAX 32 /* a struct's bytes recorded at most */
#define ARG_LAYOUT_MAX 64 /* a struct's layout's text: at most this many bytes */
#define ARG_STACK_MAX 512 /* the bytes of the stack arguments an item may read: stack+OFF and argN past the registers end within them */
#define ARG_ENUM_MAX 64 /* an enum's name: at most this many bytes */
#define ARG_LEN_MASK 0xffff
#define ARG_TRUNCATED (1ull << 16) /* longer than ARG_STRING_MAX bytes: these are its first */
#define ARG_UNREADABLE (1ull << 17) /* the pointer could not be read: it follows */
#define ARG_STRING_MAX 96

/*
 * An EXT_SUMMARY record ends a thread's stream (format 4; stream.c writes
 * it): what the stream holds, counted by the runtime as it recorded, so
 * a reader need not read the records to say it. Its words, by index (w0
 * is the record's first word): a reader finds it from the stream's end,
 * whose last word repeats w0 (SUM_END) and the word before says where
 * the record begins (SUM_POS). Written again when a stream goes on after
 * one (an exec that failed): the last one counts all. A stream without
 * one (the program was killed, the thread's records were lost) is read
 * record by record. Later fields, if any, go before SUM_POS.
 */
#define SUM_CALLS 1    /* CALL and LONGCALL records */
#define SUM_ENTRIES 2  /* ENTRY and LONGENTRY records */
#define SUM_EXITS 3    /* EXIT records */
#define SUM_UNWOUND 4  /* UNWOUND records */
#define SUM_FIRST 5    /* the time of the stream's first record that has one */
#define SUM_LAST 6     /* the stream's clock at its end: its last record's time */
#define SUM_FLAGS 7    /* SUM_COUNTED */
#define SUM_NAME 8     /* 2 words: the thread's name (PR_GET_NAME), NUL-padded, at the stream's end */
#define SUM_NAME_BYTES 16
#define SUM_POS 10     /* the words of records before this one in the stream */
#define SUM_END 11     /* w0 again */
#define SUM_WORDS 12
/* SUM_FLAGS: the counts are the stream's, every record of it counted
 * once: not so under the flight recorder (its ring overwrote records),
 * when records were lost before the stream or in it, when the thread ran
 * in makecontext contexts (whose calls nest apart), or in a forked child
 * whose process had made any. The name is good either way. */
#define SUM_COUNTED 1

/*
 * The runtime's environment variables (env.c reads each, and none in a
 * secure-execution process; `ftpatch record` sets them: package launch).
 */
#define ENV_PREFIX "FTRACE" /* what every variable of the runtime's starts with (env.c passes them on across exec) */
#define ENV_TRACER "FTRACE" /* the tracer: FTRT_TRACER_*_NAME */
#define ENV_OUT "FTRACE_OUT" /* the trace directory */
#define ENV_SESSION "FTRACE_SESSION" /* PID@START: the process a new session is rooted at (ftpatch record), when an ancestor */
#define ENV_FILTER "FTRACE_FILTER" /* globs of the functions whose sites are enabled */
#define ENV_LIBCALL "FTRACE_LIBCALL" /* 1: calls into shared libraries traced too, through their GOT slots (patch/libcall.c) */
#define ENV_DEPTH "FTRACE_DEPTH" /* at most this many nested calls graphed */
#define ENV_THRESH "FTRACE_THRESH" /* no call shorter than this that called nothing traced */
#define ENV_GRAPH_FUNCS "FTRACE_GRAPH_FUNCS" /* only the subtrees of these functions' calls */
#define ENV_GRAPH_NOTRACE "FTRACE_GRAPH_NOTRACE" /* nothing inside these functions' calls */
#define ENV_CLOCK "FTRACE_CLOCK" /* META_CLOCK_MONO: CLOCK_MONOTONIC instead of the TSC */
#define ENV_MODE "FTRACE_MODE" /* who may read the trace: 0640 its group, 0644 everyone (0600 unset) */
#define ENV_INHERIT "FTRACE_INHERIT" /* 0: exec and spawn do not pass the settings on */
#define ENV_DEBUG "FTRACE_DEBUG" /* print what the load-time pass did */
#define ENV_NOP "FTRACE_NOP" /* the NOPs the pass writes: p6, k8 or jmp (tests of the fallbacks) */
#define ENV_CTL "FTRACE_CTL" /* 1: listen on a control socket for ftpatch ctl (ctl.c) */
#define ENV_BUFFER "FTRACE_BUFFER" /* BUFFER_STREAM (default), BUFFER_RING ":SIZE" (the flight recorder) or BUFFER_WRITER */
#define ENV_ARGS "FTRACE_ARGS" /* arguments to record: func@arg1,arg2/s,fparg1;glob@... (capture.c) */
#define ENV_RETVAL "FTRACE_RETVAL" /* return values to record: func[/fmt];glob... (function_graph) */
#define ENV_LIBARGS "FTRACE_LIBARGS" /* FTRACE_ARGS's entries for library calls alone, after its own (ftpatch record --auto-args's prototype table: capture.c) */
#define ENV_LIBRETVAL "FTRACE_LIBRETVAL" /* FTRACE_RETVAL's entries for library calls alone, after its own */
#define ENV_ARGS_SOCKET "FTRACE_ARGS_SOCKET" /* a unix socket that gives each module's own FTRACE_ARGS and FTRACE_RETVAL (capture.c) */
#define ENV_SCHED "FTRACE_SCHED" /* 1: the traced threads' context switches recorded (sched.c); 0 or unset: not */
#define ENV_PROLOGUE_SOCKET "FTRACE_PROLOGUE_SOCKET" /* a unix socket that gives each module's prologue plan (ftpatch record -P: patch/prologue.c) */

/*
 * The metadata (meta.c's writer): one "key value" line each, in
 * this order; META_KEY_MODULE once per module. A reader ignores a key it
 * does not know.
 */
#define META_FORMAT "ftrt-trace 4" /* META_KEY_FORMAT's value: streams of STREAM_MAGIC */
#define META_RECORDS_WORDS "words"   /* META_KEY_RECORDS's value */
#define META_CLOCK_TSC "tsc"         /* META_KEY_CLOCK's values: rdtsc ticks... */
#define META_CLOCK_MONO "mono"       /* ...or CLOCK_MONOTONIC ns */
#define META_KEY_FORMAT "format"
#define META_KEY_RECORDS "records"
#define META_KEY_CLOCK "clock"
#define META_KEY_TRACER "tracer" /* FTRT_TRACER_FUNCTION or FTRT_TRACER_GRAPH */
#define META_KEY_EXE "exe"
#define META_KEY_CMDLINE "cmdline"
#define META_KEY_BUILD_ID "build_id"
#define META_KEY_ENDED "ended"
#define META_KEY_PID "pid"
#define META_KEY_PPID "ppid"                   /* the parent process when the image started */
#define META_KEY_IMAGE "image"                 /* which image of its process: 1, then one more at each exec */
#define META_KEY_FORKED "forked"               /* 1: the image of a child forked without an exec (its parent's program) */
#define META_KEY_BIAS "bias"
#define META_KEY_TSC_START "tsc_start"
#define META_KEY_TSC_END "tsc_end"
#define META_KEY_TSC_HZ "tsc_hz" /* the counter's rate, where the architecture gives it (arm64's cntfrq_el0) */
#define META_KEY_MONO_START "mono_start_ns"
#define META_KEY_MONO_END "mono_end_ns"
#define META_KEY_SITES "sites"
#define META_KEY_ENABLED "enabled"
#define META_KEY_SKIPPED "skipped"
#define META_KEY_FAILED "failed"
#define META_KEY_UNSUPPORTED "unsupported"
#define META_KEY_LITERAL "literal"       /* enabled sites served through their pre-function literal (arm64 =4,2) */
#define META_KEY_MISALIGNED "misaligned" /* sites with a pre-function slot not 8-byte aligned: the shared path */
#define META_KEY_LIBCALL_SLOTS "libcall_slots"           /* GOT slots of other modules' functions (FTRACE_LIBCALL) */
#define META_KEY_LIBCALL_HOOKED "libcall_hooked"         /* of those, redirected: their calls traced */
#define META_KEY_LIBCALL_UNRESOLVED "libcall_unresolved" /* chosen, but whose function could not be found */
#define META_KEY_LIBCALL_FAILED "libcall_failed"         /* chosen, but that could not be written */
#define META_KEY_PROLOGUE_SITES "prologue_sites"     /* sites made from functions' prologues (record -P, ftpatch instrument) */
#define META_KEY_PROLOGUE_CHANGED "prologue_changed" /* record -P's functions left alone: their bytes were not the file's */
#define META_KEY_DROPPED "dropped"
#define META_KEY_OVERFLOW "overflow"
#define META_KEY_UNWOUND "unwound"
#define META_KEY_STOPPED "stopped"
#define META_KEY_LOST_BYTES "lost_bytes"
#define META_KEY_RECORDED_BYTES "recorded_bytes"
#define META_KEY_LOST_THREADS "lost_threads"
#define META_KEY_CONTEXTS "contexts"
#define META_KEY_CONTEXTS_LOST "contexts_lost"
#define META_KEY_MAX_DEPTH "max_depth"
#define META_KEY_THRESH_TSC "thresh_tsc"
#define META_KEY_GRAPH_FUNCS "graph_funcs"
#define META_KEY_GRAPH_NOTRACE "graph_notrace"
#define META_KEY_CONFIG "config" /* an FTRT_CFG_STATE_NAME_* */
#define META_KEY_MODULE "module"
#define META_KEY_MODULES_FORGOTTEN "modules_forgotten"
#define META_KEY_BUFFER "buffer"                /* BUFFER_STREAM, BUFFER_RING or BUFFER_WRITER */
#define META_KEY_RING_BYTES "ring_bytes"        /* a thread's ring, when the buffer is BUFFER_RING */
#define META_KEY_RING_ASKED "ring_asked_bytes"  /* what FTRACE_BUFFER asked for it (ring_bytes: rounded up to a segment, at most 96 GiB) */
#define META_KEY_OVERWRITTEN "overwritten_bytes" /* records the rings overwrote: not in the trace */
#define META_KEY_SIGNAL "signal"                /* the fatal signal whose handler ended the trace (ring) */
#define META_KEY_DETACHED "detached"            /* 1: ftpatch record -p ended the trace (ctl end), and the process ran on */
#define META_KEY_EXIT_CODE "exit_code"          /* what the program passed to exit or _exit, or main returned (its low 8 bits) */
#define META_KEY_COMM "comm"                    /* the process's name (/proc/self/comm) when the metadata was written */
/* getrusage(RUSAGE_SELF) at the trace's end (the process alone, every
 * thread; not its children), but for its peak resident set: */
#define META_KEY_RU_UTIME "ru_utime_us"   /* user CPU time, microseconds */
#define META_KEY_RU_STIME "ru_stime_us"   /* system CPU time, microseconds */
#define META_KEY_RU_MAXRSS "ru_maxrss_kb" /* the program image's largest resident set (VmHWM), KiB */
#define META_KEY_RU_MINFLT "ru_minflt"    /* page faults served without I/O */
#define META_KEY_RU_MAJFLT "ru_majflt"    /* page faults that read from disk */
#define META_KEY_RU_INBLOCK "ru_inblock"  /* blocks read by the file system */
#define META_KEY_RU_OUBLOCK "ru_oublock"  /* blocks written */
#define META_KEY_RU_NVCSW "ru_nvcsw"      /* voluntary context switches */
#define META_KEY_RU_NIVCSW "ru_nivcsw"    /* involuntary context switches */
/* Scheduler events (FTRACE_SCHED=1): */
#define META_KEY_SCHED "sched"                   /* SCHED_ON, or SCHED_REFUSED: the kernel would not give them */
#define META_KEY_SCHED_WHY "sched_why"           /* why (SCHED_REFUSED, or what stopped them): the call, the error's name, what to change */
#define META_KEY_SCHED_SWITCHES "sched_switches" /* the times a traced thread left the CPU, recorded */
#define META_KEY_SCHED_LOST "sched_lost"         /* scheduler events lost: the kernel's ring was full, or the file could not be written */
#define SCHED_ON "on"
#define SCHED_REFUSED "refused"
#define BUFFER_STREAM "stream" /* full buffers written to the threads' streams by the threads themselves */
#define BUFFER_RING "ring"     /* the flight recorder: each thread's last records kept in memory */
#define BUFFER_WRITER "writer" /* full buffers written by a writer thread */

/*
 * The tracers: the config record's tracer field, FTRACE's values (by
 * name) and META_KEY_TRACER's (function and function_graph).
 */
#define FTRT_FUNCTION 1 /* every call recorded */
#define FTRT_GRAPH 2    /* calls and returns */
#define FTRT_NOP 3      /* sites call ftrace_stub: records nothing */
#define FTRT_TRACER_FUNCTION "function"
#define FTRT_TRACER_GRAPH "function_graph"
#define FTRT_TRACER_NOP "nop"

/*
 * The config record (config.c), in its own section FTRT_CFG_SECTION,
 * which `ftpatch enable` and `ftpatch disable` rewrite in the linked file
 * (Go: package patch). Fixed size, little-endian, no padding: 1336 bytes.
 */
#define FTRT_CFG_SECTION ".ftrt_config"
#define FTRT_CFG_SIZE 1336
#define FTRT_CFG_TRACE_DIR_MAX 256
#define FTRT_CFG_LIBCALLS_MAX 1024
#define FTRT_CFG_MAGIC { 'f', 't', 'r', 't', 'c', 'f', 'g', '1' }
/* ftpatch wrote every site: each is a NOP or a call to the trampoline its
 * kind calls, so the load-time pass only checks, and writes nothing. */
#define FTRT_CFG_PATCHED 1u
/* The file has no site table: ftpatch found its sites by decoding function
 * entries. The pass has nothing to check them against; it starts the
 * recorded tracer on the record's word (ftpatch verify checks the file). */
#define FTRT_CFG_NOTABLE 2u
/* ftpatch enable --ctl: the program listens for ftpatch ctl as with
 * FTRACE_CTL=1 (which FTRACE_CTL=0 overrides), never in a secure-execution
 * process. */
#define FTRT_CFG_CTL 4u
/* ftpatch enable --libcall: the library functions the record's libcalls
 * list names are traced where the module calls them (as with
 * FTRACE_LIBCALL=1 and that list as the filter), when its tracer is
 * function or function_graph. */
#define FTRT_CFG_LIBCALL 8u

/* What the load-time pass made of the record (the config field of its struct ftrt_stats), and its
 * name for the trace's metadata (META_KEY_CONFIG). */
#define FTRT_CFG_STATE_NONE 0       /* not patched: the environment decides */
#define FTRT_CFG_STATE_PATCHED 1    /* pre-patched: sites checked, nothing written, the recorded tracer started */
#define FTRT_CFG_STATE_OVERRIDDEN 2 /* pre-patched, but FTRACE or FTRACE_FILTER was set: the normal pass ran */
#define FTRT_CFG_STATE_MISMATCH 3   /* the record disagrees with the table: ignored, the normal pass ran */
#define FTRT_CFG_STATE_NAMES { "none", "patched", "overridden", "mismatch" }

#ifndef __ASSEMBLER__
#include <stdint.h>
struct ftrt_config {
	char magic[8];      /* FTRT_CFG_MAGIC: "ftrtcfg1", no NUL */
	uint32_t size;      /* sizeof(struct ftrt_config): a reader refuses another size */
	uint32_t tracer;    /* 0: nothing baked in; else FTRT_FUNCTION, FTRT_GRAPH or FTRT_NOP */
	uint32_t flags;     /* FTRT_CFG_PATCHED, FTRT_CFG_NOTABLE, FTRT_CFG_CTL, FTRT_CFG_LIBCALL */
	uint32_t reserved;  /* 0 */
	uint64_t sites;     /* table entries ftpatch wrote (non-zero, distinct): the pass's own count must agree */
	uint64_t enabled;   /* of which calls into the runtime */
	uint64_t list_hash; /* hash of the normalised function list (ftpatch's; the runtime ignores it) */
	uint64_t text_hash; /* hash of the executable segments with sites masked (for ftpatch verify) */
	/* ftpatch enable --trace-dir: where the program traces, an absolute
	 * path NUL-padded; "" for none. The only place a secure-execution
	 * process (setuid, setgid, file capabilities) writes a trace, after
	 * dir.c re-checks it; elsewhere FTRACE_OUT wins over it. A shared
	 * object's is empty (its trace is its program's). */
	char trace_dir[FTRT_CFG_TRACE_DIR_MAX];
	/* ftpatch enable --libcall: the library functions whose calls the
	 * module's pass hooks (FTRT_CFG_LIBCALL), FTRACE_FILTER's syntax,
	 * NUL-padded; "" for none. */
	char libcalls[FTRT_CFG_LIBCALLS_MAX];
};
_Static_assert(sizeof(struct ftrt_config) == FTRT_CFG_SIZE, "struct ftrt_config is FTRT_CFG_SIZE bytes");
#endif

/*
 * The site table a module's sites are listed in (one address a word),
 * which the linker brackets with __start_ and __stop_ symbols.
 */
#define FTRT_TABLE_SECTION "__mcount_loc"

/*
 * ftpatch instrument's table of prologue sites (a section of this name,
 * SHF_ALLOC, in the loadable segment instrument adds to a linked file):
 * one entry of FTRT_PROLOGUE_ENTRY bytes per function whose first
 * instructions it moved into a trampoline, two little-endian words: the
 * site (the trampoline's first bytes: an ordinary disabled entry site,
 * x86-64 one 5-byte NOP, arm64 two NOPs) and the function's address.
 * Both are the file's addresses (load bias 0): the file has no
 * relocation for them, so a reader adds the module's load bias.
 */
#define FTRT_PROLOGUE_SECTION "__ftrt_prologue"
#define FTRT_PROLOGUE_ENTRY 16

/*
 * Where ftpatch finds the runtime in a process it did not start
 * (ftpatch ctl PID on a process started without FTRACE_CTL): a section
 * of this name, allocated, in the program that links the runtime and in
 * the preloadable libftrt.so, holding one word, the address of the
 * runtime's attach entry (process/ctl.c's ftrt_attach), relocated by the
 * loader. ftpatch reads the word from the process's memory, at the
 * section's address plus the object's load bias, and makes a thread of
 * the process call it through ptrace: long ftrt_attach(void), 0 or
 * -errno. The section's name is kept by strip, unlike a symbol.
 */
#define FTRT_ATTACH_SECTION "__ftrt_attach"

/*
 * The entry points ftpatch looks for in a linked file (patch.Load) and
 * names on the link line (ftpatch flags --libs): the runtime's load-time
 * pass, which only a program linking the runtime defines; the module
 * stub's constructor, which only a shared object linking the stub
 * defines; the registration a program exports to its modules' stubs.
 */
#define FTRT_SYM_INIT "ftrt_init"
#define FTRT_SYM_PREINIT "ftrt_preinit" /* the program's .preinit_array function (lifetime.c), which starts the pass */
#define FTRT_SYM_MODULE_INIT "ftrt_module_init"
#define FTRT_SYM_MODULE_REGISTER "ftrt_module_register"
#define FTRT_SYM_MODULE_UNREGISTER "ftrt_module_unregister"
#define FTRT_SYM_MODULE_SLOTS "ftrt_module_slots" /* the stub's jump slots (module/x86_64/entry.S) */
#define FTRT_SYM_GRAPH_ENTER "ftrace_graph_enter" /* what a per-site trampoline calls... */
#define FTRT_SYM_GRAPH_LEAVE "ftrace_graph_leave" /* ...and jumps to on the function's return */
/* What the trampoline of an x86-64 site made from a prologue calls and
 * jumps to instead (entered past its lea: they keep every register). */
#define FTRT_SYM_PROLOGUE_GRAPH_ENTER "ftrace_prologue_graph_enter"
#define FTRT_SYM_PROLOGUE_GRAPH_LEAVE "ftrace_prologue_graph_leave"
/* What an arm64 site made from a prologue calls, `mov x17, x30; bl ...`:
 * the tracers' entry, and the empty tracer's. */
#define FTRT_SYM_PROLOGUE_CALLER "ftrace_prologue_caller"
#define FTRT_SYM_PROLOGUE_STUB "ftrace_prologue_stub"

/*
 * x86-64's hooks and trampolines, in the order of a module's targets[]
 * (ftrt.h: FTRT_T_<id>): X(id, symbol) for each. The hooks are what the
 * compiler calls; the trampolines what an enabled site calls (the
 * runtime writes the calls at load time, `ftpatch enable` into the file),
 * the one its kind, length and tracer say.
 */
#define FTRT_TARGETS_X86_64(X)                                                                  \
	X(FENTRY, __fentry__)               /* -mfentry's hook: a call at a function's entry */ \
	X(MCOUNT, mcount)                   /* -pg's hook: a call after the prologue */         \
	X(CALLER5, ftrace_caller5)          /* an entry site, e8 rel32 */                       \
	X(CALLER6, ftrace_caller6)          /* an entry site, 67 e8 rel32 */                    \
	X(MCALLER5, ftrace_mcount_caller5)  /* a -pg site, e8 rel32 */                          \
	X(MCALLER6, ftrace_mcount_caller6)  /* a -pg site, 67 e8 rel32 */                       \
	X(CHAIN5, ftrace_chain_caller5)     /* a chain site (push %r10 first), e8 rel32 */      \
	X(CHAIN6, ftrace_chain_caller6)     /* a chain site, 67 e8 rel32 */                     \
	X(STUB, ftrace_stub)                /* the empty tracer (FTRACE=nop), from any site */

/*
 * arm64's hook and trampolines (arch/arm64/entry.S), in the order of a
 * module's targets[]: X(id, symbol) for each. -pg's hook; ftrace_caller,
 * which a patchable area calls from its second word (`mov x9, x30; bl
 * ftrace_caller`); ftrace_mcount_caller, which a -pg site calls in place
 * of _mcount; ftrace_ops_caller, which a patchable area with a
 * pre-function literal calls (the literal says which ops record serves
 * the function); ftrace_stub (named as on x86-64), from any site.
 */
#define FTRT_TARGETS_ARM64(X)                                                                    \
	X(MCOUNT, _mcount)                /* -pg's hook: `mov x0, x30; bl _mcount` after the prologue */ \
	X(CALLER, ftrace_caller)          /* a patchable entry site: mov x9, x30; bl ftrace_caller */    \
	X(MCALLER, ftrace_mcount_caller)  /* a -pg site: bl ftrace_mcount_caller */                      \
	X(OPS, ftrace_ops_caller)         /* a patchable entry with a literal: mov x9, x30; bl ftrace_ops_caller */ \
	X(STUB, ftrace_stub)              /* the empty tracer (FTRACE=nop), from any site */

/* The targets of the architecture the runtime is built for. */
#if defined(__aarch64__)
#define FTRT_TARGETS_ARCH(X) FTRT_TARGETS_ARM64(X)
#else
#define FTRT_TARGETS_ARCH(X) FTRT_TARGETS_X86_64(X)
#endif

/* The names of arm64's targets, for the tools. */
#define FTRT_ARM64_MCOUNT "_mcount"
#define FTRT_ARM64_CALLER "ftrace_caller"
#define FTRT_ARM64_MCOUNT_CALLER "ftrace_mcount_caller"
#define FTRT_ARM64_OPS_CALLER "ftrace_ops_caller"

/*
 * x86-64's per-site graph trampoline (arch/x86_64/site.c builds one per entry
 * site; entry.S draws it and serves it): where each instruction starts.
 */
#define TRAMP_LEA 0          /* lea site(%rip), %r11 */
#define TRAMP_CALL_ENTER 7   /* call *enter(%rip): ftrace_graph_enter */
#define TRAMP_ENTERED 13     /* je TRAMP_SKIP: ftrace_graph_enter's return address */
#define TRAMP_DROP 15        /* add $8, %rsp */
#define TRAMP_CALL_BODY 19   /* call body */
#define TRAMP_HOOK 24        /* jmp *leave(%rip): the body's return address, the call's hook */
#define TRAMP_SKIP 30        /* jmp body: not graphed */
#define TRAMP_PAD 35         /* int3 padding to TRAMP_SIZE, never run */
#define TRAMP_SIZE 40

#endif
