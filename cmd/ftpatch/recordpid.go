package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ftpatch/attach"
	"ftpatch/control"
	"ftpatch/tracee"
)

// recordPidHelp is what record's help says of -p.
const recordPidHelp = `
-p PID records a process that is already running, linked with the
runtime or built with sites and linked without it (the runtime is then
loaded into it), started without any FTRACE variable: ftpatch attaches
to it through ptrace as ftpatch ctl does, asks it to trace into -d DIR
(which must not exist; the process makes it, as its own user) with
--tracer's tracer and the functions --filter chooses (all by default),
and lets it run; at ^C, SIGTERM, --duration or the process's exit, every
site goes back to the bytes it had and the trace ends; so do the traces
of the processes it forked meanwhile (each attached to likewise). The
process runs on as before, the runtime's control server still listening
(ftpatch ctl).
A second -p while one records the process is refused; once that one
has ended, another -p records it again, into its own directory. The
flags the runtime reads only at a program's start (-F, -N, -D, -t, -A,
-R, --auto-args, -P, --buffer, -l) are refused with -p; library calls
and scheduler events are not recorded.
`

// pidRefused are record's flags that a running process cannot take,
// with their names.
func (r *recordFlags) pidRefused() []string {
	var bad []string
	for _, f := range []struct {
		set  bool
		name string
	}{
		{len(r.funcs) > 0, "-F"}, {len(r.notrace) > 0, "-N"}, {r.depth != 0, "-D"}, {r.threshold != 0, "-t"},
		{len(r.args) > 0, "-A"}, {len(r.retval) > 0, "-R"}, {r.autoArgs, "--auto-args"}, {len(r.prologue) > 0, "-P"},
		{r.buffer != "", "--buffer"}, {r.nestLibcall, "-l"}, {r.ctl, "--ctl"},
	} {
		if f.set {
			bad = append(bad, f.name)
		}
	}
	return bad
}

// recordPid records running process pid into dir, as -p says, for
// duration (0: until ^C, SIGTERM or the process's end); told, it says
// where the trace is when it ends (record's; live replays it instead).
func (r *recordFlags) recordPid(pid int, dir string, duration time.Duration, told bool, stderr io.Writer) error {
	if bad := r.pidRefused(); len(bad) > 0 {
		return usage(fmt.Errorf("record -p: %s: read by the runtime at a program's start, which a running process is past", strings.Join(bad, ", ")))
	}
	if t := r.tracer; t != "" && t != "function" && t != "function_graph" {
		return usage(fmt.Errorf("record -p: --tracer %q: want function or function_graph", t))
	}
	abs, err := filepath.Abs(dir)
	if err != nil || strings.ContainsAny(abs, "\n") {
		return usage(fmt.Errorf("record -p: -d %q: not a directory name", dir))
	}
	if _, err := os.Lstat(abs); err == nil {
		return fmt.Errorf("record -p: %s exists: give a directory that does not (the process makes it)", abs)
	}
	var globs []string
	for _, f := range r.filter {
		for _, g := range strings.Split(f, ",") {
			if g = strings.TrimSpace(g); g != "" {
				globs = append(globs, g)
			}
		}
	}
	if len(globs) == 0 {
		globs = []string{"*"}
	}
	for _, g := range globs {
		if strings.ContainsAny(g, " \n") {
			return usage(fmt.Errorf("record -p: --filter %q: a glob has no space or newline", g))
		}
	}
	name := processName(pid)
	before, _ := tracee.Descendants(pid)
	if err := attachCtl(pid, stderr); err != nil {
		if !errors.Is(err, control.ErrNoProcess) {
			err = fmt.Errorf("record -p %d: %w", pid, err)
		}
		return err
	}
	steps := []string{"out " + abs}
	if r.tracer != "" {
		steps = append(steps, "tracer "+r.tracer)
	}
	steps = append(steps, "enable "+strings.Join(globs, " "))
	for _, req := range steps {
		if _, err := control.Do(pid, req); err != nil {
			if req == steps[len(steps)-1] {
				control.Do(pid, "end") // what was enabled, disabled
			}
			return fmt.Errorf("record -p %d: %s: %w", pid, strings.Fields(req)[0], err)
		}
	}
	until := "^C"
	if duration > 0 {
		until = "^C or " + duration.String()
	}
	fmt.Fprintf(stderr, "ftpatch: recording process %d (%s) into %s until %s or its end\n", pid, name, abs, until)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var timeout <-chan time.Time
	if duration > 0 {
		timeout = time.After(duration)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	gone := false
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-timeout:
			break wait
		case <-tick.C:
			if !alive(pid) {
				gone = true
				break wait
			}
		}
	}
	if !gone {
		if _, err := control.Do(pid, "end"); err != nil && alive(pid) {
			return fmt.Errorf("record -p %d: ending its trace: %w", pid, err)
		}
	}
	if n := endForked(pid, before); n > 0 {
		fmt.Fprintf(stderr, "ftpatch: ended the traces of %d processes %d forked meanwhile\n", n, pid)
	}
	if !told {
		return nil
	}
	q := shellQuote(abs)
	how := ""
	if gone {
		how = fmt.Sprintf("process %d ended; ", pid)
	}
	fmt.Fprintf(stderr, "ftpatch: %sthe trace is in %s: read it with `ftpatch replay %s` or `ftpatch report %s`\n", how, abs, q, q)
	return nil
}

// alive says whether process pid still runs (not a zombie).
func alive(pid int) bool {
	st, err := tracee.ReadStat(pid)
	return err == nil && st.Alive()
}

// forkedSince lists process pid's descendants that run now and are not
// among before (by pid and start time): those it forked while record -p
// recorded it.
func forkedSince(pid int, before []tracee.Stat) []tracee.Stat {
	now, _ := tracee.Descendants(pid)
	var made []tracee.Stat
	for _, d := range now {
		if d.Alive() && !slices.ContainsFunc(before, func(b tracee.Stat) bool { return b.Pid == d.Pid && b.Start == d.Start }) {
			made = append(made, d)
		}
	}
	return made
}

// endForked ends the traces of the processes pid forked while record -p
// recorded it (before: its descendants then), which record on in their
// own images of the session, each with its copy of the runtime, after
// pid's own end: each is attached to as ftpatch ctl does, and its trace
// ended. One that exec'd a program without the runtime, that exits
// meanwhile, or whose trace has ended, is left as it is. It returns
// how many were ended.
func endForked(pid int, before []tracee.Stat) int {
	n := 0
	for _, d := range forkedSince(pid, before) {
		if _, err := attach.Control(d.Pid); err != nil {
			continue
		}
		if _, err := control.Do(d.Pid, "end"); err == nil {
			n++
		}
	}
	return n
}

// processName is process pid's command name, for messages.
func processName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return control.Sanitize(strings.TrimSpace(string(b)))
}
