package agent

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// outageWarnings runs an agent on a kfake broker until it is ready, stops the broker and
// returns the WARN lines the agent logs in the following window.
func outageWarnings(t *testing.T, window time.Duration) []map[string]any {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	require.NoError(t, err)
	cfg := Config{
		Brokers: c.ListenAddrs(), RequestTopic: "requests", ResultTopic: "results", GroupID: "offsetagent",
		ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets", IntentTopic: "intents",
		CreateConnectTopics: true, RequestTopicPartitions: 6, HTTPAddr: "127.0.0.1:0", LogLevel: "info", LogFormat: "json",
		Concurrency: 2, MaxRequestBytes: 1 << 20, ShutdownTimeout: 5 * time.Second, SessionTimeout: 10 * time.Second,
		DedupeWindow: time.Hour, DedupeMaxEntries: 1000, AllowedSources: []string{"/src"},
	}
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	a, err := New(cfg, Options{Registry: reg, Gatherer: reg, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Stages: &fakeProcessor{}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("agent did not stop within 30s")
		}
	})
	require.Eventually(t, a.Ready, 30*time.Second, 20*time.Millisecond, "agent never became ready")
	before := len(logs.String())
	c.Close()
	time.Sleep(window)
	var warns []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()[before:]), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["level"] == "WARN" {
			warns = append(warns, m)
		}
	}
	return warns
}

var outageWindow = flag.Duration("outage-window", 6*time.Second, "how long TestOutageWarnRate watches the log of an agent whose broker stopped")

// During a broker outage each kind of WARN line (message, topic, partition, offset) is written
// once per repeatWindow, not on every retry (before the limiter: 103 lines in 20 s, about 300
// a minute, from one replica). go test -run TestOutageWarnRate -v ./agent/ -args -outage-window=1m
// prints the rate over a minute.
func TestOutageWarnRate(t *testing.T) {
	t.Parallel() // it waits on the clock, as TestRequestLagGoesAwayInBrokerOutage does
	require.Less(t, *outageWindow, 2*repeatWindow+repeatWindow/2, "the check below expects at most two windows")
	warns := outageWarnings(t, *outageWindow)
	require.NotEmpty(t, warns, "a broker outage is logged")
	kinds := map[string]int{}
	for _, w := range warns {
		key := fmt.Sprint(w["msg"], w["topic"], w["partition"], w["partitions"], w["offset"])
		kinds[key]++
	}
	t.Logf("%d WARN lines in %s (%.0f a minute), %d kinds", len(warns), *outageWindow,
		float64(len(warns))*float64(time.Minute)/float64(*outageWindow), len(kinds))
	limit := 1
	if *outageWindow > repeatWindow {
		limit = 3 // the window may span parts of three of the limiter's windows
	}
	for k, n := range kinds {
		require.LessOrEqual(t, n, limit, "%q written %d times in %s", k, n, *outageWindow)
	}
}
