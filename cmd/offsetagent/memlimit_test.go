package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
)

// The container's memory limit is read from the cgroup files under a root: v1's memory
// controller where the process has one, else v2's memory.max, at the process's cgroup path or
// at the mount; "no limit" in either spelling is 0.
func TestContainerMemoryLimit(t *testing.T) {
	const v1Unlimited = "9223372036854771712"
	tests := []struct {
		name    string
		files   map[string]string // path under the root: content
		want    int64
		wantErr string
	}{
		{name: "no cgroup file (not Linux)", files: map[string]string{}, want: 0},
		{
			name: "v2 in a cgroup namespace: the mount is the container's cgroup",
			files: map[string]string{
				"proc/self/cgroup":         "0::/\n",
				"sys/fs/cgroup/memory.max": "268435456\n",
			},
			want: 256 << 20,
		},
		{
			name: "v2 at the process's path",
			files: map[string]string{
				"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
				"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "536870912\n",
				"sys/fs/cgroup/memory.max":                  "max\n",
			},
			want: 512 << 20,
		},
		{
			name: "v2 without a namespace: the host's path is not mounted, the mount is the container's",
			files: map[string]string{
				"proc/self/cgroup":         "0::/system.slice/docker-abc.scope\n",
				"sys/fs/cgroup/memory.max": "134217728\n",
			},
			want: 128 << 20,
		},
		{
			name: "v2 without a limit",
			files: map[string]string{
				"proc/self/cgroup":         "0::/\n",
				"sys/fs/cgroup/memory.max": "max\n",
			},
			want: 0,
		},
		{
			name: "v1 memory controller",
			files: map[string]string{
				"proc/self/cgroup": "12:pids:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n",
				"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824\n",
			},
			want: 1 << 30,
		},
		{
			name: "v1 controller listed with others, at the mount",
			files: map[string]string{
				"proc/self/cgroup":                           "5:cpuacct,memory:/docker/abc\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n",
			},
			want: 256 << 20,
		},
		{
			name: "v1 without a limit: the largest int64 rounded to a page",
			files: map[string]string{
				"proc/self/cgroup":                           "4:memory:/\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes": v1Unlimited + "\n",
			},
			want: 0,
		},
		{
			name: "hybrid: the memory controller is v1's, not the unified hierarchy's",
			files: map[string]string{
				"proc/self/cgroup":                           "4:memory:/job\n0::/\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "805306368\n",
				"sys/fs/cgroup/memory.max":                   "max\n",
			},
			want: 768 << 20,
		},
		{
			name:  "membership without the memory file",
			files: map[string]string{"proc/self/cgroup": "0::/\n"},
			want:  0,
		},
		{
			name: "unreadable value",
			files: map[string]string{
				"proc/self/cgroup":         "0::/\n",
				"sys/fs/cgroup/memory.max": "lots\n",
			},
			wantErr: "read cgroup memory limit",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for path, content := range tt.files {
				p := filepath.Join(root, filepath.FromSlash(path))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			}
			got, err := containerMemoryLimit(root)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// The soft limit is the live heap plus twice the in-flight bound, at least memoryFloor, at most
// 90% of the container's limit; GOMEMLIMIT set by the operator takes the runtime's own.
func TestMemoryPolicy(t *testing.T) {
	tests := []struct {
		name       string
		inflight   int64
		goMemLimit string
		container  int64
		live       int64
		want       int64
		source     string
	}{
		{name: "small heap: the floor", inflight: 16 << 20, live: 10 << 20, want: memoryFloor,
			source: "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES"},
		{name: "a 16 MiB bound: live heap + 32 MiB", inflight: 16 << 20, live: 100 << 20, want: 132 << 20,
			source: "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES"},
		{name: "the default bound when 0: live heap + 64 MiB", inflight: 0, live: 100 << 20, want: 164 << 20,
			source: "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES"},
		{name: "large views: the limit follows them", inflight: 32 << 20, live: 2 << 30, want: 2<<30 + 64<<20,
			source: "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES"},
		{name: "a container's limit caps it at 90%", inflight: 32 << 20, container: 256 << 20, live: 200 << 20,
			want:   256 << 20 / 10 * 9,
			source: "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES, at most 90% of the container's memory limit"},
		{name: "below the container's cap", inflight: 32 << 20, container: 1 << 30, live: 50 << 20, want: 114 << 20,
			source: "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES, at most 90% of the container's memory limit"},
		{name: "a container smaller than the floor: the cap wins", inflight: 16 << 20, container: 64 << 20, live: 0,
			want:   64 << 20 / 10 * 9,
			source: "live heap + 2 x OFFSETAGENT_MAX_INFLIGHT_BYTES, at most 90% of the container's memory limit"},
		{name: "the operator's GOMEMLIMIT", inflight: 16 << 20, goMemLimit: " 230MiB ", container: 256 << 20,
			live: 10 << 20, source: "GOMEMLIMIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newMemoryPolicy(agent.Config{MaxInflightBytes: tt.inflight}, tt.goMemLimit, tt.container)
			require.Equal(t, tt.source, p.source())
			if tt.goMemLimit != "" {
				require.Equal(t, "230MiB", p.operator)
				return
			}
			require.Equal(t, tt.want, p.limit(tt.live))
		})
	}
	require.Equal(t, int64(math.MaxInt64), memoryPolicy{}.ceiling(), "no container: no ceiling")
}
