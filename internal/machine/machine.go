// Package machine describes the machine a benchmark runs on, for the
// figures it prints: its processor, cores and kernel, and how busy it is.
// Benchmarks' figures mean little without them, and this project's
// machine is a VM whose cores other work shares.
package machine

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Name is the processor's model name, its core count and the kernel's
// release, as one line ("AMD EPYC, 2 cores, Linux 6.1.0-13-amd64").
func Name() string {
	model := "unknown processor"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "unknown"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	cores := "cores"
	if runtime.NumCPU() == 1 {
		cores = "core"
	}
	return model + ", " + strconv.Itoa(runtime.NumCPU()) + " " + cores + ", Linux " + kernel
}

// LoadAvg is the first three fields of /proc/loadavg: the run queue's
// length over 1, 5 and 15 minutes; above the core count, wall times are
// mostly waiting for a core.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
