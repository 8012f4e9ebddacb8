package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"ftpatch/arch"
	"ftpatch/attach"
	"ftpatch/control"
	ftrt "ftpatch/runtime"
)

func newCtl(stdout, stderr io.Writer) *cobra.Command {
	var noAttach bool
	cmd := &cobra.Command{
		Use:   "ctl PID status | enable GLOB... | disable GLOB... | tracer NAME | on | off | snapshot [DIR] | out DIR | end",
		Short: "Control the tracing of a running process that has ftpatch's runtime",
		Long: `ctl asks a running process to change its tracing, while its threads go on
running. The process must have ftpatch's runtime, linked or preloaded
(libftrt.so). Started with FTRACE_CTL=1, it listens on a socket in the
abstract namespace (no file), named ftpatch-PID- and 16 random hex
digits, and answers only its own user or root. Started without, it is
asked to listen on first use: ctl holds it a moment through ptrace (the
kernel's rules on who may trace whom apply: kernel.yama.ptrace_scope,
CAP_SYS_PTRACE), makes one of its threads, stopped where the C library
holds no lock, start the runtime's control server, and lets it go as it
was; the server stays, as FTRACE_CTL=1 would have started it
(--no-attach: never; a process that does not listen is an error). A
process with sites (-pg, -mfentry, patchable entries) but linked without
the runtime gets the runtime's shared object loaded first (dlopen, made
by a thread held likewise), as ftpatch record would have preloaded it.

ctl finds the socket among those the process holds (/proc/PID), never
from the process's environment, and sends nothing unless the socket's
listener is the process itself (SO_PEERCRED); what the process answers
is printed with its control characters escaped. A process busy
with other requests is asked again, for 60 seconds at most. Without
FTRACE it starts with every site a NOP; the first enable opens its trace
(FTRACE_OUT, else ./ftrace.data in its directory) with the tracer chosen
(by default function_graph).

  status          its pid, tracer, whether it records (on, off, or none:
                  no trace yet), its trace directory, its buffer (stream,
                  or ring: the flight recorder) and its enabled sites
  enable GLOB...  trace the functions the globs choose too (FTRACE_FILTER's
                  syntax: shell globs, !glob excluding), changing their
                  sites while threads run them; a shared object the
                  process loads later gets them too
  disable GLOB... trace them no more (nor in a shared object loaded later)
  tracer NAME     record with function, function_graph or nop from now on
                  (calls under way keep the tracer they began with)
  on, off         resume or pause recording without changing a site
  snapshot [DIR]  write what the flight recorder (FTRACE_BUFFER=ring:SIZE)
                  holds now as a whole trace into DIR (by default
                  snapshot-N inside the trace's directory); tracing goes on
  out DIR         where the trace opens at the first enable, for a process
                  that has none yet (before FTRACE_OUT)
  end             every site back to its NOP and the trace ended: the
                  process records no more until it is given another
                  directory (out DIR) and an enable (ftpatch record -p's
                  end, and another record -p's start)

Exit status: 0 done, 1 the process refused (the reason is printed), has
no runtime or cannot be attached to, 2 a usage error.`,
		Example: `  FTRACE_CTL=1 ./server &
  ftpatch ctl $! enable 'handle_*' '!handle_ping'
  ftpatch ctl $(pidof server-started-without) status
  ftpatch ctl $! status
  ftpatch ctl $! disable '*'
  FTRACE_CTL=1 FTRACE=function_graph FTRACE_BUFFER=ring:64m ./server &
  ftpatch ctl $! snapshot /tmp/before-the-crash && ftpatch replay /tmp/before-the-crash`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := strconv.Atoi(args[0])
			if err != nil || pid <= 0 {
				return usage(fmt.Errorf("ctl: %q is not a process id", args[0]))
			}
			req, err := request(args[1], args[2:])
			if err != nil {
				return usage(err)
			}
			reply, err := control.Do(pid, req)
			if errors.Is(err, control.ErrNotListening) && !noAttach {
				// Started without FTRACE_CTL: its runtime is asked to
				// listen, through ptrace; loaded first into a process
				// with sites and no runtime.
				if aerr := attachCtl(pid, stderr); aerr != nil {
					return fmt.Errorf("%w; and attaching to it: %w", err, aerr)
				}
				reply, err = control.Do(pid, req)
			}
			if err != nil {
				return err
			}
			_, err = io.WriteString(stdout, reply)
			return err
		},
	}
	cmd.Flags().BoolVar(&noAttach, "no-attach", false, "never attach: a process that does not listen (yet: one started with FTRACE_CTL=1 listens once its initialisers begin) is an error, and is not stopped")
	return cmd
}

// request is the protocol's line for the command verb with args,
// checked: a snapshot's directory made absolute (the process has its
// own working directory).
func request(verb string, args []string) (string, error) {
	switch verb {
	case "status", "on", "off", "end":
		if len(args) != 0 {
			return "", fmt.Errorf("ctl %s takes no argument", verb)
		}
		return verb, nil
	case "enable", "disable":
		if len(args) == 0 {
			return "", fmt.Errorf("ctl %s: name the functions: one or more globs", verb)
		}
		for _, a := range args {
			if a == "" || strings.ContainsAny(a, " \n,") {
				return "", fmt.Errorf("ctl %s: %q: a glob has no space, comma or newline (give each as an argument of its own)", verb, a)
			}
		}
		return verb + " " + strings.Join(args, " "), nil
	case "tracer":
		if len(args) != 1 {
			return "", fmt.Errorf("ctl tracer: name one tracer: function, function_graph or nop")
		}
		return "tracer " + args[0], nil
	case "out":
		if len(args) != 1 {
			return "", fmt.Errorf("ctl out: name one directory")
		}
		abs, err := filepath.Abs(args[0])
		if err != nil || strings.ContainsAny(abs, "\n") {
			return "", fmt.Errorf("ctl out: %q: not a directory name", args[0])
		}
		return "out " + abs, nil
	case "snapshot":
		if len(args) > 1 {
			return "", fmt.Errorf("ctl snapshot: at most one directory")
		}
		if len(args) == 0 {
			return "snapshot", nil
		}
		abs, err := filepath.Abs(args[0])
		if err != nil || strings.ContainsAny(abs, "\n") {
			return "", fmt.Errorf("ctl snapshot: %q: not a directory name", args[0])
		}
		return "snapshot " + abs, nil
	}
	return "", fmt.Errorf("ctl: unknown request %q: want status, enable, disable, tracer, on, off, snapshot, out or end", verb)
}

// attachCtl makes process pid listen for ftpatch ctl: its runtime asked
// through ptrace (attach.Control), or, in a process with sites and no
// runtime, the runtime's shared object loaded into it first
// (attach.Inject), as record would have preloaded it.
func attachCtl(pid int, stderr io.Writer) error {
	_, err := attach.Control(pid)
	if !errors.Is(err, attach.ErrNoRuntime) {
		return err
	}
	sited, serr := attach.Sited(pid)
	if serr != nil {
		return serr
	}
	if !sited {
		return fmt.Errorf("process %d: %w (making sites from its functions' prologues in a running process is not done yet)", pid, attach.ErrNoSites)
	}
	lib, err := ftrt.Find(context.Background(), ftrt.Options{Arch: arch.Default, Notes: stderr}, installPrefix())
	if err != nil {
		return fmt.Errorf("process %d has sites and no runtime, and the runtime to load cannot be had: %w", pid, err)
	}
	if lib.Scratch != "" {
		// Mapped once loaded: the file may go.
		defer os.RemoveAll(lib.Scratch)
	}
	if _, err := attach.Inject(pid, lib.Shared); err != nil {
		return err
	}
	_, err = attach.Control(pid)
	return err
}
