package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// resultsFor counts the result events of request id.
func (c *client) resultsFor(id string) int {
	c.t.Helper()
	n := 0
	for _, r := range c.allResults() {
		if r.Data.RequestID == id {
			n++
		}
	}
	return n
}

// waitCommitted waits until the agent's group committed at least next on partition 0 of the
// request topic (the rigs use one request partition).
func (r *faultRig) waitCommitted(t *testing.T, next int64, timeout time.Duration) {
	t.Helper()
	key := fmt.Sprintf("%s/0", r.cfg.RequestTopic)
	require.Eventually(t, func() bool { return r.cl.groupOffsets(r.cfg.GroupID)[key] >= next }, timeout, 50*time.Millisecond,
		"group %s never committed %s past offset %d: %v", r.cfg.GroupID, key, next-1, r.cl.groupOffsets(r.cfg.GroupID))
}

// The result topic refusing a few writes: the agent retries the publish until exactly one
// result is out, and commits the request only after that.
func TestResultPublishFaultRetried(t *testing.T) {
	t.Parallel() // waits out the retries' backoffs: doc.go
	cases := []struct {
		name  string
		err   *kerr.Error
		count int
	}{
		{"not leader x5", kerr.NotLeaderForPartition, 5},
		{"not enough replicas x2", kerr.NotEnoughReplicas, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			r.start(t, "", nil)
			r.install(produceFault(r.cfg.ResultTopic, tc.err, tc.count))
			id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
			res := r.cl.waitResult(id, 60*time.Second)
			require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
			require.Equal(t, tc.count, r.hits())
			r.waitCommitted(t, 1, resultWait)
			require.Equal(t, 1, r.cl.resultsFor(id), "exactly one result")
			require.Equal(t, 1.0, r.agent.metric(t, "offsetagent_requests_total", "result", "succeeded"))
		})
	}
}

// The commit of the request's offset failing a few times: still exactly one result, and the
// offset is committed by the end (here by the final commit of a graceful stop); a restarted
// agent neither runs the request again nor publishes a second result.
func TestRequestCommitFaultExactlyOnce(t *testing.T) {
	r := newFaultRig(t)
	r.start(t, "", nil)
	r.install(commitFault(r.cfg.GroupID, kerr.CoordinatorNotAvailable, 3))
	body := readFile(t, "testdata/file-src-1.json")
	id := r.cl.publish(body, events.RequestOptions{})
	res := r.cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Eventually(t, func() bool { return r.hits() >= 1 }, resultWait, 20*time.Millisecond, "the commit was attempted")

	r.agent.stop(t)
	r.waitCommitted(t, 1, resultWait)
	require.Equal(t, 3, r.hits())

	b := startAgent(t, r.cfg, agent.Options{})
	second := r.cl.publish(body, events.RequestOptions{}) // a new request for the same name: 409
	require.Equal(t, 409, r.cl.waitResult(second, resultWait).Data.ErrorCode)
	require.Equal(t, 1, r.cl.resultsFor(id), "exactly one result for the first request")
	require.Len(t, r.cl.allResults(), 2)
	require.Equal(t, 0.0, b.metric(t, "offsetagent_requests_total", "result", "succeeded"), "nothing ran twice")
}

// A failed request commit is retried after a backoff even when no other request of the
// partition finishes (agent.commitLoop re-arms itself), so an idle partition's committed
// offset does not stay behind its last finished request.
func TestRequestCommitRetriedOnIdlePartition(t *testing.T) {
	r := newFaultRig(t)
	r.start(t, "", nil)
	r.install(commitFault(r.cfg.GroupID, kerr.CoordinatorNotAvailable, 1))
	id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, r.cl.waitResult(id, resultWait).Type)
	r.waitCommitted(t, 1, 20*time.Second)
}

// A result write answered with REQUEST_TIMED_OUT may have been appended. Before writing again
// after such an ambiguous error (timeout, network), agent.publish reads the result log to its end
// and skips the write when the result is there: one request, one result event.
func TestResultPublishTimeoutWritesOneResult(t *testing.T) {
	r := newFaultRig(t)
	r.start(t, "", nil)
	r.install(produceFault(r.cfg.ResultTopic, kerr.RequestTimedOut, 1))
	id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, r.cl.waitResult(id, resultWait).Type)
	r.waitCommitted(t, 1, resultWait)
	require.Equal(t, 1, r.hits())
	require.Equal(t, 1, r.cl.resultsFor(id), "one request, one result event")
}

// A result the broker keeps refusing (INVALID_RECORD, again and again) keeps its request
// uncommitted: it is tried again, counted in offsetagent_results_pending, and goes out, whole,
// once the broker takes it; only then is the request committed.
func TestResultRefusedKeepsRequest(t *testing.T) {
	t.Parallel() // waits out the result's publish backoffs: doc.go
	r := newFaultRig(t)
	r.start(t, "", nil)
	h := r.fake.Fault(produceFault(r.cfg.ResultTopic, kerr.InvalidRecord, -1))
	id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	committed := func() int64 { return r.cl.groupOffsets(r.cfg.GroupID)[fmt.Sprintf("%s/0", r.cfg.RequestTopic)] }
	require.Eventually(t, func() bool { return h.Hits() >= 3 || committed() > 0 }, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, committed(), "no commit past a result that is not out (%d refusals)", h.Hits())
	require.GreaterOrEqual(t, h.Hits(), 3, "the refused result is tried again")
	require.Zero(t, r.cl.resultsFor(id))
	require.Equal(t, 1.0, r.agent.gauge("offsetagent_results_pending"))

	h.Remove()
	res := r.cl.waitResult(id, 60*time.Second)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	// A refusal that is not about size is answered by the whole result again, not the
	// minimal one: once it lifts, the whole result goes out.
	require.False(t, res.Data.Truncated, "the minimal result went out")
	require.NotEmpty(t, res.Data.Config)
	require.Equal(t, 1, *res.Data.OffsetsWritten)
	r.waitCommitted(t, 1, resultWait)
	require.Equal(t, 1, r.cl.resultsFor(id))
	require.Equal(t, 0.0, r.agent.gauge("offsetagent_results_pending"))
	require.Equal(t, 0.0, r.agent.metric(t, "offsetagent_results_unpublished_total"))
}

// An agent stopped while its result is refused leaves the request uncommitted; the agent
// after it runs the request again (rolling back the interrupted run first) and publishes its
// result once the broker takes it: the result is not lost with the agent.
func TestResultRefusedSurvivesRestart(t *testing.T) {
	t.Parallel() // waits out the result's publish backoffs: doc.go
	r := newFaultRig(t)
	r.cfg.ShutdownTimeout = 2 * time.Second
	r.start(t, "", nil)
	h := r.fake.Fault(produceFault(r.cfg.ResultTopic, kerr.InvalidRecord, -1))
	id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	committed := func() int64 { return r.cl.groupOffsets(r.cfg.GroupID)[fmt.Sprintf("%s/0", r.cfg.RequestTopic)] }
	require.Eventually(t, func() bool { return h.Hits() >= 3 || committed() > 0 }, 30*time.Second, 20*time.Millisecond)
	r.agent.stop(t)
	require.Zero(t, committed(), "no commit past a result that is not out (%d refusals)", h.Hits())
	require.Zero(t, r.cl.resultsFor(id))

	h.Remove()
	b := startAgent(t, r.cfg, agent.Options{})
	res := r.cl.waitResult(id, 60*time.Second)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	r.waitCommitted(t, 1, resultWait)
	require.Equal(t, 1, r.cl.resultsFor(id))
	require.Contains(t, r.cl.live(r.cfg.ConfigTopic), "connector-file-src-1")
	require.Equal(t, map[string]liveRecord{`["file-src-1",{"filename":"test.txt"}]`: {Partition: 2, Value: `{"position":30}`}}, r.cl.live(r.cfg.OffsetsTopic))
	require.Equal(t, 0.0, b.gauge("offsetagent_results_pending"))
}
