package launch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"ftpatch/runtime/abi"
)

// Settings are what a recording asks of the runtime, each one of the
// runtime's FTRACE* variables (runtime/src: options.c, patch.c, trace.c, dir.c).
// The zero value of a field leaves its variable unset.
type Settings struct {
	Tracer       string        // FTRACE: function, function_graph or nop; "" for a pre-patched program's recorded tracer
	Out          string        // FTRACE_OUT: the trace directory
	Filter       []string      // FTRACE_FILTER: globs, !glob excludes
	Depth        int           // FTRACE_DEPTH: at most this many nested calls graphed
	Threshold    time.Duration // FTRACE_THRESH: no call shorter than this that called nothing traced
	GraphFuncs   []string      // FTRACE_GRAPH_FUNCS: only calls made while one of these is on the thread's stack
	GraphNotrace []string      // FTRACE_GRAPH_NOTRACE: nothing inside one of these
	Buffer       string        // FTRACE_BUFFER: stream, writer, or ring:SIZE (the flight recorder); "" the default
	Ctl          bool          // FTRACE_CTL=1: the program listens for ftpatch ctl
	Libcall      bool          // FTRACE_LIBCALL=1: calls into shared libraries traced too
	NestLibcall  bool          // FTRACE_LIBCALL=nest: and those libraries make into one another (implies Libcall)
	Sched        bool          // FTRACE_SCHED=1: each traced thread's context switches recorded beside its calls
	Args         string        // FTRACE_ARGS: the arguments to record (func@arg1,arg2/s;...)
	Retval       string        // FTRACE_RETVAL: the return values to record (func[/fmt];...)
	ArgsSocket   string        // FTRACE_ARGS_SOCKET: the socket that gives each module's own (ftpatch record --auto-args)
	// PrologueSocket is FTRACE_PROLOGUE_SOCKET: the socket that gives
	// each module's prologue plan (ftpatch record -P).
	PrologueSocket string
	LibArgs        string // FTRACE_LIBARGS: FTRACE_ARGS's entries for library calls alone, after its own (package protos's table)
	LibRetval      string // FTRACE_LIBRETVAL: FTRACE_RETVAL's entries for library calls alone, after its own
	// Session is FTRACE_SESSION: PID@START of the process a new session
	// is rooted at (ftpatch record's own, so that the programs it
	// starts, siblings under an untraced shell, join one session).
	Session string
}

// Variables are the variables Settings owns: Env removes each from the
// environment it is given before setting those the settings ask for,
// so a recording is what its command line says, whatever the caller's
// environment held.
var Variables = []string{abi.EnvTracer, abi.EnvOut, abi.EnvFilter, abi.EnvDepth, abi.EnvThresh,
	abi.EnvGraphFuncs, abi.EnvGraphNotrace, abi.EnvBuffer, abi.EnvCtl, abi.EnvArgs, abi.EnvRetval, abi.EnvArgsSocket, abi.EnvPrologueSocket, abi.EnvSession,
	abi.EnvLibcall, abi.EnvLibArgs, abi.EnvLibRetval, abi.EnvSched}

// vars are the settings as NAME=value, the unset ones left out.
func (s Settings) vars() []string {
	var out []string
	add := func(name, val string) {
		if val != "" {
			out = append(out, name+"="+val)
		}
	}
	add(abi.EnvTracer, s.Tracer)
	add(abi.EnvOut, s.Out)
	add(abi.EnvFilter, strings.Join(s.Filter, ","))
	add(abi.EnvBuffer, s.Buffer)
	add(abi.EnvArgs, s.Args)
	add(abi.EnvRetval, s.Retval)
	add(abi.EnvArgsSocket, s.ArgsSocket)
	add(abi.EnvPrologueSocket, s.PrologueSocket)
	add(abi.EnvLibArgs, s.LibArgs)
	add(abi.EnvLibRetval, s.LibRetval)
	add(abi.EnvSession, s.Session)
	if s.Ctl {
		add(abi.EnvCtl, "1")
	}
	if s.NestLibcall {
		add(abi.EnvLibcall, "nest")
	} else if s.Libcall {
		add(abi.EnvLibcall, "1")
	}
	if s.Sched {
		add(abi.EnvSched, "1")
	}
	if s.Depth > 0 {
		add(abi.EnvDepth, strconv.Itoa(s.Depth))
	}
	if s.Threshold > 0 {
		add(abi.EnvThresh, fmt.Sprintf("%dns", s.Threshold.Nanoseconds()))
	}
	add(abi.EnvGraphFuncs, strings.Join(s.GraphFuncs, ","))
	add(abi.EnvGraphNotrace, strings.Join(s.GraphNotrace, ","))
	return out
}

// Env returns environ (NAME=value entries) with the settings applied:
// every variable of Variables removed, then those the settings set
// appended. Every other variable, FTRACE* ones included (FTRACE_CLOCK,
// FTRACE_MODE, FTRACE_DEBUG, FTRACE_INHERIT...), is kept as it was.
// dropped lists the entries of environ removed and not set again: what
// the caller had that the settings leave unset.
func (s Settings) Env(environ []string) (env, dropped []string) {
	set := s.vars()
	given := map[string]bool{}
	for _, v := range set {
		name, _, _ := strings.Cut(v, "=")
		given[name] = true
	}
	owned := map[string]bool{}
	for _, v := range Variables {
		owned[v] = true
	}
	for _, e := range environ {
		name, _, _ := strings.Cut(e, "=")
		if !owned[name] {
			env = append(env, e)
		} else if !given[name] {
			dropped = append(dropped, e)
		}
	}
	return append(env, set...), dropped
}

// SessionID is this process's PID@START, FTRACE_SESSION's form: its pid
// and its start time (field 22 of /proc/self/stat, clock ticks since
// boot), as the runtime names a session's process images. "" where
// /proc cannot say.
func SessionID() string {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:]) // state is field 3: f[0]
	if len(f) < 20 {
		return ""
	}
	return fmt.Sprintf("%d@%s", os.Getpid(), f[19])
}
