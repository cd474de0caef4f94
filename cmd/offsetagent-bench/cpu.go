package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// processCPU is the CPU time the processes pids have run so far: the first field of
// /proc/PID/task/*/schedstat (nanoseconds on a CPU), summed over every thread. Threads that
// exited are not counted; Go keeps its threads. Unknown processes count zero.
func processCPU(pids ...int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total
}

// cpuClock measures the CPU time of a set of processes between start and stop.
type cpuClock struct {
	pids []int
	t0   []time.Duration // per process
}

func startCPU(pids ...int) *cpuClock {
	c := &cpuClock{pids: pids, t0: make([]time.Duration, len(pids))}
	for i, p := range pids {
		c.t0[i] = processCPU(p)
	}
	return c
}

func (c *cpuClock) elapsed() time.Duration {
	var total time.Duration
	for _, d := range c.each() {
		total += d
	}
	return total
}

// each is the CPU time of each process since start, in the order of the pids given.
func (c *cpuClock) each() []time.Duration {
	out := make([]time.Duration, len(c.pids))
	for i, p := range c.pids {
		out[i] = processCPU(p) - c.t0[i]
	}
	return out
}
