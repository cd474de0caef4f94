package integration

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// seedSinkEntries gives a sink connector's group entries that a consumer committed: leader
// epochs other than none and metadata, on the partitions of topic.
func seedSinkEntries(t *testing.T, cl *client, group, topic string) map[string]string {
	t.Helper()
	cl.createTopic(topic, 3)
	kafkatest.CommitEntries(t, cl.cfg.Brokers, group,
		kafkatest.GroupEntry{Topic: topic, Partition: 0, Offset: 40, Epoch: 5, Metadata: "m"},
		kafkatest.GroupEntry{Topic: topic, Partition: 1, Offset: 17, Epoch: 0, Metadata: ""},
		kafkatest.GroupEntry{Topic: topic, Partition: 2, Offset: 41, Epoch: -1, Metadata: "task-0 generation 3"},
	)
	before := cl.groupEntries(group)
	require.Equal(t, map[string]string{
		topic + "/0": `offset=40 epoch=5 metadata="m"`,
		topic + "/1": `offset=17 epoch=0 metadata=""`,
		topic + "/2": `offset=41 epoch=-1 metadata="task-0 generation 3"`,
	}, before, "seeded as committed")
	return before
}

// A create request for a sink connector whose group has leftover offsets, with initial
// offsets, wipes the group and commits its own; when the request fails after that, the undo
// gives the group back its entries byte for byte: offset, committed leader epoch and metadata
// as they were, not as a new commit would carry them.
func TestSinkRollbackRestoresGroupEntries(t *testing.T) {
	cases := []struct {
		name  string
		at    string
		fault func(cfg agent.Config) kfake.Fault
		step  string
	}{
		{
			name: "config topic produce", at: "before:write_config",
			fault: func(cfg agent.Config) kfake.Fault { return produceFault(cfg.ConfigTopic, kerr.InvalidRecord, 1) },
			step:  "write_config",
		},
		{
			name: "group commit", at: "before:write_offsets",
			fault: func(agent.Config) kfake.Fault {
				return commitFault(faultSinkGroup, kerr.GroupAuthorizationFailed, 1)
			},
			step: "write_offsets",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			r.start(t, tc.at, func(cfg agent.Config) []kfake.Fault { return []kfake.Fault{tc.fault(cfg)} })
			before := seedSinkEntries(t, r.cl, faultSinkGroup, "orders")

			id := r.cl.publish(faultSinkBody, events.RequestOptions{})
			res := r.cl.waitResult(id, resultWait)

			require.Equal(t, events.TypeCreateFailed, res.Type, res.Data.Message)
			require.Equal(t, tc.step, res.Data.FailedStep, res.Data.Message)
			require.Equal(t, 1, r.hits(), "the fault answered exactly one request")
			cu := res.Data.Cleanup
			require.NotNil(t, cu)
			require.Empty(t, cu.Left, cu.Summary)
			require.Equal(t, 3, cu.OffsetsRestored, cu.Summary)
			// previous_offsets keeps its GET-offsets shape: the offsets only.
			require.Equal(t, []string{
				`{"partition":{"kafka_partition":0,"kafka_topic":"orders"},"offset":{"kafka_offset":40}}`,
				`{"partition":{"kafka_partition":1,"kafka_topic":"orders"},"offset":{"kafka_offset":17}}`,
				`{"partition":{"kafka_partition":2,"kafka_topic":"orders"},"offset":{"kafka_offset":41}}`,
			}, offsetSet(t, res.Data.PreviousOffsets))

			require.Equal(t, before, r.cl.groupEntries(faultSinkGroup), "the group's entries are restored byte for byte")
		})
	}
}

// An agent killed after it wiped a sink connector's group (or after it committed the
// request's offsets, or wrote its config) leaves the snapshot in the intent; the next agent
// rolls the interrupted attempt back from it and runs the request again. The re-run here fails
// at its own commit, so that its undo puts back what the rollback restored: the group ends
// with the entries it had before the first attempt, byte for byte, only if both the intent's
// snapshot and the restores keep each entry's leader epoch and metadata.
func TestCrashRollbackRestoresGroupEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := crashCluster(t)
	fake := c.requireFake(t)
	for i, point := range []string{"after:wipe_offsets", "after:write_offsets", "after:write_config"} {
		t.Run(point, func(t *testing.T) {
			cfg := testConfig(c)
			cl := newClient(t, cfg)
			cl.createTopic(cfg.RequestTopic, 1)
			seedConnectTopics(t, cl, cfg)
			name, topic := fmt.Sprintf("jdbc-sink-crash-%d", i), fmt.Sprintf("orders-crash-%d-%s", i, cfg.RequestTopic)
			group := "connect-" + name
			before := seedSinkEntries(t, cl, group, topic)
			body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":%q,"tasks.max":"1"},
			  "initial_offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"kafka_offset":5}},
			                     {"partition":{"kafka_topic":%q,"kafka_partition":1},"offset":{"kafka_offset":6}}]}`, name, topic, topic, topic)
			id := cl.publish(body, events.RequestOptions{})

			p := startBinary(t, faultAgentBinary(t), cfg, point)
			require.Equal(t, 137, p.wait(t, 60*time.Second), "the fault hook should have stopped the process; output:\n%s", p.out)
			dropKilled(t, cfg)

			// The re-run's commit of the request's offsets (offset 5 on partition 0) is refused;
			// the rollback's commit of the snapshot is not.
			h := fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: kerr.GroupAuthorizationFailed, Count: 1,
				When: func(req kmsg.Request) bool {
					for _, tp := range req.(*kmsg.OffsetCommitRequest).Topics {
						for _, p := range tp.Partitions {
							if p.Partition == 0 && p.Offset == 5 {
								return true
							}
						}
					}
					return false
				}})
			defer h.Remove()
			q := startBinary(t, faultAgentBinary(t), cfg, "")
			res := cl.waitResult(id, 60*time.Second)
			require.NoError(t, q.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 0, q.wait(t, 30*time.Second), "graceful shutdown; output:\n%s", q.out)
			require.Contains(t, q.out.String(), "rolling back interrupted request")

			require.Equal(t, events.TypeCreateFailed, res.Type, res.Data.Message)
			require.Equal(t, "write_offsets", res.Data.FailedStep, res.Data.Message)
			require.Equal(t, 1, h.Hits())
			require.NotNil(t, res.Data.Cleanup)
			require.Empty(t, res.Data.Cleanup.Left, res.Data.Cleanup.Summary)
			require.Equal(t, before, cl.groupEntries(group), "the group's entries are restored byte for byte")
			require.Empty(t, cl.live(cfg.IntentTopic), "no intent left behind")
			require.NotContains(t, cl.live(cfg.ConfigTopic), "connector-"+name)
		})
	}
}
