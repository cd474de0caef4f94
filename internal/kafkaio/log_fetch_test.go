package kafkaio

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Records the owner wrote and handed to the Log (Hold, WrittenBatch, release) are not fetched
// back. Before, the applier took a run off its list before it moved the position past it, and
// a fetch prepared in between went out from the old position and brought the whole write
// back. (A long poll already in flight when a write begins does bring some back: here each
// write waits for the poll to end first, so that nothing at all may come back.)
func TestLogDoesNotFetchOwnWritesBack(t *testing.T) {
	const parts, rounds, perPart = 40, 4, 100
	p, l := startLogAndProducer(t, "own", parts)
	ctx := testContext(t)

	value := strings.Repeat("v", 200)
	all := make([]int32, parts)
	for i := range all {
		all[i] = int32(i)
	}
	for r := range rounds {
		e := NewBatchEncoder(parts, 0)
		for i := range parts * perPart {
			e.Append(i%parts, fmt.Appendf(nil, "k%d-%d", r, i), []byte(value))
		}
		enc := e.Encoded()
		release := l.Hold(all)
		time.Sleep(logFetchMaxWait + 100*time.Millisecond) // the poll in flight ends
		err := p.WriteEncoded(ctx, "own", enc, func(a Acked) { l.WrittenBatch(int(a.Partition), a.Base, a.Batch) })
		release()
		require.NoError(t, err)
		require.NoError(t, l.Sync(ctx))
	}
	for r := range rounds {
		for i := range parts * perPart {
			require.Equal(t, []string{value}, l.seen(fmt.Sprintf("k%d-%d", r, i)))
		}
	}
	require.Zero(t, l.fetched.Load(), "record bytes fetched")
}

// A response that is full (a poll of caught-up partitions asks for logPollBytes) leaves the
// partitions it had no room for empty, with their high watermark: they are fetched again, not
// taken for partitions whose tail compaction removed.
func TestLogFullResponseSkipsNothing(t *testing.T) {
	const parts, perPart = 10, 100
	p, l := startLogAndProducer(t, "full", parts)
	ctx := testContext(t)
	require.NoError(t, l.Sync(ctx))

	// Another writer's records, 100 KiB per partition, all in one Produce request: the poll
	// in flight answers with the first partition's batch and no room for the others.
	value := strings.Repeat("v", 1024)
	for round := range 3 {
		time.Sleep(50 * time.Millisecond) // the next poll is in flight
		e := NewBatchEncoder(parts, 0)
		for i := range parts * perPart {
			e.Append(i%parts, fmt.Appendf(nil, "k%d-%d", round, i), []byte(value))
		}
		require.NoError(t, p.WriteEncoded(ctx, "full", e.Encoded(), nil))
		require.NoError(t, l.Sync(ctx))
		for i := range parts * perPart {
			require.Equal(t, []string{value}, l.seen(fmt.Sprintf("k%d-%d", round, i)), "record %d of round %d", i, round)
		}
	}
}

// startLogAndProducer starts an embedded broker with topic of parts partitions, a running
// appliedLog of it and a Producer.
func startLogAndProducer(t *testing.T, topic string, parts int) (*Producer, *appliedLog) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(int32(parts), topic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	p := NewProducer(Options{Brokers: brokers, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
	return p, runAppliedLog(t, brokers, topic)
}
