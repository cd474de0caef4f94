package integration

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

// contentionRequest is one of a round's requests for the same connector.
type contentionRequest struct {
	id        string
	partition int
	position  int
}

// Requests for one connector published at once to every request partition, against two agent
// processes in one group: in every round exactly one request succeeds, every other one fails
// at validate_config with a 409 naming the connector, and Connect's topics hold exactly the
// winner's config and offsets (a loser neither wrote nor rolled back anything). Half the
// requests spell the name with surrounding whitespace, which Connect trims, and half have no
// record key, so neither the key nor the lane keeps them apart.
func TestConcurrentRequestsForOneConnector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const partitions, rounds = 6, 50
	c := crashCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = partitions
	cl := newFreshClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, partitions)
	seedConnectTopics(t, cl, cfg)

	procs := []*agentProcess{startProcess(t, cfg, ""), startProcess(t, cfg, "")}
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.RequestTopic, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, BatchSize: partitions, Transport: cl.kc.Transport,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition })}
	t.Cleanup(func() { _ = w.Close() })

	published := 0
	for round := range rounds {
		name := fmt.Sprintf("cc-%02d", round)
		var reqs []contentionRequest
		var msgs []kafka.Message
		for p := range partitions {
			r := contentionRequest{id: uuid.NewString(), partition: p, position: 100*round + p}
			spelled := name
			if p%2 == 1 {
				spelled = "  " + name + " "
			}
			body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","file":"f","topic":"t-%d"},
			  "initial_offsets":[{"partition":{"filename":"f"},"offset":{"position":%d}}]}`, spelled, p, r.position)
			key := spelled
			if p >= partitions/2 {
				key = ""
			}
			msg, err := events.RequestMessage(cfg.RequestTopic, []byte(body), events.RequestOptions{ID: r.id, Source: "/contention", Key: key})
			require.NoError(t, err)
			if key == "" {
				msg.Key = nil
			}
			msg.Topic, msg.Partition = "", p
			msgs = append(msgs, msg)
			reqs = append(reqs, r)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		require.NoError(t, w.WriteMessages(ctx, msgs...))
		cancel()
		published += partitions
		all := cl.waitResults(published, 90*time.Second)

		byID := map[string]result{}
		for _, res := range all {
			byID[res.Data.RequestID] = res
		}
		var winner *contentionRequest
		for i, r := range reqs {
			res, ok := byID[r.id]
			require.True(t, ok, "round %d: no result for partition %d", round, r.partition)
			if res.Type == events.TypeCreateSucceeded {
				require.Nil(t, winner, "round %d: two requests succeeded (partitions %d and %d)", round, r.partition, partitionOfWinner(winner))
				winner = &reqs[i]
				continue
			}
			require.Equal(t, events.TypeCreateFailed, res.Type)
			require.Equal(t, "validate_config", res.Data.FailedStep, "round %d partition %d: %s", round, r.partition, res.Data.Message)
			require.Equal(t, 409, res.Data.ErrorCode, res.Data.Message)
			require.Contains(t, res.Data.Message, name)
		}
		require.NotNil(t, winner, "round %d: no request succeeded", round)

		key := fmt.Sprintf(`[%q,{"filename":"f"}]`, name)
		live := cl.live(cfg.OffsetsTopic)
		require.Equal(t, liveRecord{Partition: partitionOf(key), Value: fmt.Sprintf(`{"position":%d}`, winner.position)}, live[key],
			"round %d: the offsets topic holds the winner's offsets", round)
		configs := cl.live(cfg.ConfigTopic)
		require.Contains(t, configs, "connector-"+name, "round %d", round)
		require.Contains(t, configs["connector-"+name].Value, fmt.Sprintf(`"topic":"t-%d"`, winner.partition),
			"round %d: the config topic holds the winner's config", round)
		require.Equal(t, `{"state":"STARTED","state.v2":"STARTED"}`, configs["target-state-"+name].Value)
	}
	for _, p := range procs {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t, 30*time.Second), "graceful shutdown; output:\n%s", p.out)
	}
	require.Empty(t, cl.live(cfg.IntentTopic), "no intent or claim left behind")
}

func partitionOfWinner(r *contentionRequest) int {
	if r == nil {
		return -1
	}
	return r.partition
}
