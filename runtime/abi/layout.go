package abi

// The graph tracer's per-thread buffer as the assembly fast paths
// address it (runtime/src/arch/layout.h, which the runtime's C checks
// against its structs). Go reads no buffer; these are mirrored so that the
// header's check covers every value the runtime's interface files hold,
// and for the limits a trace shows: ShadowMax nested graphed calls before
// a thread stops graphing, TBufWords words buffered per thread. The LS*
// values are a library call's slot in the runtime's table, as x86-64's
// graph stubs' fast path reads it.
const (
	TBCalls      = 0x00                        // TB_CALLS: uint64_t calls, CALL records written
	TBEntries    = 0x08                        // TB_ENTRIES: uint64_t entries, ENTRY records written
	TBExits      = 0x10                        // TB_EXITS: uint64_t exits, EXIT records written
	TBN          = 0x18                        // TB_N: uint32_t n, words in words[]
	TBSuspended  = 0x1c                        // TB_SUSPENDED: int suspended
	TBBusy       = 0x20                        // TB_BUSY: uintptr_t busy
	TBBase       = 0x28                        // TB_BASE: uint64_t base
	TBLast       = 0x30                        // TB_LAST: uint64_t last
	TBOwn        = 0x38                        // TB_OWN: struct shadow_stack own
	TBDepth      = TBOwn + 0                   // TB_DEPTH: uint32_t own.depth
	TBStopped    = TBOwn + 4                   // TB_STOPPED: int own.stopped
	TBChosen     = TBOwn + 8                   // TB_CHOSEN: uint32_t own.chosen
	TBNotrace    = TBOwn + 12                  // TB_NOTRACE: uint32_t own.notrace
	TBShadow     = TBOwn + 16                  // TB_SHADOW: struct shadow own.e[ShadowMax]
	TBWords      = TBShadow + SHSize*ShadowMax // TB_WORDS: uint64_t words[TBufWords]
	SHRet        = 0                           // SH_RET: a shadow entry's return address
	SHIP         = 8                           // SH_IP: its site
	SHSP         = 16                          // SH_SP: the stack pointer at the return
	SHHook       = 24                          // SH_HOOK: the hook in its return slot
	SHPos        = 32                          // SH_POS: its stream position
	SHMark       = 40                          // SH_MARK: MarkChosen, MarkNotrace or 0
	SHSize       = 48                          // SH_SIZE: a shadow entry's bytes
	MarkChosen   = 1                           // MARK_CHOSEN: a call FTRACE_GRAPH_FUNCS chooses
	MarkNotrace  = 2                           // MARK_NOTRACE: a call FTRACE_GRAPH_NOTRACE names
	SubtreeOn    = 1                           // SUBTREE_ON: either subtree filter is set
	SubtreeFuncs = 2                           // SUBTREE_FUNCS: FTRACE_GRAPH_FUNCS is set
	SubtreeBits  = 32768                       // SUBTREE_BITS: bits of ftrt_subtree_maybe[]
	ShadowMax    = 1024                        // SHADOW_MAX: graphed calls at once per stack
	TBufWords    = 192 * 1024                  // TBUF_WORDS: words of records per thread
	LSIP         = 0                           // LS_IP: a library-call slot's address, its flags in the low bits
	LSFlags      = 7                           // LS_FLAGS: those bits
	LSTarget     = 8                           // LS_TARGET: the function the slot held
	LSSize       = 16                          // LS_SIZE: a slot's bytes in the table
)
