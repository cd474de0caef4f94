package integration

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// The paths of "Rolling back an interrupted request" (docs/architecture.md) that a redelivered
// request takes when the agent that receives it is not the one that began it: a refusal
// because the group mixes two Connect clusters, a replica whose intent view lags, and a
// connector another writer created between the interrupted attempt and its rollback.

// interruptAt runs a fault agent that stops (as a SIGKILL would) at point while it carries out
// cc's request, and returns the request's id. Connect's topics are seeded as seedCrashCase does
// (for a new source connector: two offsets and a target state left behind for the name).
func interruptAt(t *testing.T, cl *client, cfg agent.Config, cc crashCase, point string) string {
	t.Helper()
	p := startOnceProcess(t, cfg, point+"@"+cc.name, "")
	id := cl.publish(cc.body(), events.RequestOptions{})
	require.Equal(t, 137, p.wait(t, 90*time.Second), "the request should have stopped at %s; output:\n%s", point, p.out)
	dropKilled(t, cfg)
	return id
}

// recoveryRig is a broker with Connect's topics and a request topic of one partition, and the
// request of cc (a new source connector with initial offsets) seeded.
func recoveryRig(t *testing.T, name string) (*cluster, agent.Config, *client, crashCase) {
	t.Helper()
	c := crashCluster(t)
	cfg := testConfig(c)
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	seedConnectTopics(t, cl, cfg)
	cc := crashCase{name: name, offsets: true}
	seedCrashCase(t, cl, cfg, cc)
	return c, cfg, cl, cc
}

// A request interrupted after it created its connector (write_config done, its result not
// out) is redelivered to an agent whose consumer group mixes two Connect clusters: the agent
// refuses it before any step, as every request while the group is mixed, and rolls the
// interrupted attempt back first, as every other refusal does: the request is reported failed,
// so its connector must not stay.
func TestMixedGroupRefusalRollsBackTheInterruptedAttempt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c, cfg, cl, cc := recoveryRig(t, "src-mixed")
	before := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))
	id := interruptAt(t, cl, cfg, cc, "after:write_config")
	require.Contains(t, cl.live(cfg.ConfigTopic), "connector-"+cc.name, "the interrupted attempt created the connector")

	// The agent of another Connect cluster joins the group (on a topic of its own, so that the
	// request's partition stays with this cluster's agent).
	other := testConfig(c)
	cl.createTopic(other.RequestTopic, 1)
	ad := events.Advertisement{ConfigTopic: other.ConfigTopic, OffsetsTopic: other.OffsetsTopic,
		RequestTopic: other.RequestTopic, ResultTopic: other.ResultTopic, AnySource: true}
	advertisingMember(t, cfg.Brokers, cfg.GroupID, other.RequestTopic, ad.Marshal())
	launchAgent(t, cfg, agent.Options{})

	r := cl.waitResult(id, 60*time.Second)
	require.Equal(t, events.TypeCreateFailed, r.Type, r.Data.Message)
	require.Contains(t, r.Data.Message, "mixes two Connect clusters")
	require.Contains(t, r.Data.Message, "an interrupted earlier attempt of this request was rolled back", r.Data.Message)
	require.NotContains(t, r.Data.Message, "nothing was written")
	waitNoIntents(t, cl, cfg)
	after := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))
	require.Equal(t, before, after, "the connector reported failed is rolled back to what was there before")
}

// lagIntentView makes the next agent to start load an empty intent topic (its first ListOffsets
// of the topic's end answers 0, as a replica that began its load before the intent was written
// sees it) and keeps every Fetch of the intent topic failing until the returned function is
// called: the agent's intent view lags the topic by everything in it.
func lagIntentView(t *testing.T, fake *kfake.Cluster, topic string) (release func()) {
	t.Helper()
	fake.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ListOffsetsRequest)
		latest := false
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				latest = latest || (rt.Topic == topic && p.Timestamp == -1)
			}
		}
		if !latest {
			fake.KeepControl()
			return nil, nil, false
		}
		res := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.Offset, sp.Timestamp = p.Partition, 0, -1
				st.Partitions = append(st.Partitions, sp)
			}
			res.Topics = append(res.Topics, st)
		}
		return res, nil, true
	})
	fetches := fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: -1})
	return fetches.Remove
}

// A request interrupted after it created its connector is redelivered to a replica whose view
// of the intent topic lags (it has not read the interrupted attempt's intent yet), and which
// refuses the request (its source is not allowed there). The refusal reads the intent topic
// to its end before it decides that the request has no intent, as a claim does: it finds the
// intent and rolls the attempt back, instead of answering "nothing was written" over a live
// connector and leaving the intent to a sweep that would only remove it.
func TestRefusalByALaggingReplicaRollsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c, cfg, cl, cc := recoveryRig(t, "src-lag")
	fake := c.requireFake(t)
	before := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))
	id := interruptAt(t, cl, cfg, cc, "after:write_config")
	require.Contains(t, cl.live(cfg.ConfigTopic), "connector-"+cc.name, "the interrupted attempt created the connector")

	release := lagIntentView(t, fake, cfg.IntentTopic)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	logs := &lockedBuffer{}
	refusing := cfg
	refusing.AllowedSources = []string{"/not-the-request's"}
	startAgent(t, refusing, agent.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	// The replica has taken the request up once it answered it (from its lagging view) or
	// tried to read the intent topic to its end (which the lag keeps failing).
	require.Eventually(t, func() bool {
		l := logs.String()
		return strings.Contains(l, "request finished") || strings.Contains(l, "rollback of an interrupted request not done")
	}, 60*time.Second, 50*time.Millisecond, "the replica never took the request up:\n%s", logs.String())
	// An answer given now would be given from the lagging view.
	time.Sleep(time.Second)
	answered := len(cl.allResults())
	release()
	released = true

	r := cl.waitResult(id, 60*time.Second)
	require.Equal(t, events.TypeCreateFailed, r.Type, r.Data.Message)
	require.Equal(t, 403, r.Data.ErrorCode, r.Data.Message)
	assert.Zero(t, answered, "the refusal was answered before the replica read the intent topic: %s", r.Data.Message)
	require.Contains(t, r.Data.Message, "an interrupted earlier attempt of this request was rolled back", r.Data.Message)
	waitNoIntents(t, cl, cfg)
	after := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))
	require.Equal(t, before, after, "the connector reported failed is rolled back to what was there before")
}

// A request interrupted after it wrote its offsets, whose connector another writer (Connect's
// REST API) creates before the rollback: the connector is the other writer's and is never
// touched, its offsets included. Offset records carry no mark of their writer, so the offsets
// the interrupted request wrote cannot be told from ones the connector's tasks, or its owner
// through Connect's PATCH /offsets, wrote since; the rollback leaves them, and its result says
// so: its cleanup's left names them, and previous_offsets gives what was there before the
// request, to put back once the connector is stopped. An attempt stopped before its first
// write leaves nothing to say.
func TestRollbackUnderAConnectorAnotherWriterCreated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cases := []struct {
		name, point string
		// wrote: the attempt wrote offsets before it was stopped.
		wrote bool
	}{
		{name: "offsets written", point: "after:write_offsets", wrote: true},
		{name: "nothing written", point: "before:wipe_offsets"},
	}
	faultAgentBinary(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, cfg, cl, cc := recoveryRig(t, fmt.Sprintf("src-other-%d", i))
			before := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))
			id := interruptAt(t, cl, cfg, cc, tc.point)

			props := fmt.Sprintf(`{"properties":{"connector.class":"FileStreamSource","file":"other","topic":"t","name":%q}}`, cc.name)
			cl.produce(cfg.ConfigTopic, kafka.Message{Key: []byte("connector-" + cc.name), Value: []byte(props)})
			created := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))

			startAgent(t, cfg, agent.Options{})
			r := cl.waitResult(id, 60*time.Second)
			require.Equal(t, events.TypeCreateFailed, r.Type, r.Data.Message)
			require.Equal(t, 409, r.Data.ErrorCode, r.Data.Message)
			waitNoIntents(t, cl, cfg)
			after := stateOf(t, cl, cfg, cc.name, cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic))
			require.Equal(t, created, after, "the other writer's connector is untouched, its offsets included")
			require.NotNil(t, r.Data.Cleanup)
			require.Contains(t, r.Data.Cleanup.Summary, "left connector "+cc.name+" as it is: another writer's")
			if !tc.wrote {
				require.Empty(t, r.Data.Cleanup.Left, r.Data.Cleanup.Summary)
				return
			}
			require.NotEqual(t, before.Offsets, after.Offsets, "the attempt wrote offsets")
			require.Contains(t, r.Data.Cleanup.Left, fmt.Sprintf("2 offsets of connector %s differ from before the interrupted request", cc.name),
				"the offsets left to the other connector are said: %s", r.Data.Cleanup.Summary)
			require.NotNil(t, r.Data.PreviousOffsets, "what was there before the request is given")
			require.Equal(t, []string{
				`{"partition":{"filename":"f"},"offset":{"position":7}}`,
				`{"partition":{"filename":"g"},"offset":{"position":8}}`,
			}, offsetSet(t, r.Data.PreviousOffsets))
		})
	}
}
