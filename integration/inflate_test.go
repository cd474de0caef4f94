package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// Anyone may publish to the request topic, and a few KiB of compressed bytes can inflate to
// GiBs. A compressed batch that inflates beyond twice OFFSETAGENT_MAX_REQUEST_BYTES is not
// inflated: each of its records gets a failed result that says why, named by its place, and
// the partition goes on. A compressed request within the bound is read as any other.
func TestCompressedBatchBeyondInflateLimit(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cfg.MaxRequestBytes = 64 << 10 // a batch may inflate to 128 KiB
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	seedConnectTopics(t, cl, cfg)
	startAgent(t, cfg, agent.Options{})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(codec kafka.Compression, msgs ...kafka.Message) {
		t.Helper()
		w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.RequestTopic, Compression: codec,
			RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: len(msgs), BatchBytes: 64 << 20,
			Transport: &kafka.Transport{MetadataTTL: time.Second}}
		defer w.Close()
		require.NoError(t, w.WriteMessages(ctx, msgs...))
	}
	// Offsets 0 and 1: two records of zeros in one zstd batch, 16 MiB inflated, a few KiB on the
	// broker (the reader's shared buffer would have grown to hold them all).
	zeros := make([]byte, 8<<20)
	write(kafka.Zstd, kafka.Message{Key: []byte("bomb-a"), Value: zeros}, kafka.Message{Key: []byte("bomb-b"), Value: zeros})
	// Offset 2: one record of 400 kB of letters in an lz4 batch of its own (the exact-size path).
	rnd := rand.New(rand.NewPCG(3, 4))
	letters := make([]byte, 400_000)
	for i := range letters {
		letters[i] = "abcdefghijklmnopqrstuvwxyz"[rnd.IntN(26)]
	}
	write(kafka.Lz4, kafka.Message{Key: []byte("bomb-c"), Value: letters})
	// Offset 3: a request, compressed, well within the bound.
	msg, err := events.RequestMessage(cfg.RequestTopic, []byte(readFile(t, "testdata/file-src-1.json")),
		events.RequestOptions{ID: "after-the-bombs", Source: "/integration-test"})
	require.NoError(t, err)
	msg.Topic = ""
	write(kafka.Lz4, msg)

	for offset := range 3 {
		res := cl.waitResult(fmt.Sprintf("%s/0@%d", cfg.RequestTopic, offset), resultWait)
		require.Equal(t, events.TypeCreateFailed, res.Type)
		require.Equal(t, "decode_request", res.Data.FailedStep, "%+v", res.Data)
		require.Contains(t, res.Data.Message, "compressed record batch inflates beyond 131072 bytes")
	}
	res := cl.waitResult("after-the-bombs", resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Len(t, cl.allResults(), 4, "one result per record")
}
