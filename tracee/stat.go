package tracee

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Stat is what /proc/PID/stat says of a process that its holders
// branch on.
type Stat struct {
	Pid, PPid int
	State     byte   // R, S, D, T (stopped), t, Z (a zombie), X...
	Start     uint64 // clock ticks since boot: with Pid, names the process
}

// ReadStat reads process pid's /proc/PID/stat. The command's name, in
// parentheses, may hold spaces and parentheses: the fields are read
// after its last ')'.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, fmt.Errorf("process %d: %w", pid, err)
	}
	i := strings.LastIndexByte(string(b), ')')
	var f []string
	if i >= 0 {
		f = strings.Fields(string(b[i+1:])) // state is field 3: f[0]
	}
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("process %d: /proc/%d/stat unreadable: %.80q", pid, pid, b)
	}
	st := Stat{Pid: pid, State: f[0][0]}
	st.PPid, _ = strconv.Atoi(f[1])
	st.Start, _ = strconv.ParseUint(f[19], 10, 64)
	return st, nil
}

// Alive says whether the process runs (it exists, and is neither a
// zombie nor dead).
func (s Stat) Alive() bool {
	return s.State != 'Z' && s.State != 'X' && s.State != 'x'
}

// Descendants lists process pid's descendants as /proc has them now:
// its children, theirs, and so on, each once.
func Descendants(pid int) ([]Stat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	kids := map[int][]Stat{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := ReadStat(p); err == nil {
			kids[st.PPid] = append(kids[st.PPid], st)
		}
	}
	var out []Stat
	for todo := []int{pid}; len(todo) > 0; {
		p := todo[0]
		todo = todo[1:]
		for _, k := range kids[p] {
			out = append(out, k)
			todo = append(todo, k.Pid)
		}
	}
	return out, nil
}
