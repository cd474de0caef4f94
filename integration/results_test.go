package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// createResultTopic creates the result topic before the agent does, with a small
// max.message.bytes.
func createResultTopic(t *testing.T, cl *client, maxBytes int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cl.kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: cl.cfg.ResultTopic, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: fmt.Sprint(maxBytes)}},
	}}})
	require.NoError(t, err)
	require.NoError(t, res.Errors[cl.cfg.ResultTopic])
}

// A result larger than the result topic's max.message.bytes is shortened to fit: status,
// counts and ids stay, the long lists (previous_offsets, the plan's records) keep what fits,
// and "truncated" with the full counts says so. Neither request is retried forever, and the
// partition goes on with the next request.
func TestOversizedResultsAreTruncated(t *testing.T) {
	const limit = 64 << 10
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	seedConnectTopics(t, cl, cfg)
	createResultTopic(t, cl, limit)
	// 2000 previous offsets of "big": about 160 kB of previous_offsets.
	var seed []kafka.Message
	for i := range 2000 {
		seed = append(seed, kafka.Message{Key: fmt.Appendf(nil, `["big",{"cluster":"A","partition":%d,"topic":"old"}]`, i), Value: []byte(`{"offset":7}`)})
	}
	cl.produce(cfg.OffsetsTopic, seed...)
	a := startAgent(t, cfg, agent.Options{})

	planned := cl.publish(string(mm2Body("plan", 3000)), events.RequestOptions{DryRun: true})
	wiped := cl.publish(string(mm2Body("big", 1)), events.RequestOptions{})
	after := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})

	res := cl.waitResult(planned, 60*time.Second)
	require.Equal(t, events.TypeCreatePlanned, res.Type)
	require.LessOrEqual(t, len(res.Msg.Value), limit)
	require.True(t, res.Data.Truncated)
	require.NotNil(t, res.Data.FullCounts)
	require.Equal(t, 3000, res.Data.FullCounts.PlanRecords)
	require.NotNil(t, res.Data.Plan)
	require.NotEmpty(t, res.Data.Plan.Records, "what fits is kept")
	require.Less(t, len(res.Data.Plan.Records), 3000)
	require.Len(t, res.Data.Plan.ConfigRecords, 2)

	res = cl.waitResult(wiped, 60*time.Second)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.True(t, res.Data.Truncated)
	require.Equal(t, 2000, res.Data.FullCounts.PreviousOffsets)
	require.Equal(t, 2000, *res.Data.OffsetsWiped)
	require.Equal(t, 1, *res.Data.OffsetsWritten)
	require.NotEmpty(t, res.Data.PreviousOffsets.Offsets)
	require.Less(t, len(res.Data.PreviousOffsets.Offsets), 2000)

	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(after, resultWait).Type, "the partition goes on")
	require.False(t, cl.waitResult(after, resultWait).Data.Truncated)
	require.Len(t, cl.allResults(), 3, "one result per request")
	require.Equal(t, 0.0, a.metric(t, "offsetagent_results_unpublished_total"))
}

// A non-retriable error publishing a result (an authorization error, MESSAGE_TOO_LARGE, an
// invalid record) is not retried at once: after MESSAGE_TOO_LARGE a minimal result goes out
// instead; after the others, or when the minimal result is refused too, the result is not
// dropped: it is tried again after a backoff (the whole result first), and the request is
// committed only once a result is out.
//
// The refusal counts are chosen so that each row tells the two answers apart. A refusal
// answered with the minimal result costs two tries (whole, minimal) per round: after one such
// round the whole result goes out again, so a count of two cannot tell whether the minimal
// result was tried; a count of three can (the minimal result would be the fourth try, and
// go out). Hence "invalid record three times": answered as a size refusal, it would go out
// minimal.
func TestResultPublishNonRetriable(t *testing.T) {
	t.Parallel() // waits out the result's publish backoffs: doc.go
	cases := []struct {
		name      string
		err       *kerr.Error
		count     int
		truncated bool
	}{
		{"not authorized once: the whole result, later", kerr.TopicAuthorizationFailed, 1, false},
		{"too large once: minimal result", kerr.MessageTooLarge, 1, true},
		{"not authorized twice: the whole result, later", kerr.TopicAuthorizationFailed, 2, false},
		{"invalid record twice: the whole result, later", kerr.InvalidRecord, 2, false},
		{"invalid record three times: the whole result, later", kerr.InvalidRecord, 3, false},
		// The whole result refused for its size, the minimal one refused too: neither is
		// dropped, and the next round tries the whole result first (read anew against the
		// topic's limit, which it fits).
		{"too large, minimal result refused too: the whole result, later", kerr.MessageTooLarge, 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a broker of its own each, waiting out the backoffs side by side
			r := newFaultRig(t)
			r.start(t, "", nil)
			r.install(produceFault(r.cfg.ResultTopic, tc.err, tc.count))
			id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
			res := r.cl.waitResult(id, 60*time.Second)
			r.waitCommitted(t, 1, resultWait)
			require.Equal(t, tc.count, r.hits())
			require.Equal(t, events.TypeCreateSucceeded, res.Type)
			require.Equal(t, tc.truncated, res.Data.Truncated, "only the minimal result says it is shortened")
			require.Equal(t, "file-src-1", res.Data.Name)
			if !tc.truncated {
				// Refused for anything but its size: once the refusal lifts, the whole result
				// goes out, not the minimal one (which says less: no config, "truncated").
				d := res.Data
				require.Nil(t, d.FullCounts)
				require.Equal(t, id, d.RequestID)
				require.Equal(t, "RUNNING", d.InitialState)
				require.Equal(t, "org.apache.kafka.connect.file.FileStreamSourceConnector", d.Config.Map()["connector.class"],
					"the whole result carries the connector's config")
				require.NotEmpty(t, d.InitialOffsetsResponse)
				require.Len(t, d.Stages, 5)
				require.Equal(t, 0.0, r.agent.gauge("offsetagent_results_pending"))
			}
			require.Equal(t, 1, *res.Data.OffsetsWritten)
			require.Equal(t, 1, r.cl.resultsFor(id))
			require.Equal(t, 0.0, r.agent.metric(t, "offsetagent_results_unpublished_total"))
			// The partition goes on.
			next := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
			require.Equal(t, 409, r.cl.waitResult(next, resultWait).Data.ErrorCode)
			r.waitCommitted(t, 2, resultWait)
		})
	}
}
