package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// The sink request the fault tests use: two initial offsets for group connect-jdbc-sink.
const faultSinkBody = `{"name":"jdbc-sink","config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"orders","tasks.max":"1"},
  "initial_offsets":[
    {"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":5}},
    {"partition":{"kafka_topic":"orders","kafka_partition":1},"offset":{"kafka_offset":6}}]}`

const faultSinkGroup = "connect-jdbc-sink"

// faultRig is one agent on its own kfake cluster whose broker faults are armed at an agent
// fault point, so that a fault hits exactly the write of the stage under test and not the
// writes before it (the wipe also produces to the offsets topic).
type faultRig struct {
	fake  *kfake.Cluster
	cfg   agent.Config
	cl    *client
	agent *runningAgent

	mu      sync.Mutex
	handles []*kfake.FaultHandle
}

// newFaultRig starts a cluster and returns the rig before its agent runs, so that a test can
// seed offsets first. arm, when not nil, returns the faults to install at the agent's fault
// point at (e.g. "before:write_offsets").
func newFaultRig(t *testing.T) *faultRig {
	t.Helper()
	c := startCluster(t)
	r := &faultRig{fake: c.requireFake(t), cfg: testConfig(c)}
	r.cfg.RequestTopicPartitions = 1
	r.cl = newClient(t, r.cfg)
	return r
}

// start runs the agent; the faults arm(cfg) are installed when the agent reaches point at.
func (r *faultRig) start(t *testing.T, at string, arm func(cfg agent.Config) []kfake.Fault) {
	t.Helper()
	var once sync.Once
	opts := agent.Options{}
	if at != "" {
		opts.Fault = func(point, _ string) {
			if point == at {
				once.Do(func() { r.install(arm(r.cfg)...) })
			}
		}
	}
	r.agent = startAgent(t, r.cfg, opts)
}

// install adds broker faults now.
func (r *faultRig) install(fs ...kfake.Fault) {
	h := r.fake.Fault(fs...)
	r.mu.Lock()
	r.handles = append(r.handles, h)
	r.mu.Unlock()
}

// remove takes every installed fault away.
func (r *faultRig) remove() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.handles {
		h.Remove()
	}
}

// hits is how many requests the installed faults answered.
func (r *faultRig) hits() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.handles {
		n += h.Hits()
	}
	return n
}

// seedSource writes a deleted connector's leftovers and another connector's offset.
func seedSource(t *testing.T, cl *client, cfg agent.Config) {
	t.Helper()
	cl.produce(cfg.OffsetsTopic,
		kafka.Message{Key: []byte(`["file-src-1",{"filename":"test.txt"}]`), Value: []byte(`{"position":99}`)},
		kafka.Message{Key: []byte(`["file-src-1",{"filename":"old.txt"}]`), Value: []byte(`{"position":5}`)},
		kafka.Message{Key: []byte(`["other",{"filename":"test.txt"}]`), Value: []byte(`{"position":1}`)},
	)
}

// seedSink gives the sink connector's group committed offsets, as a consumer that read them in
// leader epoch 0 commits them (epoch 0, empty metadata).
func seedSink(t *testing.T, cl *client) {
	t.Helper()
	cl.createTopic("orders", 3)
	kafkatest.CommitEntries(t, cl.cfg.Brokers, faultSinkGroup,
		kafkatest.GroupEntry{Topic: "orders", Partition: 0, Offset: 40, Epoch: 0},
		kafkatest.GroupEntry{Topic: "orders", Partition: 2, Offset: 41, Epoch: 0})
}

func produceFault(topic string, err *kerr.Error, count int) kfake.Fault {
	return kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: err, Count: count, When: notProbe}
}

// notProbe leaves out the agent's permission probes (package kafkaio's probe.go), which send
// their requests for partition -1: a probe of the result topic that took a fault meant for a
// request's result made TestResultPublishNonRetriable fail about once in ten runs.
func notProbe(r kmsg.Request) bool {
	if p, ok := r.(*kmsg.ProduceRequest); ok {
		for _, t := range p.Topics {
			for _, pp := range t.Partitions {
				if pp.Partition >= 0 {
					return true
				}
			}
		}
		return false
	}
	return true
}

func commitFault(group string, err *kerr.Error, count int) kfake.Fault {
	return kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: err, Count: count}
}

// sumCounter sums every series of a counter (0 when it has none yet).
func (r *runningAgent) sumCounter(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.Metric {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// A permanent broker error on each write in turn fails the request at that step, and the
// cleanup leaves the connector's offsets exactly as they were and no config record behind. The
// produce errors here refuse the write outright: nothing of it is in the topic, so the cleanup
// removes nothing of it (removed and configRemoved count only what earlier steps wrote).
func TestBrokerFaultPermanentCleansUp(t *testing.T) {
	t.Parallel() // waits out the retries' backoffs: doc.go
	cases := []struct {
		name          string
		sink          bool
		at            string
		fault         func(cfg agent.Config) kfake.Fault
		step          string
		removed       int
		restored      int
		configRemoved []string
		// code is the result's error_code: 403 for a refused ACL (the message names it), else 500.
		code int
	}{
		{
			name: "offsets topic produce topic authorization failed", at: "before:write_offsets",
			fault: func(cfg agent.Config) kfake.Fault {
				return produceFault(cfg.OffsetsTopic, kerr.TopicAuthorizationFailed, 1)
			},
			step: "write_offsets", removed: 0, restored: 2, code: 403,
		},
		{
			name: "offsets topic produce invalid record", at: "before:write_offsets",
			fault: func(cfg agent.Config) kfake.Fault { return produceFault(cfg.OffsetsTopic, kerr.InvalidRecord, 1) },
			step:  "write_offsets", removed: 0, restored: 2,
		},
		{
			name: "config topic produce", at: "before:write_config",
			fault: func(cfg agent.Config) kfake.Fault { return produceFault(cfg.ConfigTopic, kerr.InvalidRecord, 1) },
			step:  "write_config", removed: 1, restored: 2,
			// The write was refused: no config record carries the request's mark, none is tombstoned.
		},
		{
			name: "sink group commit", sink: true, at: "before:write_offsets",
			fault: func(agent.Config) kfake.Fault {
				return commitFault(faultSinkGroup, kerr.GroupAuthorizationFailed, 1)
			},
			// The commit was refused before anything was committed: nothing of it to remove.
			step: "write_offsets", removed: 0, restored: 2, code: 403,
		},
		{
			name: "config topic produce after sink offsets", sink: true, at: "before:write_config",
			fault: func(cfg agent.Config) kfake.Fault { return produceFault(cfg.ConfigTopic, kerr.InvalidRecord, 1) },
			step:  "write_config", removed: 2, restored: 2,
			// The write was refused: no config record carries the request's mark, none is tombstoned.
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			body, name := readFile(t, "testdata/file-src-1.json"), "file-src-1"
			if tc.sink {
				body, name = faultSinkBody, "jdbc-sink"
			}
			// The agent creates Connect's topics; start it first, then seed.
			r.start(t, tc.at, func(cfg agent.Config) []kfake.Fault { return []kfake.Fault{tc.fault(cfg)} })
			if tc.sink {
				seedSink(t, r.cl)
			} else {
				seedSource(t, r.cl, r.cfg)
			}
			offsetsBefore := r.cl.live(r.cfg.OffsetsTopic)
			groupBefore := r.cl.groupOffsets(faultSinkGroup)
			var entriesBefore map[string]string
			if tc.sink {
				entriesBefore = r.cl.groupEntries(faultSinkGroup)
			}

			id := r.cl.publish(body, events.RequestOptions{})
			res := r.cl.waitResult(id, resultWait)

			require.Equal(t, events.TypeCreateFailed, res.Type, res.Data.Message)
			require.Equal(t, tc.step, res.Data.FailedStep, res.Data.Message)
			code := tc.code
			if code == 0 {
				code = 500
			}
			require.Equal(t, code, res.Data.ErrorCode, res.Data.Message)
			require.NotEmpty(t, res.Data.Message)
			require.Equal(t, 1, r.hits(), "the fault answered exactly one request")
			cu := res.Data.Cleanup
			require.NotNil(t, cu)
			require.Empty(t, cu.Error, cu.Summary)
			require.Empty(t, cu.Left)
			require.Equal(t, tc.removed, cu.OffsetsRemoved, cu.Summary)
			require.Equal(t, tc.restored, cu.OffsetsRestored, cu.Summary)
			require.Equal(t, tc.configRemoved, cu.ConfigRecordsRemoved)
			require.Contains(t, cu.Summary, fmt.Sprintf("restored %d previous offsets", tc.restored))
			require.NotNil(t, res.Data.PreviousOffsets)
			require.Len(t, res.Data.PreviousOffsets.Offsets, 2)

			require.Equal(t, offsetsBefore, r.cl.live(r.cfg.OffsetsTopic), "offsets topic ends as before")
			require.Equal(t, groupBefore, r.cl.groupOffsets(faultSinkGroup), "sink group ends as before")
			if tc.sink {
				// Restored as they were found (offset, leader epoch, metadata): a consumer
				// resumes from these.
				require.Equal(t, entriesBefore, r.cl.groupEntries(faultSinkGroup))
			}
			live := r.cl.live(r.cfg.ConfigTopic)
			require.NotContains(t, live, "connector-"+name)
			require.NotContains(t, live, "target-state-"+name)
			require.Equal(t, 1.0, r.agent.failures(t, tc.step))
			require.Equal(t, 1.0, r.agent.metric(t, "offsetagent_stage_failures_total", "stage", tc.step, "error_code", fmt.Sprint(code)),
				"the failure counted under its error code")
		})
	}
}

// A cleanup that itself fails (the offsets topic refuses every write from write_offsets on) is
// reported as such, with its error and what is left, never hidden; previous_offsets still
// holds the snapshot needed to restore by hand.
func TestBrokerFaultCleanupFailureReported(t *testing.T) {
	r := newFaultRig(t)
	r.start(t, "before:write_offsets", func(cfg agent.Config) []kfake.Fault {
		return []kfake.Fault{produceFault(cfg.OffsetsTopic, kerr.TopicAuthorizationFailed, -1)}
	})
	seedSource(t, r.cl, r.cfg)
	id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	res := r.cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type)
	require.Equal(t, "write_offsets", res.Data.FailedStep)
	cu := res.Data.Cleanup
	require.NotNil(t, cu)
	require.True(t, strings.HasPrefix(cu.Summary, "cleanup incomplete"), cu.Summary)
	require.Contains(t, strings.ToLower(cu.Error), "authoriz", cu.Error)
	// write_offsets was refused outright ("0 of 1 records written", the one record refused):
	// no initial offset is in the topic, and the cleanup does not say one may remain.
	require.NotContains(t, cu.Left, "initial offsets may remain", cu.Left)
	require.Contains(t, cu.Left, "2 previous offsets in topic "+r.cfg.OffsetsTopic+" were not restored")
	require.Zero(t, cu.OffsetsRestored)
	require.Len(t, res.Data.PreviousOffsets.Offsets, 2)
	require.NotContains(t, r.cl.live(r.cfg.ConfigTopic), "connector-file-src-1")
}

// A write the broker refuses outright (the config topic refuses every write from write_config
// on) left nothing in the topic: the cleanup puts back the offsets and has no config record to
// remove, so it is complete, and offsetagent_cleanups_incomplete_total does not count it.
func TestBrokerFaultRefusedWriteNothingLeft(t *testing.T) {
	r := newFaultRig(t)
	r.start(t, "before:write_config", func(cfg agent.Config) []kfake.Fault {
		return []kfake.Fault{produceFault(cfg.ConfigTopic, kerr.TopicAuthorizationFailed, -1)}
	})
	seedSource(t, r.cl, r.cfg)
	offsetsBefore := r.cl.live(r.cfg.OffsetsTopic)
	id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	res := r.cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type)
	require.Equal(t, "write_config", res.Data.FailedStep, res.Data.Message)
	require.Equal(t, 403, res.Data.ErrorCode, res.Data.Message)
	cu := res.Data.Cleanup
	require.NotNil(t, cu)
	require.Empty(t, cu.Left, cu.Summary)
	require.Empty(t, cu.Error, cu.Summary)
	require.False(t, strings.HasPrefix(cu.Summary, "cleanup incomplete"), cu.Summary)
	require.Empty(t, cu.ConfigRecordsRemoved, "no config record was written")
	require.Equal(t, 1, cu.OffsetsRemoved, cu.Summary)
	require.Equal(t, 2, cu.OffsetsRestored, cu.Summary)
	require.Equal(t, offsetsBefore, r.cl.live(r.cfg.OffsetsTopic), "offsets topic ends as before")
	require.Empty(t, r.cl.live(r.cfg.ConfigTopic))
	r.agent.waitMetric(t, 1, "offsetagent_requests_total", "result", "failed")
	require.Zero(t, r.agent.sumCounter(t, "offsetagent_cleanups_incomplete_total"))
}

// Transient broker errors on a few writes are retried by kafkaio.Retry (kafka-go's writers
// make one attempt each), counted under the classifier's reason, and the request succeeds
// with the records a fault-free run writes.
func TestBrokerFaultTransientRetried(t *testing.T) {
	t.Parallel() // waits out the retries' backoffs: doc.go
	cases := []struct {
		name   string
		sink   bool
		at     string
		fault  func(cfg agent.Config) kfake.Fault
		reason string
	}{
		{
			name: "offsets topic not leader x3", at: "before:write_offsets", reason: "not_leader",
			fault: func(cfg agent.Config) kfake.Fault {
				return produceFault(cfg.OffsetsTopic, kerr.NotLeaderForPartition, 3)
			},
		},
		{
			// REQUEST_TIMED_OUT on produce is answered after the records were appended: the
			// retry writes the same bytes again, which a compacted topic absorbs.
			name: "offsets topic request timed out x3", at: "before:write_offsets", reason: "timeout",
			fault: func(cfg agent.Config) kfake.Fault { return produceFault(cfg.OffsetsTopic, kerr.RequestTimedOut, 3) },
		},
		{
			name: "config topic not enough replicas x4", at: "before:write_config", reason: "not_enough_replicas",
			fault: func(cfg agent.Config) kfake.Fault {
				return produceFault(cfg.ConfigTopic, kerr.NotEnoughReplicas, 4)
			},
		},
		{
			name: "sink group commit coordinator not available x3", sink: true, at: "before:write_offsets", reason: "coordinator",
			fault: func(agent.Config) kfake.Fault {
				return commitFault(faultSinkGroup, kerr.CoordinatorNotAvailable, 3)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			r.start(t, tc.at, func(cfg agent.Config) []kfake.Fault { return []kfake.Fault{tc.fault(cfg)} })
			body := readFile(t, "testdata/file-src-1.json")
			if tc.sink {
				seedSink(t, r.cl)
				body = faultSinkBody
			}
			id := r.cl.publish(body, events.RequestOptions{})
			res := r.cl.waitResult(id, 60*time.Second)
			require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
			count := tc.fault(r.cfg).Count
			require.Equal(t, count, r.hits(), "every injected fault was hit")
			require.GreaterOrEqual(t, r.agent.metric(t, "offsetagent_retries_total", "reason", tc.reason), float64(count),
				"each retried error is counted under the classifier's reason")
			if tc.sink {
				require.Equal(t, map[string]int64{"orders/0": 5, "orders/1": 6}, r.cl.groupOffsets(faultSinkGroup))
				return
			}
			require.Equal(t, map[string]liveRecord{`["file-src-1",{"filename":"test.txt"}]`: {Partition: 2, Value: `{"position":30}`}},
				r.cl.live(r.cfg.OffsetsTopic))
			live := r.cl.live(r.cfg.ConfigTopic)
			require.Contains(t, live, "connector-file-src-1")
			require.Contains(t, live, "target-state-file-src-1")
		})
	}
}
