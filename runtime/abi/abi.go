// Package abi mirrors runtime/src/abi.h, the runtime's interface with
// ftpatch: the records of a trace's streams and the metadata's keys
// (which package trace reads), the config record (which package patch
// rewrites), the names of the runtime's hooks, trampolines and entry
// points (which sites, patch and the link flags name), and the layout of
// the per-site graph trampolines.
//
// Every constant and variable here is a value of the header (or of
// runtime/src/arch/layout.h, the per-thread buffer the assembly addresses),
// its comment naming the macro; nowhere else in Go is any of them
// written down. TestHeader compiles a C program that includes the
// headers and prints every value, size and offset, and fails naming any
// that differs from this package's, any #define of the headers this
// package does not mirror, and any value here it does not check: change
// a value in both places at once.
package abi

import "fmt"

// A trace directory: MetaFile, key value lines, and a stream per thread,
// <pid>-<tid>[-<n>]StreamSuffix, a StreamHeader-byte header (StreamMagic,
// pid, tid: u32 LE) followed by records.
const (
	MetaFile = "meta" // META_FILE
	// A session: SessionFile, whose first line is SessionMagic, and a
	// trace directory per process image ("PID@START", "PID@START.N").
	SessionFile  = "session"        // SESSION_FILE
	SessionMagic = "ftrt-session 1" // SESSION_MAGIC
	SessionRoot  = "root"           // SESSION_ROOT: the second line's key, "root PID@START"
	StreamSuffix = ".trace"         // STREAM_SUFFIX
	StreamMagic  = "ftrtrec4"       // STREAM_MAGIC: 8 bytes, format 4's records
	StreamHeader = 16               // STREAM_HEADER: bytes
)

// A process's scheduler events: one file per process in its trace
// directory, "<pid>SchedSuffix": a SchedHeader-byte header (SchedMagic,
// pid: u32 LE, 0: u32 LE), then chunks, each one thread's events from
// one read of the kernel's ring, in time order: a word tid | count << 32,
// then count words, each an event: its time (the trace's clock) <<
// SchedKindBits | its kind.
const (
	SchedSuffix   = ".sched"   // SCHED_SUFFIX
	SchedMagic    = "ftrtsch1" // SCHED_MAGIC: 8 bytes
	SchedHeader   = 16         // SCHED_HEADER: bytes
	SchedKindBits = 2          // SCHED_KIND_BITS
	SchedIn       = 0          // SCHED_IN: the thread ran again
	SchedSleep    = 1          // SCHED_SLEEP: it left the CPU blocked (it slept: I/O, a lock, a timer, a wait)
	SchedPreempt  = 2          // SCHED_PREEMPT: it left the CPU runnable (pre-empted, or it yielded)
)

// Format 4's records (format 3's, and EXT_SUMMARY): little-endian 64-bit
// words; a record's first word's top two bits (from RecKindShift) are its
// kind.
const (
	RecKindShift  = 62     // REC_KIND_SHIFT
	RecCall       = 0      // REC_CALL: w0 = delta << 47 | site; w1 = parent ip
	RecEntry      = 1      // REC_ENTRY: w0 = 1 << 62 | delta << 47 | site
	RecExit       = 2      // REC_EXIT: w0 = 2 << 62 | delta
	RecExt        = 3      // REC_EXT: w0 = 3 << 62 | sub << 58 | payload
	RecDeltaBits  = 15     // REC_DELTA_BITS: a CALL's or ENTRY's delta
	RecSiteBits   = 47     // REC_SITE_BITS: a CALL's or ENTRY's site
	RecDeltaMax   = 0x7fff // REC_DELTA_MAX: the largest delta a CALL or ENTRY holds
	RecExitBits   = 62     // REC_EXIT_BITS: an EXIT's delta
	RecExtBits    = 58     // REC_EXT_BITS: an EXT record's payload
	RecExtSubBits = 4      // REC_EXT_SUB_BITS: an EXT record's sub-kind, above its payload
)

// RecWords are the words of a record of each kind (REC_WORDS); 0: EXT,
// whose sub-kind says (ExtWords).
var RecWords = [4]int{RecCall: 2, RecEntry: 1, RecExit: 1, RecExt: 0}

// The EXT sub-kinds; ExtReserved up to 15 are reserved (an error to
// read), and so is ExtSummary in format 3.
const (
	ExtUnwound   = 0 // EXT_UNWOUND: payload delta
	ExtTime      = 1 // EXT_TIME: payload 0; w1 = the stream's clock from here on
	ExtContext   = 2 // EXT_CONTEXT: payload delta; w1 = context id
	ExtLongEntry = 3 // EXT_LONGENTRY: payload delta; w1 = site
	ExtLongCall  = 4 // EXT_LONGCALL: payload delta; w1 = site, w2 = parent ip
	ExtWrapped   = 5 // EXT_WRAPPED: payload = words of earlier records the flight recorder's ring overwrote
	ExtArgs      = 6 // EXT_ARGS: payload = words after w0; w1 = site, w2 = items, then each: the arguments of the call whose CALL or ENTRY follows
	ExtRetval    = 7 // EXT_RETVAL: as ExtArgs, one item: the return value of the call whose EXIT follows
	ExtSummary   = 8 // EXT_SUMMARY: payload = words after w0 (SumWords - 1 or more); the stream's counts, at its end (format 4)
	ExtReserved  = 9 // EXT_RESERVED: the first reserved sub-kind
)

// An EXT_SUMMARY record's words, by index (abi.h's SUM_*): what its
// stream holds, counted by the runtime as it wrote it. A reader finds it
// from the stream's end: its last word repeats its first (SumEnd), the
// one before says where it begins (SumPos). Later fields, if any, go
// before SumPos.
const (
	SumCalls     = 1  // SUM_CALLS: CALL and LONGCALL records
	SumEntries   = 2  // SUM_ENTRIES: ENTRY and LONGENTRY records
	SumExits     = 3  // SUM_EXITS: EXIT records
	SumUnwound   = 4  // SUM_UNWOUND: UNWOUND records
	SumFirst     = 5  // SUM_FIRST: the time of the stream's first record that has one
	SumLast      = 6  // SUM_LAST: the stream's clock at its end
	SumFlags     = 7  // SUM_FLAGS: SumCounted
	SumName      = 8  // SUM_NAME: the thread's name, SumNameBytes NUL-padded
	SumNameBytes = 16 // SUM_NAME_BYTES
	SumPos       = 10 // SUM_POS: the words of records before the summary in the stream
	SumEnd       = 11 // SUM_END: the record's first word again
	SumWords     = 12 // SUM_WORDS: the record's words
	SumCounted   = 1  // SUM_COUNTED: the counts are the stream's (not the flight recorder's, nothing lost, no contexts)
)

// An EXT_ARGS or EXT_RETVAL record's items (abi.h's ARG_*): w2 holds
// their count (its low ArgTypeBits) and each one's type above it.
const (
	ArgWordsMask  = 0xffff  // ARG_WORDS_MASK: the payload's words after w0
	ArgTypeBits   = 4       // ARG_TYPE_BITS
	ArgMax        = 15      // ARG_MAX: items a record holds at most
	ArgInt        = 1       // ARG_INT: a signed integer, sign-extended from its bits
	ArgUint       = 2       // ARG_UINT: an unsigned integer, zero-extended, shown in hex
	ArgPtr        = 3       // ARG_PTR: a pointer
	ArgDouble     = 4       // ARG_DOUBLE: a double's bits
	ArgString     = 5       // ARG_STRING: length word, then bytes or the pointer
	ArgChar       = 6       // ARG_CHAR: a char, the low 8 bits
	ArgUdec       = 7       // ARG_UDEC: an unsigned integer, zero-extended, shown in decimal
	ArgFloat      = 8       // ARG_FLOAT: a float's bits, the low 32
	ArgBool       = 9       // ARG_BOOL: a bool, the low 8 bits
	ArgEnum       = 10      // ARG_ENUM: the register, then its enum's name as a string's length word and bytes
	ArgNone       = 11      // ARG_NONE: a value not read, shown as ?: no word
	ArgF80        = 12      // ARG_F80: an x87 long double (80-bit extended): two words, its 16 bytes in memory
	ArgF128       = 13      // ARG_F128: an IEEE binary128 (arm64's long double, x86-64's __float128): two words
	ArgStruct     = 14      // ARG_STRUCT: a struct: its bytes as a string's, then its layout's text as a string's
	ArgStructMax  = 32      // ARG_STRUCT_MAX: a struct's bytes recorded at most
	ArgLayoutMax  = 64      // ARG_LAYOUT_MAX: a struct's layout's text, in bytes, at most
	ArgStackMax   = 512     // ARG_STACK_MAX: the bytes of stack arguments an item may read
	ArgEnumMax    = 64      // ARG_ENUM_MAX: an enum's name's bytes at most
	ArgLenMask    = 0xffff  // ARG_LEN_MASK: a string's length
	ArgTruncated  = 1 << 16 // ARG_TRUNCATED: the string is longer than ArgStringMax bytes
	ArgUnreadable = 1 << 17 // ARG_UNREADABLE: the pointer could not be read; it follows
	ArgStringMax  = 96      // ARG_STRING_MAX: a string's bytes kept at most
)

// ExtWords are the words of a record of each EXT sub-kind (EXT_WORDS);
// 0: reserved.
var ExtWords = [1 << RecExtSubBits]int{ExtUnwound: 1, ExtTime: 2, ExtContext: 2, ExtLongEntry: 2, ExtLongCall: 3, ExtWrapped: 1}

// The metadata: "key value" lines.
// The runtime's environment variables: abi.h's ENV_*. The runtime reads
// none of them in a secure-execution process; package launch sets them.
const (
	EnvPrefix       = "FTRACE"               // ENV_PREFIX: what every variable of the runtime's starts with (env.c passes them on across exec)
	EnvTracer       = "FTRACE"               // ENV_TRACER: the tracer: FTRT_TRACER_*_NAME
	EnvOut          = "FTRACE_OUT"           // ENV_OUT: the trace directory
	EnvSession      = "FTRACE_SESSION"       // ENV_SESSION: PID@START, the process a new session is rooted at (ftpatch record), when an ancestor
	EnvLibcall      = "FTRACE_LIBCALL"       // ENV_LIBCALL: 1, calls into shared libraries traced too, through their GOT slots
	EnvFilter       = "FTRACE_FILTER"        // ENV_FILTER: globs of the functions whose sites are enabled
	EnvDepth        = "FTRACE_DEPTH"         // ENV_DEPTH: at most this many nested calls graphed
	EnvThresh       = "FTRACE_THRESH"        // ENV_THRESH: no call shorter than this that called nothing traced
	EnvGraphFuncs   = "FTRACE_GRAPH_FUNCS"   // ENV_GRAPH_FUNCS: only the subtrees of these functions' calls
	EnvGraphNotrace = "FTRACE_GRAPH_NOTRACE" // ENV_GRAPH_NOTRACE: nothing inside these functions' calls
	EnvClock        = "FTRACE_CLOCK"         // ENV_CLOCK: META_CLOCK_MONO: CLOCK_MONOTONIC instead of the TSC
	EnvMode         = "FTRACE_MODE"          // ENV_MODE: who may read the trace: 0640 its group, 0644 everyone (0600 unset)
	EnvInherit      = "FTRACE_INHERIT"       // ENV_INHERIT: 0: exec and spawn do not pass the settings on
	EnvDebug        = "FTRACE_DEBUG"         // ENV_DEBUG: print what the load-time pass did
	EnvNop          = "FTRACE_NOP"           // ENV_NOP: the NOPs the pass writes: p6, k8 or jmp (tests of the fallbacks)
	EnvCtl          = "FTRACE_CTL"           // ENV_CTL: 1: listen on a control socket for ftpatch ctl (ctl.c)
	EnvBuffer       = "FTRACE_BUFFER"        // ENV_BUFFER: BufferStream (default), BufferRing ":SIZE" (the flight recorder) or BufferWriter
	EnvArgs         = "FTRACE_ARGS"          // ENV_ARGS: arguments to record: func@arg1,arg2/s,fparg1;glob@... (capture.c)
	EnvRetval       = "FTRACE_RETVAL"        // ENV_RETVAL: return values to record: func[/fmt];glob... (function_graph)
	EnvLibArgs      = "FTRACE_LIBARGS"       // ENV_LIBARGS: FTRACE_ARGS's entries for library calls alone, after its own (record --auto-args's prototype table)
	EnvLibRetval    = "FTRACE_LIBRETVAL"     // ENV_LIBRETVAL: FTRACE_RETVAL's entries for library calls alone, after its own
	EnvSched        = "FTRACE_SCHED"         // ENV_SCHED: 1, the traced threads' context switches recorded; 0 or unset: not
	EnvArgsSocket   = "FTRACE_ARGS_SOCKET"   // ENV_ARGS_SOCKET: a unix socket that gives each module's own FTRACE_ARGS and FTRACE_RETVAL
	// EnvPrologueSocket (ENV_PROLOGUE_SOCKET): a unix socket that gives
	// each module's prologue plan (ftpatch record -P).
	EnvPrologueSocket = "FTRACE_PROLOGUE_SOCKET"
)

// Prologue sites made at load (record -P): the runtime asks the server
// on EnvPrologueSocket "BUILD-ID PATH\n" (BUILD-ID "-" for none); the
// server answers PlanHeader bytes (PlanMagic, count: u32, image bytes:
// u32; 0, 0 for none, and closes; then where to map them first, less the
// bias: u64, the place its answer is made for already); the runtime
// sends where it mapped the
// image, less the module's bias (u64, modulo 2^64); the server answers
// status (PlanOK; PlanFar: out of reach of an operand, try another
// place; PlanNone: no site after all) and the entries' bytes (u32s),
// the image, then count entries in function order, each a
// PlanEntryHead-byte head: function and patch addresses less the bias
// (u64s), the site's offset in the image and the patch's length, len,
// at most PlanPatchMax (u32s); then the len bytes there now and the len
// bytes of the jump replacing them, zero-padded to a multiple of 8. The runtime
// writes what it made to "<pid>PrologueSuffix": a PrologueHeader-byte
// header (PrologueMagic, pid: u32, 0: u32), then a pair of u64 per site:
// its run-time address (what records hold) and its function's.
const (
	PlanMagic      = "ftrtpla1"  // PLAN_MAGIC: 8 bytes
	PlanHeader     = 24          // PLAN_HEADER: bytes
	PlanOK         = 0           // PLAN_OK
	PlanFar        = 1           // PLAN_FAR
	PlanNone       = 2           // PLAN_NONE: no site in the module after all
	PlanPatchMax   = 24          // PLAN_PATCH_MAX: bytes
	PlanEntryHead  = 24          // PLAN_ENTRY_HEAD: bytes
	PrologueSuffix = ".prologue" // PROLOGUE_SUFFIX
	PrologueMagic  = "ftrtpro1"  // PROLOGUE_MAGIC: 8 bytes
	PrologueHeader = 16          // PROLOGUE_HEADER: bytes
)

const (
	MetaFormat       = "ftrt-trace 4" // META_FORMAT: MetaKeyFormat's value, streams of StreamMagic
	MetaRecordsWords = "words"        // META_RECORDS_WORDS: MetaKeyRecords's value
	MetaClockTSC     = "tsc"          // META_CLOCK_TSC: rdtsc ticks
	MetaClockMono    = "mono"         // META_CLOCK_MONO: CLOCK_MONOTONIC ns

	MetaKeyFormat            = "format"             // META_KEY_FORMAT
	MetaKeyRecords           = "records"            // META_KEY_RECORDS
	MetaKeyClock             = "clock"              // META_KEY_CLOCK
	MetaKeyTracer            = "tracer"             // META_KEY_TRACER: TracerFunctionName or TracerGraphName
	MetaKeyExe               = "exe"                // META_KEY_EXE
	MetaKeyCmdline           = "cmdline"            // META_KEY_CMDLINE
	MetaKeyBuildID           = "build_id"           // META_KEY_BUILD_ID
	MetaKeyEnded             = "ended"              // META_KEY_ENDED
	MetaKeyPid               = "pid"                // META_KEY_PID
	MetaKeyPpid              = "ppid"               // META_KEY_PPID: the parent process when the image started
	MetaKeyImage             = "image"              // META_KEY_IMAGE: which image of its process (1, then +1 at each exec)
	MetaKeyForked            = "forked"             // META_KEY_FORKED: 1, the image of a child forked without an exec
	MetaKeyBias              = "bias"               // META_KEY_BIAS
	MetaKeyTSCStart          = "tsc_start"          // META_KEY_TSC_START
	MetaKeyTSCEnd            = "tsc_end"            // META_KEY_TSC_END
	MetaKeyTSCHz             = "tsc_hz"             // META_KEY_TSC_HZ: the counter's rate, where the architecture gives it
	MetaKeyMonoStart         = "mono_start_ns"      // META_KEY_MONO_START
	MetaKeyMonoEnd           = "mono_end_ns"        // META_KEY_MONO_END
	MetaKeySites             = "sites"              // META_KEY_SITES
	MetaKeyEnabled           = "enabled"            // META_KEY_ENABLED
	MetaKeySkipped           = "skipped"            // META_KEY_SKIPPED
	MetaKeyFailed            = "failed"             // META_KEY_FAILED
	MetaKeyUnsupported       = "unsupported"        // META_KEY_UNSUPPORTED
	MetaKeyLiteral           = "literal"            // META_KEY_LITERAL: enabled sites served through their pre-function literal
	MetaKeyMisaligned        = "misaligned"         // META_KEY_MISALIGNED: sites whose pre-function slot is not 8-byte aligned
	MetaKeyLibcallSlots      = "libcall_slots"      // META_KEY_LIBCALL_SLOTS: GOT slots of other modules' functions (FTRACE_LIBCALL)
	MetaKeyLibcallHooked     = "libcall_hooked"     // META_KEY_LIBCALL_HOOKED: of those, redirected
	MetaKeyLibcallUnresolved = "libcall_unresolved" // META_KEY_LIBCALL_UNRESOLVED: chosen, function not found
	MetaKeyLibcallFailed     = "libcall_failed"     // META_KEY_LIBCALL_FAILED: chosen, could not be written
	MetaKeyPrologueSites     = "prologue_sites"     // META_KEY_PROLOGUE_SITES: sites made from functions' prologues (record -P, instrument)
	MetaKeyPrologueChanged   = "prologue_changed"   // META_KEY_PROLOGUE_CHANGED: record -P's functions left alone, their bytes not the file's
	MetaKeyDropped           = "dropped"            // META_KEY_DROPPED
	MetaKeyOverflow          = "overflow"           // META_KEY_OVERFLOW
	MetaKeyUnwound           = "unwound"            // META_KEY_UNWOUND
	MetaKeyStopped           = "stopped"            // META_KEY_STOPPED
	MetaKeyLostBytes         = "lost_bytes"         // META_KEY_LOST_BYTES
	MetaKeyRecordedBytes     = "recorded_bytes"     // META_KEY_RECORDED_BYTES
	MetaKeyLostThreads       = "lost_threads"       // META_KEY_LOST_THREADS
	MetaKeyContexts          = "contexts"           // META_KEY_CONTEXTS
	MetaKeyContextsLost      = "contexts_lost"      // META_KEY_CONTEXTS_LOST
	MetaKeyMaxDepth          = "max_depth"          // META_KEY_MAX_DEPTH
	MetaKeyThreshTSC         = "thresh_tsc"         // META_KEY_THRESH_TSC
	MetaKeyGraphFuncs        = "graph_funcs"        // META_KEY_GRAPH_FUNCS
	MetaKeyGraphNotrace      = "graph_notrace"      // META_KEY_GRAPH_NOTRACE
	MetaKeyConfig            = "config"             // META_KEY_CONFIG: a ConfigStateNames entry
	MetaKeyModule            = "module"             // META_KEY_MODULE: one line per module
	MetaKeyModulesForgotten  = "modules_forgotten"  // META_KEY_MODULES_FORGOTTEN
	MetaKeyBuffer            = "buffer"             // META_KEY_BUFFER: BufferStream, BufferRing or BufferWriter
	MetaKeyRingBytes         = "ring_bytes"         // META_KEY_RING_BYTES: a thread's ring
	MetaKeyRingAsked         = "ring_asked_bytes"   // META_KEY_RING_ASKED: what FTRACE_BUFFER asked for a thread's ring
	MetaKeyOverwritten       = "overwritten_bytes"  // META_KEY_OVERWRITTEN: records the rings overwrote
	MetaKeySignal            = "signal"             // META_KEY_SIGNAL: the fatal signal whose handler ended the trace
	MetaKeyDetached          = "detached"           // META_KEY_DETACHED: 1 when ftpatch record -p ended the trace (ctl end) and the process ran on
	MetaKeyExitCode          = "exit_code"          // META_KEY_EXIT_CODE: what the program passed to exit or _exit (its low 8 bits)
	MetaKeyComm              = "comm"               // META_KEY_COMM: the process's name (/proc/self/comm)
	MetaKeyRUUtime           = "ru_utime_us"        // META_KEY_RU_UTIME: getrusage(RUSAGE_SELF) at the end: user CPU time, µs
	MetaKeyRUStime           = "ru_stime_us"        // META_KEY_RU_STIME: system CPU time, µs
	MetaKeyRUMaxRSS          = "ru_maxrss_kb"       // META_KEY_RU_MAXRSS: the program image's largest resident set (VmHWM), KiB
	MetaKeyRUMinflt          = "ru_minflt"          // META_KEY_RU_MINFLT: page faults served without I/O
	MetaKeyRUMajflt          = "ru_majflt"          // META_KEY_RU_MAJFLT: page faults that read from disk
	MetaKeyRUInblock         = "ru_inblock"         // META_KEY_RU_INBLOCK: blocks read by the file system
	MetaKeyRUOublock         = "ru_oublock"         // META_KEY_RU_OUBLOCK: blocks written
	MetaKeyRUNvcsw           = "ru_nvcsw"           // META_KEY_RU_NVCSW: voluntary context switches
	MetaKeyRUNivcsw          = "ru_nivcsw"          // META_KEY_RU_NIVCSW: involuntary context switches
	MetaKeySched             = "sched"              // META_KEY_SCHED: SchedOn, or SchedRefused
	MetaKeySchedWhy          = "sched_why"          // META_KEY_SCHED_WHY: why refused, or what stopped them
	MetaKeySchedSwitches     = "sched_switches"     // META_KEY_SCHED_SWITCHES: times a traced thread left the CPU, recorded
	MetaKeySchedLost         = "sched_lost"         // META_KEY_SCHED_LOST: scheduler events lost (ring full, file not written)
	SchedOn                  = "on"                 // SCHED_ON
	SchedRefused             = "refused"            // SCHED_REFUSED
)

// How the runtime keeps a thread's records (FTRACE_BUFFER, and the
// metadata's buffer line): abi.h's BUFFER_*.
const (
	BufferStream = "stream" // BUFFER_STREAM: full buffers written by the threads themselves
	BufferRing   = "ring"   // BUFFER_RING: the flight recorder, each thread's last records kept in memory
	BufferWriter = "writer" // BUFFER_WRITER: full buffers written by a writer thread
)

// The tracers: the config record's tracer field, FTRACE's values (by
// name) and MetaKeyTracer's (function and function_graph).
const (
	TracerFunction     = 1                // FTRT_FUNCTION: every call recorded
	TracerGraph        = 2                // FTRT_GRAPH: calls and returns
	TracerNop          = 3                // FTRT_NOP: sites call ftrace_stub, nothing recorded
	TracerFunctionName = "function"       // FTRT_TRACER_FUNCTION
	TracerGraphName    = "function_graph" // FTRT_TRACER_GRAPH
	TracerNopName      = "nop"            // FTRT_TRACER_NOP
)

// The config record (struct ftrt_config), in section ConfigSection:
// fixed size, little-endian, no padding; each field at its Cfg*Off.
const (
	ConfigSection  = ".ftrt_config" // FTRT_CFG_SECTION
	ConfigSize     = 1336           // FTRT_CFG_SIZE: sizeof(struct ftrt_config)
	ConfigMagic    = "ftrtcfg1"     // FTRT_CFG_MAGIC: 8 bytes, no NUL
	TraceDirMax    = 256            // FTRT_CFG_TRACE_DIR_MAX: the trace_dir field's bytes
	LibcallsMax    = 1024           // FTRT_CFG_LIBCALLS_MAX: the libcalls field's bytes
	ConfigPatched  = 1              // FTRT_CFG_PATCHED: ftpatch wrote every site
	ConfigNoTable  = 2              // FTRT_CFG_NOTABLE: the file has no site table
	ConfigCtl      = 4              // FTRT_CFG_CTL: the program listens for ftpatch ctl (ftpatch enable --ctl)
	ConfigLibcall  = 8              // FTRT_CFG_LIBCALL: the libcalls field's library functions traced (ftpatch enable --libcall)
	CfgMagicOff    = 0              // magic[8]
	CfgSizeOff     = 8              // size, u32
	CfgTracerOff   = 12             // tracer, u32
	CfgFlagsOff    = 16             // flags, u32
	CfgReservedOff = 20             // reserved, u32
	CfgSitesOff    = 24             // sites, u64
	CfgEnabledOff  = 32             // enabled, u64
	CfgListHashOff = 40             // list_hash, u64
	CfgTextHashOff = 48             // text_hash, u64
	CfgTraceDirOff = 56             // trace_dir[TraceDirMax]
	CfgLibcallsOff = 312            // libcalls[LibcallsMax]
)

// What the load-time pass made of the config record, as MetaKeyConfig
// names it.
const (
	ConfigStateNone       = "none"       // FTRT_CFG_STATE_NONE: not patched, the environment decides
	ConfigStatePatched    = "patched"    // FTRT_CFG_STATE_PATCHED: pre-patched, sites only checked
	ConfigStateOverridden = "overridden" // FTRT_CFG_STATE_OVERRIDDEN: pre-patched, but FTRACE or FTRACE_FILTER was set
	ConfigStateMismatch   = "mismatch"   // FTRT_CFG_STATE_MISMATCH: a record not matching the table, ignored
)

// ConfigStateNames are the states' names by FTRT_CFG_STATE_* (the
// runtime's FTRT_CFG_STATE_NAMES).
var ConfigStateNames = [...]string{ConfigStateNone, ConfigStatePatched, ConfigStateOverridden, ConfigStateMismatch}

// TableSection lists a module's sites, one address a word
// (FTRT_TABLE_SECTION).
const TableSection = "__mcount_loc"

// PrologueSection is ftpatch instrument's table of prologue sites
// (FTRT_PROLOGUE_SECTION): PrologueEntry bytes per function, the site's
// address and the function's, both the file's (load bias 0), since the
// file has no relocation for them.
const (
	PrologueSection = "__ftrt_prologue"
	PrologueEntry   = 16
)

// AttachSection holds, in a program that links the runtime and in
// libftrt.so, one word: the address of the runtime's attach entry
// (FTRT_ATTACH_SECTION), which a thread of a process ftpatch did not
// start calls through ptrace, `long ftrt_attach(void)`, to start the
// control server.
const AttachSection = "__ftrt_attach"

// The runtime's entry points ftpatch looks for in a linked file and
// names on the link line.
const (
	Init             = "ftrt_init"              // FTRT_SYM_INIT: the load-time pass; only a program with the runtime defines it
	Preinit          = "ftrt_preinit"           // FTRT_SYM_PREINIT: the program's .preinit_array function, which starts the pass
	ModuleInit       = "ftrt_module_init"       // FTRT_SYM_MODULE_INIT: the module stub's constructor; only a shared object with the stub
	ModuleRegister   = "ftrt_module_register"   // FTRT_SYM_MODULE_REGISTER: exported by a program to its modules' stubs
	ModuleUnregister = "ftrt_module_unregister" // FTRT_SYM_MODULE_UNREGISTER
	ModuleSlots      = "ftrt_module_slots"      // FTRT_SYM_MODULE_SLOTS: the stub's jump slots
	GraphEnter       = "ftrace_graph_enter"     // FTRT_SYM_GRAPH_ENTER: what a per-site trampoline calls
	GraphLeave       = "ftrace_graph_leave"     // FTRT_SYM_GRAPH_LEAVE: where it jumps on the function's return
	// PrologueGraphEnter and PrologueGraphLeave (FTRT_SYM_PROLOGUE_GRAPH_*):
	// what the graph trampoline of an x86-64 site made from a prologue
	// calls and jumps to, keeping every register.
	PrologueGraphEnter = "ftrace_prologue_graph_enter"
	PrologueGraphLeave = "ftrace_prologue_graph_leave"
	// PrologueCaller and PrologueStub (FTRT_SYM_PROLOGUE_CALLER, _STUB):
	// what an enabled arm64 site made from a prologue calls, `mov x17,
	// x30; bl PrologueCaller` (PrologueStub for the empty tracer).
	PrologueCaller = "ftrace_prologue_caller"
	PrologueStub   = "ftrace_prologue_stub"
)

// A Target is one of x86-64's hooks and trampolines, by its index in a
// module's targets[] (FTRT_T_*, from FTRT_TARGETS_X86_64).
type Target uint8

// The targets, in FTRT_TARGETS_X86_64's order.
const (
	TargetFentry   Target = iota // __fentry__: -mfentry's hook
	TargetMcount                 // mcount: -pg's hook
	TargetCaller5                // ftrace_caller5: an entry site, e8 rel32
	TargetCaller6                // ftrace_caller6: an entry site, 67 e8 rel32
	TargetMcaller5               // ftrace_mcount_caller5: a -pg site after the prologue
	TargetMcaller6               // ftrace_mcount_caller6
	TargetChain5                 // ftrace_chain_caller5: an entry site after push %r10
	TargetChain6                 // ftrace_chain_caller6
	TargetStub                   // ftrace_stub: the empty tracer, from any site
	NumTargets
)

// The targets' names.
const (
	Fentry        = "__fentry__"
	Mcount        = "mcount"
	Caller5       = "ftrace_caller5"
	Caller6       = "ftrace_caller6"
	McountCaller5 = "ftrace_mcount_caller5"
	McountCaller6 = "ftrace_mcount_caller6"
	ChainCaller5  = "ftrace_chain_caller5"
	ChainCaller6  = "ftrace_chain_caller6"
	Stub          = "ftrace_stub"
)

var targetNames = [NumTargets]string{Fentry, Mcount, Caller5, Caller6, McountCaller5, McountCaller6, ChainCaller5, ChainCaller6, Stub}

// String is the target's symbol.
func (t Target) String() string {
	if t < NumTargets {
		return targetNames[t]
	}
	return fmt.Sprintf("target(%d)", uint8(t))
}

// arm64's hook and trampolines (FTRT_ARM64_*); its empty tracer is
// Stub, as on x86-64.
const (
	ARM64Mcount       = "_mcount"              // FTRT_ARM64_MCOUNT: -pg's hook, `bl _mcount` after the prologue
	ARM64Caller       = "ftrace_caller"        // FTRT_ARM64_CALLER: from a patchable area's second word
	ARM64McountCaller = "ftrace_mcount_caller" // FTRT_ARM64_MCOUNT_CALLER: from a -pg site
	ARM64OpsCaller    = "ftrace_ops_caller"    // FTRT_ARM64_OPS_CALLER: from a patchable area with a pre-function literal
)

// x86-64's per-site graph trampoline: where each instruction starts, in
// bytes from the trampoline's start (TRAMP_*).
const (
	TrampLea       = 0  // lea site(%rip), %r11
	TrampCallEnter = 7  // call *enter(%rip): ftrace_graph_enter
	TrampEntered   = 13 // je TrampSkip: ftrace_graph_enter's return address
	TrampDrop      = 15 // add $8, %rsp
	TrampCallBody  = 19 // call body
	TrampHook      = 24 // jmp *leave(%rip): the body's return address, the call's hook
	TrampSkip      = 30 // jmp body: not graphed
	TrampPad       = 35 // int3 padding to TrampSize
	TrampSize      = 40
)
