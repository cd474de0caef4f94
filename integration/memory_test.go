package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

// peakRSS returns a process's peak resident set size (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// OFFSETAGENT_MAX_INFLIGHT_BYTES bounds what the agent holds, the records it has fetched and
// not yet processed and what their requests hold while they are processed included: with
// twenty requests of 5 MiB each waiting at once (dry runs of 62,000 MirrorMaker 2 offsets
// each, so that the offsets view does not grow) on six partitions, the process's peak RSS
// stays under 256 MiB without GOMEMLIMIT, at the bound of the issue (16 MiB: one such request
// at a time) and at 64 MiB (three at a time), and every request is answered. The memory
// model of docs/operations.md comes from these runs.
func TestMemoryBoundedByInflightBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; writes 1.2 million offsets")
	}
	tests := []struct {
		name  string
		bound int
	}{
		{name: "16 MiB: one 5 MiB request at a time", bound: 16 << 20},
		{name: "64 MiB: three 5 MiB requests at a time", bound: 64 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peak := runLargeRequests(t, tt.bound)
			require.Less(t, peak, int64(256<<20), "peak RSS")
		})
	}
}

// runLargeRequests publishes twenty dry-run requests of 62,000 MirrorMaker 2 offsets (5 MiB
// each) on six partitions, then runs the agent binary with OFFSETAGENT_MAX_INFLIGHT_BYTES
// bound and no GOMEMLIMIT until every request is answered; it returns the process's peak RSS.
func runLargeRequests(t *testing.T, bound int) int64 {
	t.Helper()
	const requests, offsets = 20, 62_000
	c := crashCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 6
	cl := newFreshClient(t, cfg)
	createTopicWith(t, cl, cfg.RequestTopic, 6, map[string]string{"max.message.bytes": fmt.Sprint(cfg.MaxRequestBytes + 1<<20)})
	seedConnectTopics(t, cl, cfg)

	var ids []string
	var msgs []kafka.Message
	for i := range requests {
		body := mm2Body(fmt.Sprintf("mem-%02d", i), offsets)
		require.Greater(t, len(body), 5<<20)
		id := uuid.NewString()
		msg, err := events.RequestMessage(cfg.RequestTopic, body, events.RequestOptions{ID: id, Source: "/memory-test", DryRun: true})
		require.NoError(t, err)
		msg.Topic = ""
		msgs = append(msgs, msg)
		ids = append(ids, id)
	}
	// One writer, one record per batch, a bound generous enough for a busy machine (the
	// in-process broker checks 100 MiB of records under the race detector).
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.RequestTopic, Balancer: &kafka.RoundRobin{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1, BatchBytes: 32 << 20,
		Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, m := range msgs {
		require.NoError(t, w.WriteMessages(ctx, m))
	}
	require.NoError(t, w.Close())
	msgs = nil

	cmd := exec.Command(plainAgentBinary(t), "run")
	// No GOMEMLIMIT: the bound alone must keep the process small (processEnv passes no GO*
	// variable of the test's environment either).
	cmd.Env = append(processEnv(cfg, ""), fmt.Sprintf("OFFSETAGENT_MAX_INFLIGHT_BYTES=%d", bound))
	p := &agentProcess{cmd: cmd, out: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	start := time.Now()
	results := cl.waitResults(requests, 5*time.Minute)
	elapsed := time.Since(start)
	peak := peakRSS(t, cmd.Process.Pid)
	t.Logf("%d requests of %d offsets answered in %s; peak RSS %.0f MiB", requests, offsets, elapsed, float64(peak)/(1<<20))
	byID := map[string]result{}
	for _, r := range results {
		byID[r.Data.RequestID] = r
	}
	for _, id := range ids {
		require.Equal(t, events.TypeCreatePlanned, byID[id].Type, byID[id].Data.Message)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 30*time.Second), "graceful shutdown; output:\n%s", p.out)
	return peak
}

// createTopicWith creates a topic with configs.
func createTopicWith(t *testing.T, cl *client, topic string, partitions int, configs map[string]string) {
	t.Helper()
	var entries []kafka.ConfigEntry
	for k, v := range configs {
		entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cl.kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: entries}}})
	require.NoError(t, err)
	require.NoError(t, res.Errors[topic])
}
