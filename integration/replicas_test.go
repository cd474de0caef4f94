package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// replicaRequest is one request of the two-replica test and what it must come to.
type replicaRequest struct {
	id, connector string
	// valid requests pass validation; the first valid one of a connector must succeed.
	valid    bool
	position int
}

// replicaRequests builds the requests of n connectors: every connector gets a valid request;
// every third is preceded by an invalid one (a negative FileStream position), every second
// gets a later valid one (a 409), and every fifth a third (another 409). They are published
// round by round so that connectors interleave while each connector's requests stay in order.
func replicaRequests(n int) [][]replicaRequest {
	var rounds [][]replicaRequest
	add := func(round int, r replicaRequest) {
		for len(rounds) <= round {
			rounds = append(rounds, nil)
		}
		rounds[round] = append(rounds[round], r)
	}
	for i := range n {
		name := fmt.Sprintf("rc-%02d", i)
		round := 0
		if i%3 == 0 {
			add(round, replicaRequest{connector: name, position: -1})
			round++
		}
		add(round, replicaRequest{connector: name, valid: true, position: 10*i + 1})
		round++
		if i%2 == 0 {
			add(round, replicaRequest{connector: name, valid: true, position: 10*i + 2})
			round++
		}
		if i%5 == 0 {
			add(round, replicaRequest{connector: name, valid: true, position: 10*i + 3})
		}
	}
	return rounds
}

func replicaBody(r replicaRequest) string {
	return fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","file":"f","topic":"t"},
	  "initial_offsets":[{"partition":{"filename":"f"},"offset":{"position":%d}}]}`, r.connector, r.position)
}

// Two replicas in one consumer group share six request partitions; a second replica joins
// while the first is working (a rebalance with requests in flight) and the first then stops
// gracefully (another rebalance). Every request gets exactly one result, exactly the first
// valid request of each connector succeeds, the offsets topic holds exactly what those asked
// for, and no request ran its stages twice (the replicas' success counters add up to the
// number of connectors).
func TestTwoReplicasRebalanceMidway(t *testing.T) {
	const connectors = 30
	c := crashCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 6
	cfg.SessionTimeout = 2 * time.Second
	cfg.ShutdownTimeout = 5 * time.Second
	cl := newFreshClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 6)

	// Slow every request down a little so that both rebalances find requests running.
	slow := agent.Options{Fault: func(point, _ string) {
		if point == "before:validate_config" {
			time.Sleep(150 * time.Millisecond)
		}
	}}
	a := startAgent(t, cfg, slow)

	// One batch, so that A has a backlog to work through when B joins.
	var all []replicaRequest
	var msgs []kafka.Message
	for _, round := range replicaRequests(connectors) {
		for _, r := range round {
			r.id = uuid.NewString()
			msg, err := events.RequestMessage(cfg.RequestTopic, []byte(replicaBody(r)), events.RequestOptions{ID: r.id, Source: "/integration-test"})
			require.NoError(t, err)
			msg.Topic = ""
			msgs = append(msgs, msg)
			all = append(all, r)
		}
	}
	publishAll(t, cl, msgs)
	total := len(all)
	require.GreaterOrEqual(t, total, 55)

	// Progress from the replicas' counters: reading the result topic is too slow to catch the
	// moments between requests.
	var b *runningAgent
	done := func() int {
		n := a.sumCounter(t, "offsetagent_requests_total")
		if b != nil {
			n += b.sumCounter(t, "offsetagent_requests_total")
		}
		return int(n)
	}
	waitDone := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return done() >= n }, 60*time.Second, 5*time.Millisecond, "fewer than %d requests done", n)
	}
	waitDone(3)
	joinStart := time.Now()
	b = startAgent(t, cfg, slow) // returns once B joined: the first rebalance is over
	afterJoin := done()
	t.Logf("B joined in %s, %d requests done by then", time.Since(joinStart), afterJoin)
	require.Less(t, afterJoin, total, "A finished everything before B joined: no rebalance mid-work")
	waitDone(min(total-3, afterJoin+10))
	beforeStop := done()
	a.stop(t) // the second rebalance: A leaves, B takes every partition
	t.Logf("%d of %d requests done when A stopped", beforeStop, total)

	cl.waitResults(total, 60*time.Second)
	b.stop(t)
	results := cl.allResults() // after both stopped: nothing more can arrive

	byID := map[string][]result{}
	for _, r := range results {
		byID[r.Data.RequestID] = append(byID[r.Data.RequestID], r)
	}
	require.Len(t, results, total, "one result per request")
	wantOffsets := map[string]liveRecord{}
	succeeded := map[string]bool{}
	for _, r := range all {
		rs := byID[r.id]
		require.Len(t, rs, 1, "request %s (%s) has exactly one result", r.id, r.connector)
		res := rs[0]
		switch {
		case !r.valid:
			require.Equal(t, events.TypeCreateFailed, res.Type)
			require.Equal(t, "validate_offsets", res.Data.FailedStep, res.Data.Message)
			// FileStreamSourceConnector.alterOffsets throws a ConnectException: a 500 in Connect.
			require.Equal(t, 500, res.Data.ErrorCode)
			require.Equal(t, "The value for the 'position' key in the offset should be a non-negative value", res.Data.Message)
		case !succeeded[r.connector]:
			require.Equal(t, events.TypeCreateSucceeded, res.Type, "first valid request of %s: %s", r.connector, res.Data.Message)
			succeeded[r.connector] = true
			key := fmt.Sprintf(`[%q,{"filename":"f"}]`, r.connector)
			wantOffsets[key] = liveRecord{Partition: partitionOf(key), Value: fmt.Sprintf(`{"position":%d}`, r.position)}
		default:
			require.Equal(t, events.TypeCreateFailed, res.Type, "later request of %s", r.connector)
			require.Equal(t, 409, res.Data.ErrorCode, res.Data.Message)
			require.Equal(t, fmt.Sprintf("Connector %s already exists", r.connector), res.Data.Message)
		}
	}
	require.Len(t, succeeded, connectors)
	require.Equal(t, wantOffsets, cl.live(cfg.OffsetsTopic))
	configs := cl.live(cfg.ConfigTopic)
	require.Len(t, configs, 2*connectors, "a connector and a target-state record per connector")
	for name := range succeeded {
		require.Contains(t, configs, "connector-"+name)
		require.Contains(t, configs, "target-state-"+name)
	}
	require.Empty(t, cl.live(cfg.IntentTopic), "no intent left behind")

	okA := a.metric(t, "offsetagent_requests_total", "result", "succeeded")
	okB := b.metric(t, "offsetagent_requests_total", "result", "succeeded")
	failedA := a.metric(t, "offsetagent_requests_total", "result", "failed")
	failedB := b.metric(t, "offsetagent_requests_total", "result", "failed")
	t.Logf("replica A: %v succeeded, %v failed; replica B: %v succeeded, %v failed; duplicates skipped: %v",
		okA, failedA, okB, failedB,
		a.metric(t, "offsetagent_requests_total", "result", "duplicate")+b.metric(t, "offsetagent_requests_total", "result", "duplicate"))
	require.Equal(t, float64(connectors), okA+okB, "no request succeeded twice")
	require.Equal(t, float64(total-connectors), failedA+failedB, "no request failed twice")
	require.NotZero(t, okB+failedB, "replica B did some of the work")

	// The group's committed offsets cover every request: a third replica would start at the end.
	ends := map[int]int64{}
	for _, m := range cl.readAll(cfg.RequestTopic) {
		ends[m.Partition] = max(ends[m.Partition], m.Offset+1)
	}
	committed := cl.groupOffsets(cfg.GroupID)
	for p, end := range ends {
		require.Equal(t, end, committed[fmt.Sprintf("%s/%d", cfg.RequestTopic, p)], "partition %d committed to its end", p)
	}
}

// publishAll writes request records in one call to the client's writer (which names the
// request topic and partitions by key).
func publishAll(t *testing.T, cl *client, msgs []kafka.Message) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(cl.cfg.Brokers...), Topic: cl.cfg.RequestTopic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: len(msgs), Transport: cl.kc.Transport}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, msgs...))
}
