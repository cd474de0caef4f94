package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/offsetagent/offsetagent/agent"
)

// The agent's soft memory limit (runtime/debug.SetMemoryLimit), unless the operator sets
// GOMEMLIMIT (docs/operations.md, "Memory"). Go's collector lets the heap grow to twice what is
// live before it collects (GOGC=100): that doubles everything live at once, a burst of large
// requests' fetches included, and on a busy machine the collection that follows comes late.
// The agent instead keeps its heap within what is live plus a headroom that its configuration
// bounds: after every collection it sets the limit to
//
//	min(ceiling, max(memoryFloor, live heap + headroom)),
//
// headroom = 2 × OFFSETAGENT_MAX_INFLIGHT_BYTES (the requests it may take on, and as much again
// for their garbage), ceiling = 90% of the container's memory limit (cgroup v2 memory.max, v1
// memory.limit_in_bytes; none outside a container). The limit follows the live heap, so that the
// views of a large offsets topic never sit above it (the collector would then run without rest),
// and the container's limit caps it, so that the runtime collects before the kernel's OOM
// killer acts. GOGC still applies below it: a small heap is collected at twice its live size.

// memoryFloor is the least soft limit the agent sets: the agent at rest with small Connect topics
// (~31 MiB resident) has room without collecting all the time.
const memoryFloor = 64 << 20

// containerShare is the part of the container's memory limit, in tenths, that the soft limit
// may reach; the rest is for what the runtime does not count as heap (stacks, the binary,
// buffers of the OS).
const containerShare = 9

// memoryPolicy is how the agent chooses its soft memory limit.
type memoryPolicy struct {
	// operator is GOMEMLIMIT as the operator set it: when not empty the agent leaves the
	// runtime's limit alone.
	operator string
	// container is the container's memory limit in bytes, 0 when there is none.
	container int64
	// headroom is what the limit leaves above the live heap.
	headroom int64
}

// newMemoryPolicy is the policy for cfg, GOMEMLIMIT's value and the container's memory limit (0:
// none).
func newMemoryPolicy(cfg agent.Config, goMemLimit string, container int64) memoryPolicy {
	return memoryPolicy{operator: strings.TrimSpace(goMemLimit), container: container, headroom: 2 * cfg.InflightBound()}
}

// ceiling is the most the limit may be: 90% of the container's limit, or no limit.
func (p memoryPolicy) ceiling() int64 {
	if p.container <= 0 {
		return math.MaxInt64
	}
	return p.container / 10 * containerShare
}

// limit is the soft limit for a live heap of live bytes.
func (p memoryPolicy) limit(live int64) int64 {
	return min(p.ceiling(), max(memoryFloor, live+p.headroom))
}

// source names where the limit comes from, for the start-up log.
func (p memoryPolicy) source() string {
	switch {
	case p.operator != "":
		return "GOMEMLIMIT"
	case p.container > 0:
		return "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES, at most 90% of the container's memory limit"
	}
	return "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES"
}

// containerMemoryLimit returns the memory limit of the cgroup this process runs in, read under
// root ("/" but in tests): the cgroup v1 memory controller's memory.limit_in_bytes where the
// process has one (hybrid hierarchies keep the memory controller on v1), else cgroup v2's
// memory.max. Each is looked up at the process's cgroup path (/proc/self/cgroup) below the
// mount, then at the mount itself (a container without a cgroup namespace sees the host's path
// but has its own cgroup mounted there). It returns 0 when there is no limit ("max", or v1's
// page-rounded largest int64) or no cgroup file.
func containerMemoryLimit(root string) (int64, error) {
	self, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read cgroup membership: %w", err)
	}
	var v1, v2 string
	hasV1, hasV2 := false, false
	s := bufio.NewScanner(bytes.NewReader(self))
	for s.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		id, rest, ok1 := strings.Cut(s.Text(), ":")
		controllers, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		if id == "0" && controllers == "" {
			v2, hasV2 = path, true
			continue
		}
		for c := range strings.SplitSeq(controllers, ",") {
			if c == "memory" {
				v1, hasV1 = path, true
			}
		}
	}
	switch {
	case hasV1:
		return readCgroupLimit(filepath.Join(root, "sys/fs/cgroup/memory"), v1, "memory.limit_in_bytes")
	case hasV2:
		return readCgroupLimit(filepath.Join(root, "sys/fs/cgroup"), v2, "memory.max")
	}
	return 0, nil
}

// readCgroupLimit reads file at mount/path, else at mount; see containerMemoryLimit.
func readCgroupLimit(mount, path, file string) (int64, error) {
	for _, dir := range []string{filepath.Join(mount, filepath.FromSlash(path)), mount} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read cgroup memory limit: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read cgroup memory limit %s: %w", filepath.Join(dir, file), err)
		}
		if n <= 0 || n >= 1<<62 { // v1 writes "no limit" as the largest int64 rounded to a page
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// memoryLimiter keeps the runtime's soft memory limit at the policy's limit for the live heap,
// after every garbage collection, until its context ends.
type memoryLimiter struct {
	policy  memoryPolicy
	stopped atomic.Bool
	sample  []metrics.Sample
}

// gcSentinel is garbage from the moment it is made: its finalizer runs after the collection
// that finds it, and makes the next one. (It holds a pointer, so that it is never one of the
// tiny allocations whose finalizers may not run.)
type gcSentinel struct {
	l *memoryLimiter
	_ [48]byte
}

// startMemoryLimiter sets the soft memory limit now and after every collection until ctx ends,
// and returns the limit set first. With GOMEMLIMIT set by the operator it does nothing and
// returns the runtime's limit.
func startMemoryLimiter(ctx context.Context, p memoryPolicy) int64 {
	if p.operator != "" {
		return debug.SetMemoryLimit(-1)
	}
	l := &memoryLimiter{policy: p, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	first := l.update()
	l.arm()
	context.AfterFunc(ctx, func() { l.stopped.Store(true) })
	return first
}

// update sets the limit for the live heap the last collection marked, and returns it.
func (l *memoryLimiter) update() int64 {
	metrics.Read(l.sample)
	var live int64
	if l.sample[0].Value.Kind() == metrics.KindUint64 {
		live = int64(min(l.sample[0].Value.Uint64(), math.MaxInt64))
	}
	limit := l.policy.limit(live)
	debug.SetMemoryLimit(limit)
	return limit
}

// arm makes the sentinel whose finalizer updates the limit after the next collection.
func (l *memoryLimiter) arm() {
	runtime.SetFinalizer(&gcSentinel{l: l}, func(s *gcSentinel) {
		if s.l.stopped.Load() {
			return
		}
		s.l.update()
		s.l.arm()
	})
}

// logMemoryLimit logs the limit chosen at start.
func logMemoryLimit(log *slog.Logger, p memoryPolicy, limit int64) {
	attrs := []any{"limit_bytes", limit, "source", p.source()}
	if p.container > 0 {
		attrs = append(attrs, "container_limit_bytes", p.container)
	}
	if p.operator == "" {
		attrs = append(attrs, "headroom_bytes", p.headroom)
	}
	log.Info("memory limit", attrs...)
}
