package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fleet scenario's processes all share the machine's cores: the rate of its waves is
// bounded by the CPU every process but the agents spends per connector as much as by round
// trips. fleetCPU samples the CPU time of each process (processCPU) every fleetCPUEvery, so
// that the CPU each spent between two moments migrate reports (the waves) is known from
// outside, by interpolating between the samples around them. A sample reads /proc/PID/stat
// (utime and stime, every thread's, in clock ticks), one file a process: processCPU's reading
// of every thread's schedstat cost the driver 5% of a core at this period. The driver's process holds A's
// and B's REST stand-ins (connectsim, serveSim) and nothing else that works during the
// waves; with -profile fleet its CPU profile (path.driver) tells them apart by label.

// fleetCPUEvery is the sampling period: the waves last seconds.
const fleetCPUEvery = 100 * time.Millisecond

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux everywhere).
const clockTick = 10 * time.Millisecond

// statCPU is the CPU time process pid has run so far, user and system, its threads' that
// exited included (/proc/PID/stat's utime and stime); 0 when unknown.
func statCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command's name, in parentheses, may hold spaces: the fields follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * clockTick
}

// fleetCPU samples the CPU time of named processes until stopped.
type fleetCPU struct {
	mu      sync.Mutex
	names   []string
	pids    []int
	samples []cpuSample
	stop    chan struct{}
	done    chan struct{}
}

// cpuSample is each process's CPU time so far (by pid) at a moment (Unix ns).
type cpuSample struct {
	at  int64
	cpu map[int]time.Duration
}

func startFleetCPU() *fleetCPU {
	c := &fleetCPU{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(fleetCPUEvery)
		defer t.Stop()
		for {
			c.sample()
			select {
			case <-c.stop:
				c.sample()
				return
			case <-t.C:
			}
		}
	}()
	return c
}

// add samples process pid, named name, from now on (its CPU before its first sample counts
// as spent before it).
func (c *fleetCPU) add(name string, pid int) {
	if pid <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names, c.pids = append(c.names, name), append(c.pids, pid)
}

func (c *fleetCPU) sample() {
	c.mu.Lock()
	pids := slices.Clone(c.pids)
	c.mu.Unlock()
	s := cpuSample{cpu: make(map[int]time.Duration, len(pids))}
	for _, p := range pids {
		s.cpu[p] = statCPU(p)
	}
	s.at = time.Now().UnixNano()
	c.mu.Lock()
	c.samples = append(c.samples, s)
	c.mu.Unlock()
}

// finish stops the sampling (after a last sample).
func (c *fleetCPU) finish() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// at is pid's CPU time at t (Unix ns), interpolated between the samples around t.
func (c *fleetCPU) at(pid int, t int64) time.Duration {
	var before, after *cpuSample
	for i := range c.samples {
		s := &c.samples[i]
		if _, ok := s.cpu[pid]; !ok {
			continue
		}
		if s.at <= t {
			before = s
			continue
		}
		after = s
		break
	}
	switch {
	case before == nil && after == nil:
		return 0
	case before == nil:
		return 0
	case after == nil:
		return before.cpu[pid]
	}
	b, a := before.cpu[pid], after.cpu[pid]
	return b + time.Duration(float64(a-b)*float64(t-before.at)/float64(after.at-before.at))
}

// spent is the CPU time each process spent between from and to (Unix ns), in the order they
// were added.
func (c *fleetCPU) spent(from, to int64) (names []string, cpu []time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.pids {
		names = append(names, c.names[i])
		cpu = append(cpu, c.at(p, to)-c.at(p, from))
	}
	return names, cpu
}

// cpuRows are the rows of the CPU each process spent per connector of n between from and
// to, what, and all of them together.
func (c *fleetCPU) rows(info func(figure, value string) row, what string, from, to int64, n int) []row {
	if c == nil || to <= from || n == 0 {
		return nil
	}
	names, cpu := c.spent(from, to)
	var out []row
	var total time.Duration
	wall := time.Duration(to - from)
	for i, name := range names {
		total += cpu[i]
		out = append(out, info(fmt.Sprintf("CPU per connector %s: %s", what, name),
			fmt.Sprintf("%.3f ms (%.2f s over %.1f s)", float64(cpu[i])/float64(time.Millisecond)/float64(n), cpu[i].Seconds(), wall.Seconds())))
	}
	out = append(out, info(fmt.Sprintf("CPU per connector %s: all the processes above", what),
		fmt.Sprintf("%.3f ms (%.2f s over %.1f s: %.2f cores)", float64(total)/float64(time.Millisecond)/float64(n), total.Seconds(), wall.Seconds(), total.Seconds()/wall.Seconds())))
	return out
}

// labelled runs f with the pprof label fleet=what on its goroutine, which the goroutines it
// starts inherit: the driver's profile tells A's stand-in from B's.
func labelled(ctx context.Context, what string, f func(ctx context.Context)) {
	pprof.Do(ctx, pprof.Labels("fleet", what), f)
}

// startDriverProfile starts the driver's CPU profile at path (none when path is empty) and
// returns the function that stops it.
func startDriverProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	if pprof.StartCPUProfile(f) != nil {
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
