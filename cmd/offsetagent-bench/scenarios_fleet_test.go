package main

import (
	"context"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary serve as the driver's child processes (the broker, the
// agents, migrate), which the scenarios start by running their own executable.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "-") && !strings.HasPrefix(os.Args[1], "-test.") {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestFleetSmall runs the fleet scenario on 200 connectors (140 sources, 60 sinks), so that
// it cannot rot: every connector migrates, every partition is verified, and the figures the
// table prints are there.
func TestFleetSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brokers, agents and migrate as processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b, err := startBroker(ctx)
	require.NoError(t, err)
	defer b.close()
	e := &env{brokers: []string{b.addr}, brokerPID: b.cmd.Process.Pid, opts: options{scale: 1}, stderr: io.Discard, profileTaken: &atomic.Bool{}}
	spec := fleetSpec{sources: 140, sinks: 60, agents: 2, concurrency: 100, timeout: time.Minute, verify: time.Minute}
	f, err := runFleet(ctx, e, spec)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"succeeded": 200}, f.m.Outcomes)
	require.Equal(t, 200, f.restA["PUT /connectors/{name}/stop"], "one stop per connector on A")
	require.NotZero(t, f.m.Verdicts["verified"])
	require.Zero(t, f.m.Verdicts["waiting"]+f.m.Verdicts["mismatch"], "verdicts %v", f.m.Verdicts)
	require.Positive(t, f.burst)
	require.Positive(t, f.m.HWM)
	require.NotEmpty(t, f.m.Publish)
	require.Len(t, f.m.Results, 200)
	rows := f.rows()
	// 22, then the CPU per connector of the driver, A's broker, B's, each agent, migrate, and
	// all of them, and A's REST calls in flight.
	require.Len(t, rows, 22+5+spec.agents+1)
	require.Contains(t, rows[len(rows)-1].figure, "calls in flight")
	for _, r := range rows[22 : len(rows)-1] {
		require.Contains(t, r.figure, "CPU per connector during the waves")
		require.NotContains(t, r.value, "0.000 ms", "%s", r.figure)
	}
}
