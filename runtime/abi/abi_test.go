package abi_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ftpatch/runtime/abi"
)

// The headers package abi mirrors, and the include guards that are no
// value of theirs.
var (
	headers = []string{"abi.h", "arch/layout.h"}
	guards  = []string{"FTRT_ABI_H", "FTRT_LAYOUT_H"}
)

// A mirror is one value of the headers beside package abi's: c is what
// the C program prints (a macro, or an expression), goName the Go name,
// v its Go value (an int, a string, or a list of ints or strings, which
// the C side gives as an array initializer).
type mirror struct {
	c      string
	goName string
	v      any
}

// cfgField is a field of struct ftrt_config with its Go offset and size.
type cfgField struct {
	name, goName string
	off, size    int
}

var cfgFields = []cfgField{
	{"magic", "CfgMagicOff", abi.CfgMagicOff, len(abi.ConfigMagic)},
	{"size", "CfgSizeOff", abi.CfgSizeOff, 4},
	{"tracer", "CfgTracerOff", abi.CfgTracerOff, 4},
	{"flags", "CfgFlagsOff", abi.CfgFlagsOff, 4},
	{"reserved", "CfgReservedOff", abi.CfgReservedOff, 4},
	{"sites", "CfgSitesOff", abi.CfgSitesOff, 8},
	{"enabled", "CfgEnabledOff", abi.CfgEnabledOff, 8},
	{"list_hash", "CfgListHashOff", abi.CfgListHashOff, 8},
	{"text_hash", "CfgTextHashOff", abi.CfgTextHashOff, 8},
	{"trace_dir", "CfgTraceDirOff", abi.CfgTraceDirOff, abi.TraceDirMax},
	{"libcalls", "CfgLibcallsOff", abi.CfgLibcallsOff, abi.LibcallsMax},
}

func mirrors() []mirror {
	m := []mirror{
		{"META_FILE", "MetaFile", abi.MetaFile},
		{"SESSION_FILE", "SessionFile", abi.SessionFile},
		{"SESSION_MAGIC", "SessionMagic", abi.SessionMagic},
		{"SESSION_ROOT", "SessionRoot", abi.SessionRoot},
		{"STREAM_SUFFIX", "StreamSuffix", abi.StreamSuffix},
		{"STREAM_MAGIC", "StreamMagic", abi.StreamMagic},
		{"STREAM_HEADER", "StreamHeader", abi.StreamHeader},
		{"SCHED_SUFFIX", "SchedSuffix", abi.SchedSuffix},
		{"SCHED_MAGIC", "SchedMagic", abi.SchedMagic},
		{"SCHED_HEADER", "SchedHeader", abi.SchedHeader},
		{"SCHED_KIND_BITS", "SchedKindBits", abi.SchedKindBits},
		{"SCHED_IN", "SchedIn", abi.SchedIn},
		{"SCHED_SLEEP", "SchedSleep", abi.SchedSleep},
		{"SCHED_PREEMPT", "SchedPreempt", abi.SchedPreempt},

		{"REC_KIND_SHIFT", "RecKindShift", abi.RecKindShift},
		{"REC_CALL", "RecCall", abi.RecCall},
		{"REC_ENTRY", "RecEntry", abi.RecEntry},
		{"REC_EXIT", "RecExit", abi.RecExit},
		{"REC_EXT", "RecExt", abi.RecExt},
		{"REC_DELTA_BITS", "RecDeltaBits", abi.RecDeltaBits},
		{"REC_SITE_BITS", "RecSiteBits", abi.RecSiteBits},
		{"REC_DELTA_MAX", "RecDeltaMax", abi.RecDeltaMax},
		{"REC_EXIT_BITS", "RecExitBits", abi.RecExitBits},
		{"REC_EXT_BITS", "RecExtBits", abi.RecExtBits},
		{"REC_EXT_SUB_BITS", "RecExtSubBits", abi.RecExtSubBits},
		{"REC_WORDS", "RecWords", abi.RecWords[:]},
		{"EXT_UNWOUND", "ExtUnwound", abi.ExtUnwound},
		{"EXT_TIME", "ExtTime", abi.ExtTime},
		{"EXT_CONTEXT", "ExtContext", abi.ExtContext},
		{"EXT_LONGENTRY", "ExtLongEntry", abi.ExtLongEntry},
		{"EXT_LONGCALL", "ExtLongCall", abi.ExtLongCall},
		{"EXT_WRAPPED", "ExtWrapped", abi.ExtWrapped},
		{"EXT_ARGS", "ExtArgs", abi.ExtArgs},
		{"EXT_RETVAL", "ExtRetval", abi.ExtRetval},
		{"ARG_WORDS_MASK", "ArgWordsMask", abi.ArgWordsMask},
		{"ARG_TYPE_BITS", "ArgTypeBits", abi.ArgTypeBits},
		{"ARG_MAX", "ArgMax", abi.ArgMax},
		{"ARG_INT", "ArgInt", abi.ArgInt},
		{"ARG_UINT", "ArgUint", abi.ArgUint},
		{"ARG_PTR", "ArgPtr", abi.ArgPtr},
		{"ARG_DOUBLE", "ArgDouble", abi.ArgDouble},
		{"ARG_STRING", "ArgString", abi.ArgString},
		{"ARG_CHAR", "ArgChar", abi.ArgChar},
		{"ARG_UDEC", "ArgUdec", abi.ArgUdec},
		{"ARG_FLOAT", "ArgFloat", abi.ArgFloat},
		{"ARG_BOOL", "ArgBool", abi.ArgBool},
		{"ARG_ENUM", "ArgEnum", abi.ArgEnum},
		{"ARG_NONE", "ArgNone", abi.ArgNone},
		{"ARG_F80", "ArgF80", abi.ArgF80},
		{"ARG_F128", "ArgF128", abi.ArgF128},
		{"ARG_STRUCT", "ArgStruct", abi.ArgStruct},
		{"ARG_STRUCT_MAX", "ArgStructMax", abi.ArgStructMax},
		{"ARG_LAYOUT_MAX", "ArgLayoutMax", abi.ArgLayoutMax},
		{"ARG_STACK_MAX", "ArgStackMax", abi.ArgStackMax},
		{"ARG_ENUM_MAX", "ArgEnumMax", abi.ArgEnumMax},
		{"ARG_LEN_MASK", "ArgLenMask", abi.ArgLenMask},
		{"ARG_TRUNCATED", "ArgTruncated", abi.ArgTruncated},
		{"ARG_UNREADABLE", "ArgUnreadable", abi.ArgUnreadable},
		{"ARG_STRING_MAX", "ArgStringMax", abi.ArgStringMax},
		{"EXT_SUMMARY", "ExtSummary", abi.ExtSummary},
		{"SUM_CALLS", "SumCalls", abi.SumCalls},
		{"SUM_ENTRIES", "SumEntries", abi.SumEntries},
		{"SUM_EXITS", "SumExits", abi.SumExits},
		{"SUM_UNWOUND", "SumUnwound", abi.SumUnwound},
		{"SUM_FIRST", "SumFirst", abi.SumFirst},
		{"SUM_LAST", "SumLast", abi.SumLast},
		{"SUM_FLAGS", "SumFlags", abi.SumFlags},
		{"SUM_NAME", "SumName", abi.SumName},
		{"SUM_NAME_BYTES", "SumNameBytes", abi.SumNameBytes},
		{"SUM_POS", "SumPos", abi.SumPos},
		{"SUM_END", "SumEnd", abi.SumEnd},
		{"SUM_WORDS", "SumWords", abi.SumWords},
		{"SUM_COUNTED", "SumCounted", abi.SumCounted},
		{"EXT_RESERVED", "ExtReserved", abi.ExtReserved},
		{"EXT_WORDS", "ExtWords", abi.ExtWords[:]},

		{"META_FORMAT", "MetaFormat", abi.MetaFormat},
		{"META_RECORDS_WORDS", "MetaRecordsWords", abi.MetaRecordsWords},
		{"META_CLOCK_TSC", "MetaClockTSC", abi.MetaClockTSC},
		{"META_CLOCK_MONO", "MetaClockMono", abi.MetaClockMono},
		{"META_KEY_FORMAT", "MetaKeyFormat", abi.MetaKeyFormat},
		{"META_KEY_RECORDS", "MetaKeyRecords", abi.MetaKeyRecords},
		{"META_KEY_CLOCK", "MetaKeyClock", abi.MetaKeyClock},
		{"ENV_PREFIX", "EnvPrefix", abi.EnvPrefix},
		{"ENV_TRACER", "EnvTracer", abi.EnvTracer},
		{"ENV_OUT", "EnvOut", abi.EnvOut},
		{"ENV_SESSION", "EnvSession", abi.EnvSession},
		{"ENV_LIBCALL", "EnvLibcall", abi.EnvLibcall},
		{"ENV_FILTER", "EnvFilter", abi.EnvFilter},
		{"ENV_DEPTH", "EnvDepth", abi.EnvDepth},
		{"ENV_THRESH", "EnvThresh", abi.EnvThresh},
		{"ENV_GRAPH_FUNCS", "EnvGraphFuncs", abi.EnvGraphFuncs},
		{"ENV_GRAPH_NOTRACE", "EnvGraphNotrace", abi.EnvGraphNotrace},
		{"ENV_CLOCK", "EnvClock", abi.EnvClock},
		{"ENV_MODE", "EnvMode", abi.EnvMode},
		{"ENV_INHERIT", "EnvInherit", abi.EnvInherit},
		{"ENV_DEBUG", "EnvDebug", abi.EnvDebug},
		{"ENV_NOP", "EnvNop", abi.EnvNop},
		{"ENV_CTL", "EnvCtl", abi.EnvCtl},
		{"ENV_BUFFER", "EnvBuffer", abi.EnvBuffer},
		{"ENV_ARGS", "EnvArgs", abi.EnvArgs},
		{"ENV_RETVAL", "EnvRetval", abi.EnvRetval},
		{"ENV_LIBARGS", "EnvLibArgs", abi.EnvLibArgs},
		{"ENV_LIBRETVAL", "EnvLibRetval", abi.EnvLibRetval},
		{"ENV_SCHED", "EnvSched", abi.EnvSched},
		{"ENV_ARGS_SOCKET", "EnvArgsSocket", abi.EnvArgsSocket},
		{"ENV_PROLOGUE_SOCKET", "EnvPrologueSocket", abi.EnvPrologueSocket},
		{"PLAN_MAGIC", "PlanMagic", abi.PlanMagic},
		{"PLAN_HEADER", "PlanHeader", abi.PlanHeader},
		{"PLAN_OK", "PlanOK", abi.PlanOK},
		{"PLAN_FAR", "PlanFar", abi.PlanFar},
		{"PLAN_NONE", "PlanNone", abi.PlanNone},
		{"PLAN_PATCH_MAX", "PlanPatchMax", abi.PlanPatchMax},
		{"PLAN_ENTRY_HEAD", "PlanEntryHead", abi.PlanEntryHead},
		{"PROLOGUE_SUFFIX", "PrologueSuffix", abi.PrologueSuffix},
		{"PROLOGUE_MAGIC", "PrologueMagic", abi.PrologueMagic},
		{"PROLOGUE_HEADER", "PrologueHeader", abi.PrologueHeader},
		{"META_KEY_TRACER", "MetaKeyTracer", abi.MetaKeyTracer},
		{"META_KEY_EXE", "MetaKeyExe", abi.MetaKeyExe},
		{"META_KEY_CMDLINE", "MetaKeyCmdline", abi.MetaKeyCmdline},
		{"META_KEY_BUILD_ID", "MetaKeyBuildID", abi.MetaKeyBuildID},
		{"META_KEY_ENDED", "MetaKeyEnded", abi.MetaKeyEnded},
		{"META_KEY_PID", "MetaKeyPid", abi.MetaKeyPid},
		{"META_KEY_PPID", "MetaKeyPpid", abi.MetaKeyPpid},
		{"META_KEY_IMAGE", "MetaKeyImage", abi.MetaKeyImage},
		{"META_KEY_FORKED", "MetaKeyForked", abi.MetaKeyForked},
		{"META_KEY_BIAS", "MetaKeyBias", abi.MetaKeyBias},
		{"META_KEY_TSC_START", "MetaKeyTSCStart", abi.MetaKeyTSCStart},
		{"META_KEY_TSC_END", "MetaKeyTSCEnd", abi.MetaKeyTSCEnd},
		{"META_KEY_TSC_HZ", "MetaKeyTSCHz", abi.MetaKeyTSCHz},
		{"META_KEY_MONO_START", "MetaKeyMonoStart", abi.MetaKeyMonoStart},
		{"META_KEY_MONO_END", "MetaKeyMonoEnd", abi.MetaKeyMonoEnd},
		{"META_KEY_SITES", "MetaKeySites", abi.MetaKeySites},
		{"META_KEY_ENABLED", "MetaKeyEnabled", abi.MetaKeyEnabled},
		{"META_KEY_SKIPPED", "MetaKeySkipped", abi.MetaKeySkipped},
		{"META_KEY_FAILED", "MetaKeyFailed", abi.MetaKeyFailed},
		{"META_KEY_UNSUPPORTED", "MetaKeyUnsupported", abi.MetaKeyUnsupported},
		{"META_KEY_LITERAL", "MetaKeyLiteral", abi.MetaKeyLiteral},
		{"META_KEY_MISALIGNED", "MetaKeyMisaligned", abi.MetaKeyMisaligned},
		{"META_KEY_LIBCALL_SLOTS", "MetaKeyLibcallSlots", abi.MetaKeyLibcallSlots},
		{"META_KEY_LIBCALL_HOOKED", "MetaKeyLibcallHooked", abi.MetaKeyLibcallHooked},
		{"META_KEY_LIBCALL_UNRESOLVED", "MetaKeyLibcallUnresolved", abi.MetaKeyLibcallUnresolved},
		{"META_KEY_LIBCALL_FAILED", "MetaKeyLibcallFailed", abi.MetaKeyLibcallFailed},
		{"META_KEY_PROLOGUE_SITES", "MetaKeyPrologueSites", abi.MetaKeyPrologueSites},
		{"META_KEY_PROLOGUE_CHANGED", "MetaKeyPrologueChanged", abi.MetaKeyPrologueChanged},
		{"META_KEY_DROPPED", "MetaKeyDropped", abi.MetaKeyDropped},
		{"META_KEY_OVERFLOW", "MetaKeyOverflow", abi.MetaKeyOverflow},
		{"META_KEY_UNWOUND", "MetaKeyUnwound", abi.MetaKeyUnwound},
		{"META_KEY_STOPPED", "MetaKeyStopped", abi.MetaKeyStopped},
		{"META_KEY_LOST_BYTES", "MetaKeyLostBytes", abi.MetaKeyLostBytes},
		{"META_KEY_RECORDED_BYTES", "MetaKeyRecordedBytes", abi.MetaKeyRecordedBytes},
		{"META_KEY_LOST_THREADS", "MetaKeyLostThreads", abi.MetaKeyLostThreads},
		{"META_KEY_CONTEXTS", "MetaKeyContexts", abi.MetaKeyContexts},
		{"META_KEY_CONTEXTS_LOST", "MetaKeyContextsLost", abi.MetaKeyContextsLost},
		{"META_KEY_MAX_DEPTH", "MetaKeyMaxDepth", abi.MetaKeyMaxDepth},
		{"META_KEY_THRESH_TSC", "MetaKeyThreshTSC", abi.MetaKeyThreshTSC},
		{"META_KEY_GRAPH_FUNCS", "MetaKeyGraphFuncs", abi.MetaKeyGraphFuncs},
		{"META_KEY_GRAPH_NOTRACE", "MetaKeyGraphNotrace", abi.MetaKeyGraphNotrace},
		{"META_KEY_CONFIG", "MetaKeyConfig", abi.MetaKeyConfig},
		{"META_KEY_MODULE", "MetaKeyModule", abi.MetaKeyModule},
		{"META_KEY_MODULES_FORGOTTEN", "MetaKeyModulesForgotten", abi.MetaKeyModulesForgotten},
		{"META_KEY_BUFFER", "MetaKeyBuffer", abi.MetaKeyBuffer},
		{"META_KEY_RING_BYTES", "MetaKeyRingBytes", abi.MetaKeyRingBytes},
		{"META_KEY_RING_ASKED", "MetaKeyRingAsked", abi.MetaKeyRingAsked},
		{"META_KEY_OVERWRITTEN", "MetaKeyOverwritten", abi.MetaKeyOverwritten},
		{"META_KEY_SIGNAL", "MetaKeySignal", abi.MetaKeySignal},
		{"META_KEY_DETACHED", "MetaKeyDetached", abi.MetaKeyDetached},
		{"META_KEY_EXIT_CODE", "MetaKeyExitCode", abi.MetaKeyExitCode},
		{"META_KEY_COMM", "MetaKeyComm", abi.MetaKeyComm},
		{"META_KEY_RU_UTIME", "MetaKeyRUUtime", abi.MetaKeyRUUtime},
		{"META_KEY_RU_STIME", "MetaKeyRUStime", abi.MetaKeyRUStime},
		{"META_KEY_RU_MAXRSS", "MetaKeyRUMaxRSS", abi.MetaKeyRUMaxRSS},
		{"META_KEY_RU_MINFLT", "MetaKeyRUMinflt", abi.MetaKeyRUMinflt},
		{"META_KEY_RU_MAJFLT", "MetaKeyRUMajflt", abi.MetaKeyRUMajflt},
		{"META_KEY_RU_INBLOCK", "MetaKeyRUInblock", abi.MetaKeyRUInblock},
		{"META_KEY_RU_OUBLOCK", "MetaKeyRUOublock", abi.MetaKeyRUOublock},
		{"META_KEY_RU_NVCSW", "MetaKeyRUNvcsw", abi.MetaKeyRUNvcsw},
		{"META_KEY_RU_NIVCSW", "MetaKeyRUNivcsw", abi.MetaKeyRUNivcsw},
		{"META_KEY_SCHED", "MetaKeySched", abi.MetaKeySched},
		{"META_KEY_SCHED_WHY", "MetaKeySchedWhy", abi.MetaKeySchedWhy},
		{"META_KEY_SCHED_SWITCHES", "MetaKeySchedSwitches", abi.MetaKeySchedSwitches},
		{"META_KEY_SCHED_LOST", "MetaKeySchedLost", abi.MetaKeySchedLost},
		{"SCHED_ON", "SchedOn", abi.SchedOn},
		{"SCHED_REFUSED", "SchedRefused", abi.SchedRefused},
		{"BUFFER_STREAM", "BufferStream", abi.BufferStream},
		{"BUFFER_RING", "BufferRing", abi.BufferRing},
		{"BUFFER_WRITER", "BufferWriter", abi.BufferWriter},

		{"FTRT_FUNCTION", "TracerFunction", abi.TracerFunction},
		{"FTRT_GRAPH", "TracerGraph", abi.TracerGraph},
		{"FTRT_NOP", "TracerNop", abi.TracerNop},
		{"FTRT_TRACER_FUNCTION", "TracerFunctionName", abi.TracerFunctionName},
		{"FTRT_TRACER_GRAPH", "TracerGraphName", abi.TracerGraphName},
		{"FTRT_TRACER_NOP", "TracerNopName", abi.TracerNopName},

		{"FTRT_CFG_SECTION", "ConfigSection", abi.ConfigSection},
		{"FTRT_CFG_SIZE", "ConfigSize", abi.ConfigSize},
		{"sizeof(struct ftrt_config)", "ConfigSize", abi.ConfigSize},
		{"FTRT_CFG_TRACE_DIR_MAX", "TraceDirMax", abi.TraceDirMax},
		{"FTRT_CFG_LIBCALLS_MAX", "LibcallsMax", abi.LibcallsMax},
		{"FTRT_CFG_MAGIC", "ConfigMagic", abi.ConfigMagic},
		{"FTRT_CFG_PATCHED", "ConfigPatched", abi.ConfigPatched},
		{"FTRT_CFG_NOTABLE", "ConfigNoTable", abi.ConfigNoTable},
		{"FTRT_CFG_CTL", "ConfigCtl", abi.ConfigCtl},
		{"FTRT_CFG_LIBCALL", "ConfigLibcall", abi.ConfigLibcall},
		{"FTRT_CFG_STATE_NONE", "ConfigStateNone", slices.Index(abi.ConfigStateNames[:], abi.ConfigStateNone)},
		{"FTRT_CFG_STATE_PATCHED", "ConfigStatePatched", slices.Index(abi.ConfigStateNames[:], abi.ConfigStatePatched)},
		{"FTRT_CFG_STATE_OVERRIDDEN", "ConfigStateOverridden", slices.Index(abi.ConfigStateNames[:], abi.ConfigStateOverridden)},
		{"FTRT_CFG_STATE_MISMATCH", "ConfigStateMismatch", slices.Index(abi.ConfigStateNames[:], abi.ConfigStateMismatch)},
		{"FTRT_CFG_STATE_NAMES", "ConfigStateNames", abi.ConfigStateNames[:]},

		{"FTRT_TABLE_SECTION", "TableSection", abi.TableSection},
		{"FTRT_PROLOGUE_SECTION", "PrologueSection", abi.PrologueSection},
		{"FTRT_PROLOGUE_ENTRY", "PrologueEntry", abi.PrologueEntry},
		{"FTRT_ATTACH_SECTION", "AttachSection", abi.AttachSection},
		{"FTRT_SYM_INIT", "Init", abi.Init},
		{"FTRT_SYM_PREINIT", "Preinit", abi.Preinit},
		{"FTRT_SYM_MODULE_INIT", "ModuleInit", abi.ModuleInit},
		{"FTRT_SYM_MODULE_REGISTER", "ModuleRegister", abi.ModuleRegister},
		{"FTRT_SYM_MODULE_UNREGISTER", "ModuleUnregister", abi.ModuleUnregister},
		{"FTRT_SYM_MODULE_SLOTS", "ModuleSlots", abi.ModuleSlots},
		{"FTRT_SYM_GRAPH_ENTER", "GraphEnter", abi.GraphEnter},
		{"FTRT_SYM_GRAPH_LEAVE", "GraphLeave", abi.GraphLeave},
		{"FTRT_SYM_PROLOGUE_GRAPH_ENTER", "PrologueGraphEnter", abi.PrologueGraphEnter},
		{"FTRT_SYM_PROLOGUE_GRAPH_LEAVE", "PrologueGraphLeave", abi.PrologueGraphLeave},
		{"FTRT_SYM_PROLOGUE_CALLER", "PrologueCaller", abi.PrologueCaller},
		{"FTRT_SYM_PROLOGUE_STUB", "PrologueStub", abi.PrologueStub},
		{"FTRT_ARM64_MCOUNT", "ARM64Mcount", abi.ARM64Mcount},
		{"FTRT_ARM64_CALLER", "ARM64Caller", abi.ARM64Caller},
		{"FTRT_ARM64_MCOUNT_CALLER", "ARM64McountCaller", abi.ARM64McountCaller},
		{"FTRT_ARM64_OPS_CALLER", "ARM64OpsCaller", abi.ARM64OpsCaller},
		{"FTRT_T_N", "NumTargets", int(abi.NumTargets)},

		{"TRAMP_LEA", "TrampLea", abi.TrampLea},
		{"TRAMP_CALL_ENTER", "TrampCallEnter", abi.TrampCallEnter},
		{"TRAMP_ENTERED", "TrampEntered", abi.TrampEntered},
		{"TRAMP_DROP", "TrampDrop", abi.TrampDrop},
		{"TRAMP_CALL_BODY", "TrampCallBody", abi.TrampCallBody},
		{"TRAMP_HOOK", "TrampHook", abi.TrampHook},
		{"TRAMP_SKIP", "TrampSkip", abi.TrampSkip},
		{"TRAMP_PAD", "TrampPad", abi.TrampPad},
		{"TRAMP_SIZE", "TrampSize", abi.TrampSize},

		{"TB_CALLS", "TBCalls", abi.TBCalls},
		{"TB_ENTRIES", "TBEntries", abi.TBEntries},
		{"TB_EXITS", "TBExits", abi.TBExits},
		{"TB_N", "TBN", abi.TBN},
		{"TB_BUSY", "TBBusy", abi.TBBusy},
		{"TB_SUSPENDED", "TBSuspended", abi.TBSuspended},
		{"TB_BASE", "TBBase", abi.TBBase},
		{"TB_LAST", "TBLast", abi.TBLast},
		{"TB_OWN", "TBOwn", abi.TBOwn},
		{"TB_DEPTH", "TBDepth", abi.TBDepth},
		{"TB_STOPPED", "TBStopped", abi.TBStopped},
		{"TB_CHOSEN", "TBChosen", abi.TBChosen},
		{"TB_NOTRACE", "TBNotrace", abi.TBNotrace},
		{"TB_SHADOW", "TBShadow", abi.TBShadow},
		{"TB_WORDS", "TBWords", abi.TBWords},
		{"SH_RET", "SHRet", abi.SHRet},
		{"SH_IP", "SHIP", abi.SHIP},
		{"SH_SP", "SHSP", abi.SHSP},
		{"SH_HOOK", "SHHook", abi.SHHook},
		{"SH_POS", "SHPos", abi.SHPos},
		{"SH_MARK", "SHMark", abi.SHMark},
		{"SH_SIZE", "SHSize", abi.SHSize},
		{"MARK_CHOSEN", "MarkChosen", abi.MarkChosen},
		{"MARK_NOTRACE", "MarkNotrace", abi.MarkNotrace},
		{"SUBTREE_ON", "SubtreeOn", abi.SubtreeOn},
		{"SUBTREE_FUNCS", "SubtreeFuncs", abi.SubtreeFuncs},
		{"SUBTREE_BITS", "SubtreeBits", abi.SubtreeBits},
		{"SHADOW_MAX", "ShadowMax", abi.ShadowMax},
		{"TBUF_WORDS", "TBufWords", abi.TBufWords},
		{"LS_IP", "LSIP", abi.LSIP},
		{"LS_FLAGS", "LSFlags", abi.LSFlags},
		{"LS_TARGET", "LSTarget", abi.LSTarget},
		{"LS_SIZE", "LSSize", abi.LSSize},
	}
	for _, f := range cfgFields {
		m = append(m, mirror{"offsetof(struct ftrt_config, " + f.name + ")", f.goName, f.off},
			mirror{"sizeof(((struct ftrt_config *)0)->" + f.name + ")", f.goName, f.size})
	}
	return m
}

// targetGoNames are the Go names of each target's index and symbol.
var targetGoNames = [abi.NumTargets][2]string{
	{"TargetFentry", "Fentry"}, {"TargetMcount", "Mcount"}, {"TargetCaller5", "Caller5"}, {"TargetCaller6", "Caller6"},
	{"TargetMcaller5", "McountCaller5"}, {"TargetMcaller6", "McountCaller6"}, {"TargetChain5", "ChainCaller5"},
	{"TargetChain6", "ChainCaller6"}, {"TargetStub", "Stub"},
}

// program is the C program that prints every value of ms (a line
// "<index> <value>" each: ints in decimal, strings as they are, lists
// space-separated), then each of FTRT_TARGETS_X86_64's targets as
// "FTRT_T_<id> <index> <symbol>".
func program(ms []mirror) string {
	var c strings.Builder
	c.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"core/ftrt.h\"\n#include \"arch/layout.h\"\n")
	c.WriteString("#define TARGET(id, sym) printf(\"FTRT_T_%s %d %s\\n\", #id, FTRT_T_##id, #sym);\n")
	c.WriteString("int main(void)\n{\n")
	for i, m := range ms {
		switch v := m.v.(type) {
		case int:
			fmt.Fprintf(&c, "\tprintf(\"%d %%lld\\n\", (long long)(%s));\n", i, m.c)
		case string:
			if m.c == "FTRT_CFG_MAGIC" { // a char array's initializer, no NUL
				fmt.Fprintf(&c, "\tprintf(\"%d %%.%ds\\n\", (const char[%d])%s);\n", i, len(v), len(v), m.c)
				break
			}
			fmt.Fprintf(&c, "\tprintf(\"%d %%s\\n\", %s);\n", i, m.c)
		case []int:
			fmt.Fprintf(&c, "\t{\n\t\tstatic const long long a[%d] = %s;\n\t\tprintf(\"%d\");\n", len(v), m.c, i)
			c.WriteString("\t\tfor (size_t k = 0; k < sizeof a / sizeof a[0]; k++)\n\t\t\tprintf(\" %lld\", a[k]);\n\t\tprintf(\"\\n\");\n\t}\n")
		case []string:
			fmt.Fprintf(&c, "\t{\n\t\tstatic const char *const a[%d] = %s;\n\t\tprintf(\"%d\");\n", len(v), m.c, i)
			c.WriteString("\t\tfor (size_t k = 0; k < sizeof a / sizeof a[0]; k++)\n\t\t\tprintf(\" %s\", a[k]);\n\t\tprintf(\"\\n\");\n\t}\n")
		default:
			panic(fmt.Sprintf("%s: a Go value of type %T", m.c, m.v))
		}
	}
	c.WriteString("\tFTRT_TARGETS_X86_64(TARGET)\n\treturn 0;\n}\n")
	return c.String()
}

// goText is how the C program prints v.
func goText(v any) string {
	switch v := v.(type) {
	case []int:
		var b strings.Builder
		for _, x := range v {
			fmt.Fprintf(&b, " %d", x)
		}
		return strings.TrimSpace(b.String())
	case []string:
		return strings.Join(v, " ")
	}
	return fmt.Sprint(v)
}

// TestHeader compiles a program that includes the runtime's interface
// headers and prints every value, size and offset they hold, and checks
// each against package abi's; and that every #define of the headers, and
// every constant and variable of package abi, is among those checked.
func TestHeader(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc, which builds the runtime, is not installed (scripts/deps.sh installs it): %v", err)
	}
	src, err := filepath.Abs(filepath.Join("..", "src"))
	if err != nil {
		t.Fatal(err)
	}
	ms := mirrors()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "values.c"), []byte(program(ms)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-std=gnu11", "-Wall", "-Werror", "-I", src, "-o", filepath.Join(dir, "values"), filepath.Join(dir, "values.c")).CombinedOutput(); err != nil {
		t.Fatalf("compiling the program that prints the headers' values: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "values")).Output()
	if err != nil {
		t.Fatalf("running the program that prints the headers' values: %v", err)
	}

	seen := map[string]bool{}
	targets := 0
	for line := range strings.Lines(string(out)) {
		key, val, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if id, ok := strings.CutPrefix(key, "FTRT_T_"); ok {
			idx, sym, _ := strings.Cut(val, " ")
			i, err := strconv.Atoi(idx)
			if err != nil || i != targets || i >= int(abi.NumTargets) {
				t.Errorf("FTRT_TARGETS_X86_64: FTRT_T_%s is target %s, want %d of package abi's %d", id, idx, targets, abi.NumTargets)
				targets++
				continue
			}
			if got := abi.Target(i).String(); got != sym {
				t.Errorf("FTRT_TARGETS_X86_64: target %d (FTRT_T_%s) is %s in the header, %s in package abi (%s)", i, id, sym, got, targetGoNames[i][1])
			}
			seen[targetGoNames[i][0]], seen[targetGoNames[i][1]] = true, true
			targets++
			continue
		}
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(ms) {
			t.Fatalf("the program printed %q", line)
		}
		m := ms[i]
		if want := goText(m.v); val != want {
			t.Errorf("%s: the header has %s, package abi %s (%s)", m.c, val, want, m.goName)
		}
		seen[m.c], seen[m.goName] = true, true
	}
	if targets != int(abi.NumTargets) {
		t.Errorf("FTRT_TARGETS_X86_64 has %d targets, package abi %d (NumTargets)", targets, abi.NumTargets)
	}
	seen["Target"], seen["NumTargets"] = true, true
	if len(seen) == 0 {
		t.Fatal("the program printed nothing")
	}

	// Every value the headers define is checked...
	define := regexp.MustCompile(`(?m)^#define\s+(\w+)(\(?)`)
	for _, h := range headers {
		b, err := os.ReadFile(filepath.Join(src, h))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range define.FindAllStringSubmatch(string(b), -1) {
			name, fn := d[1], d[2] == "("
			if fn || slices.Contains(guards, name) {
				continue // FTRT_TARGETS_X86_64, printed above; an include guard
			}
			if !seen[name] {
				t.Errorf("%s defines %s, which package abi does not mirror (or this test does not check)", h, name)
			}
		}
	}
	// ...and so is every constant and variable of package abi.
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("package abi's files: %v, %d", err, len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		{
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
					continue
				}
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if n.IsExported() && !seen[n.Name] {
							t.Errorf("package abi's %s is checked against no value of the headers", n.Name)
						}
					}
				}
			}
		}
	}
}
