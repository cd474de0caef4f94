package integration

import (
	"context"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
)

// A broker too slow to answer the agent's first metadata request in time (kafka-go then hands
// that timeout to every request until a later refresh succeeds) delays the start-up; it does
// not end it.
func TestStartupWaitsOutASlowBroker(t *testing.T) {
	c := startCluster(t)
	fake := c.requireFake(t)
	var slowed atomic.Int32
	fake.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		if slowed.Add(1) <= 2 {
			fake.KeepControl()
			time.Sleep(1500 * time.Millisecond) // above the agent transport's 1 s refresh timeout
		}
		return nil, nil, false
	})
	a := startAgent(t, testConfig(c), agent.Options{})
	require.GreaterOrEqual(t, slowed.Load(), int32(2))
	require.True(t, a.Ready())
}

// An agent started before its broker is listening waits for it, alive (/healthz) but not
// ready (/readyz) meanwhile.
func TestStartupWaitsForABrokerNotUpYet(t *testing.T) {
	if os.Getenv("OFFSETAGENT_TEST_BROKERS") != "" || os.Getenv("OFFSETAGENT_TEST_DOCKER") == "1" {
		t.Skip("needs the embedded kfake broker, started late")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := testConfig(&cluster{brokers: []string{addr}})
	reg := prometheus.NewRegistry()
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a, err := agent.New(cfg, agent.Options{Logger: testLogger(t), Registry: reg, Gatherer: reg, Listener: httpLn})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("agent did not stop")
		}
	}()

	time.Sleep(time.Second) // the agent meets a refused connection, at least once
	select {
	case err := <-done:
		t.Fatalf("agent gave up on a broker that is not up yet: %v", err)
	default:
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503} {
		resp, err := hc.Get("http://" + httpLn.Addr().String() + path)
		require.NoError(t, err, "%s while waiting for the broker", path)
		_ = resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "%s while waiting for the broker", path)
	}
	fake, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }))
	require.NoError(t, err)
	defer fake.Close()
	require.Eventually(t, a.Ready, 60*time.Second, 20*time.Millisecond, "agent never became ready")
}

// A Connect topic that is not on brokers that answer (a misspelt name) ends the start-up at
// once with an error naming the topic and its variable, instead of minutes of "brokers not
// ready"; OFFSETAGENT_CREATE_CONNECT_TOPICS still creates it.
func TestStartupNamesAMissingConnectTopic(t *testing.T) {
	c := startCluster(t)
	base := testConfig(c)
	// Connect's topics as a worker made them; the agent is given one misspelt name.
	startAgent(t, base, agent.Options{}).stop(t)
	tests := []struct {
		name     string
		edit     func(*agent.Config)
		variable string
		topic    string
	}{
		{name: "config topic", edit: func(cfg *agent.Config) { cfg.ConfigTopic += "s" }, variable: "OFFSETAGENT_CONFIG_TOPIC", topic: base.ConfigTopic + "s"},
		{name: "offsets topic", edit: func(cfg *agent.Config) { cfg.OffsetsTopic = "connect-offset" }, variable: "OFFSETAGENT_OFFSETS_TOPIC", topic: "connect-offset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(c)
			cfg.ConfigTopic, cfg.OffsetsTopic, cfg.CreateConnectTopics = base.ConfigTopic, base.OffsetsTopic, false
			tc.edit(&cfg)
			err, took := runUntilError(t, cfg, 30*time.Second)
			t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
			require.ErrorContains(t, err, tc.variable)
			require.ErrorContains(t, err, `"`+tc.topic+`"`)
			require.ErrorContains(t, err, "OFFSETAGENT_CREATE_CONNECT_TOPICS")
		})
	}
	cfg := testConfig(c)
	cfg.ConfigTopic += "-new"
	startAgent(t, cfg, agent.Options{}) // CreateConnectTopics: created, ready
}
