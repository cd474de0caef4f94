package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recordingSwitch remembers what it was switched to.
type recordingSwitch struct {
	mu  sync.Mutex
	got []bool
}

func (s *recordingSwitch) SetPprof(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, on)
}

func (s *recordingSwitch) calls() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.got...)
}

// `offsetagent pprof on|off` signals the agent's process, which switches /debug/pprof
// (agent.TestPprofSwitchedAtRunTime checks the switch itself).
func TestPprofCommandSwitchesTheRunningAgent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sw := &recordingSwitch{}
	switchPprofOnSignals(ctx, sw)
	self := strconv.Itoa(os.Getpid())

	var want []bool
	for _, state := range []string{"on", "off", "on"} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run([]string{"pprof", state, "--pid", self}, strings.NewReader(""), &out, &errOut), errOut.String())
		require.Contains(t, out.String(), "/debug/pprof "+state)
		want = append(want, state == "on")
		require.Eventually(t, func() bool { return len(sw.calls()) == len(want) }, 5*time.Second, 10*time.Millisecond)
	}
	require.Equal(t, want, sw.calls())
}

func TestPprofCommandLine(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "no state", args: []string{"pprof"}},
		{name: "unknown state", args: []string{"pprof", "toggle"}},
		{name: "bad pid", args: []string{"pprof", "on", "--pid", "0"}},
		// PID 1 is the agent only in its container: elsewhere it is init, which takes the
		// signal for something else (or ignores it) while the command said it had worked.
		{name: "no pid", args: []string{"pprof", "on"}, stderr: "--pid is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, 2, run(tt.args, strings.NewReader(""), &out, &errOut), out.String())
			require.Contains(t, errOut.String(), pprofUsage)
			require.Contains(t, errOut.String(), tt.stderr)
			require.Empty(t, out.String())
		})
	}
}
