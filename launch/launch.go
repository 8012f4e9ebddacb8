// Package launch runs a program on ftpatch's behalf (the program
// `ftpatch record` traces, the compiler `ftpatch cc` wraps) as a shell
// would run it: its standard streams ftpatch's own, in ftpatch's process
// group, the signals sent to ftpatch passed on to it, and its end passed
// back to whoever ran ftpatch, an exit status as that status and a death
// by a signal as a death by the same signal.
package launch

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Status is how a program ended.
type Status struct {
	ws  syscall.WaitStatus
	pid int
	ru  *syscall.Rusage
}

// Usage is what the program used, as wait4 counted it (the program and
// the children it waited for); nil for a Status made by Exited or
// Signaled.
func (s Status) Usage() *syscall.Rusage { return s.ru }

// CoreDumped says the kernel dumped the core of a program a signal
// killed.
func (s Status) CoreDumped() bool { return s.ws.Signaled() && s.ws.CoreDump() }

// Pid is the process id the program ran as (0 for a Status made by
// Exited or Signaled).
func (s Status) Pid() int { return s.pid }

// Exited is the status of a program that exited with code.
func Exited(code int) Status { return Status{ws: syscall.WaitStatus(uint32(code&0xff) << 8)} }

// Signaled is the status of a program killed by sig.
func Signaled(sig syscall.Signal) Status { return Status{ws: syscall.WaitStatus(uint32(sig) & 0x7f)} }

// Signal is the signal that killed the program; ok is false when it
// exited.
func (s Status) Signal() (sig syscall.Signal, ok bool) {
	if s.ws.Signaled() {
		return s.ws.Signal(), true
	}
	return 0, false
}

// Code is the exit status a shell reports for the program: its exit
// code, or 128 + the number of the signal that killed it.
func (s Status) Code() int {
	if sig, ok := s.Signal(); ok {
		return 128 + int(sig)
	}
	return s.ws.ExitStatus()
}

// Success reports whether the program exited with status 0.
func (s Status) Success() bool { return !s.ws.Signaled() && s.ws.ExitStatus() == 0 }

func (s Status) String() string {
	if sig, ok := s.Signal(); ok {
		return "killed by " + SignalName(sig)
	}
	return fmt.Sprintf("exit status %d", s.ws.ExitStatus())
}

// SignalName is the signal's name as kill -l spells it, with SIG.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// forwarded are the signals passed on to the program. Each is caught
// for as long as the program runs, so none ends ftpatch before the
// program; the job-control signals (SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT)
// are not caught: a terminal's ^Z stops ftpatch and the program together,
// and fg continues both.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGWINCH}

// fromTerminal are the forwarded signals a terminal sends to its whole
// foreground process group (^C, ^\, a hangup, a resize), which the
// program, in ftpatch's group, receives itself.
var fromTerminal = map[os.Signal]bool{syscall.SIGINT: true, syscall.SIGQUIT: true, syscall.SIGHUP: true, syscall.SIGWINCH: true}

// Run starts the program at path (argv[0] is its name as given) with the
// environment env and waits for it to end.
//
// It runs in ftpatch's process group, with ftpatch's standard streams,
// so a terminal treats it as it would the program run directly: ^C, ^\
// and ^Z reach it and ftpatch alike, and it may read the terminal. Each
// signal in forwarded that ftpatch receives while the program runs is
// sent on to the program, except that one a terminal sends (SIGINT,
// SIGQUIT, SIGHUP, SIGWINCH) is not sent on while ftpatch's group is
// the terminal's foreground group: the terminal sent it to the program
// too, and a program that counts its ^C must see one. A signal sent to
// the whole group (kill -TERM -PGID, timeout(1)) reaches the program
// directly and through ftpatch; send it to ftpatch's process alone. A
// signal ftpatch was started with ignored (nohup's SIGHUP, a background
// job's SIGINT) stays ignored in the program, as the shell would have
// left it; of the others, Go's runtime, which starts ftpatch, catches
// every one before ftpatch can read it, so an ignored SIGTERM, SIGPIPE
// or SIGUSR1 (systemd ignores SIGPIPE for services) reaches the program
// with its default action.
func Run(path string, argv, env []string) (Status, error) {
	sigs := make(chan os.Signal, 16)
	var catch []os.Signal
	for _, s := range forwarded {
		if !signal.Ignored(s) {
			catch = append(catch, s)
		}
	}
	signal.Notify(sigs, catch...)
	defer signal.Stop(sigs)
	p, err := os.StartProcess(path, argv, &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		return Status{}, err
	}
	type result struct {
		ps  *os.ProcessState
		err error
	}
	done := make(chan result, 1)
	go func() {
		ps, err := p.Wait()
		done <- result{ps, err}
	}()
	for {
		select {
		case s := <-sigs:
			if passOn(s, foreground) {
				p.Signal(s) // fails only once the program is gone, which done reports
			}
		case r := <-done:
			if r.err != nil {
				return Status{}, r.err
			}
			ru, _ := r.ps.SysUsage().(*syscall.Rusage)
			return Status{ws: r.ps.Sys().(syscall.WaitStatus), pid: p.Pid, ru: ru}, nil
		}
	}
}

// passOn says whether a signal ftpatch received goes on to the
// program: not one a terminal sends to its foreground group while
// ftpatch's group is that group (fg), as the program has it already.
func passOn(s os.Signal, fg func() bool) bool {
	return !fromTerminal[s] || !fg()
}

// foreground reports whether ftpatch's process group is the foreground
// group of its controlling terminal (false with no terminal).
func foreground() bool {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}

// Exit ends ftpatch as the program ended: with its exit code, or killed
// by the signal that killed it, which ftpatch raises on itself with the
// signal's default action (so the shell that ran ftpatch reports the
// signal, and a shell script that the user interrupted with ^C stops, as
// it would for the program). ftpatch's own core dump is turned off
// first: it would say nothing of the program and could replace the
// program's core file. It does not return.
func Exit(s Status) {
	sig, ok := s.Signal()
	if !ok {
		os.Exit(s.Code())
	}
	signal.Reset(sig)
	runtime.LockOSThread()
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	// The kernel's struct sigaction (x86-64 and arm64 alike: handler,
	// flags, restorer, mask), all zero: SIG_DFL, no flags, empty mask.
	// Set directly, as Go's runtime keeps a handler of its own for
	// every signal it may forward or turn into a panic.
	var act [4]uint64
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	var set unix.Sigset_t
	set.Val[(int(sig)-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
	os.Exit(s.Code()) // a signal whose default action does not end a process
}
