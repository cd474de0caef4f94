package apply

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/target"
)

// doneHook is a Progress whose Done calls done, and Waiting waiting (when set).
type doneHook struct {
	noProgress
	done    func(e *Entry)
	waiting func()
}

func (h doneHook) Done(e *Entry) { h.done(e) }

func (h doneHook) Waiting(Wait) {
	if h.waiting != nil {
		h.waiting()
	}
}

// TestPublishWritesBeforeEncodingAll publishes a window of requests whose last body is too
// large for B's agents, so that publish reports it failed while it encodes the bodies: by
// then the broker must have been sent the first requests. B's agents start on the first
// requests of a large window while the rest are encoded, instead of waiting for every body
// of the window to be encoded first (the migrate bench scenario's 1,000 requests).
func TestPublishWritesBeforeEncodingAll(t *testing.T) {
	fake := kafkatest.Kfake(t, kfake.SeedTopics(2, "requests", "results"))
	produced := make(chan struct{})
	var once sync.Once
	fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		once.Do(func() { close(produced) })
		return nil, nil, false
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	to := target.Target{Brokers: fake.ListenAddrs(), RequestTopic: "requests", ResultTopic: "results", MaxRequestBytes: 4 << 10}
	results, err := OpenResults(ctx, to, fleet.RequestSourcePrefix+"m-1", logger)
	require.NoError(t, err)
	defer results.Close()

	const n = 200
	var entries []*Entry
	for i := range n {
		name := fmt.Sprintf("file-%03d", i)
		cfg := events.Config{{Key: "connector.class", Value: "FileStreamSource"}, {Key: "file", Value: "/tmp/" + name}}
		if i == n-1 {
			cfg = append(cfg, events.ConfigEntry{Key: "padding", Value: strings.Repeat("x", 8<<10)})
		}
		entries = append(entries, &Entry{Name: name, TargetName: name, Body: &Body{Name: name, Config: cfg}})
	}
	// interrupt ends the run once the oversized request is reported: nothing answers the
	// others, which stay pending.
	interrupt, stop := context.WithCancel(ctx)
	defer stop()
	var sentFirst, reported bool
	prog := doneHook{done: func(e *Entry) {
		if e != entries[n-1] {
			return
		}
		reported = true
		// Bounded: the old publish wrote nothing before it had encoded every body, this one.
		select {
		case <-produced:
			sentFirst = true
		case <-time.After(10 * time.Second):
		}
		stop()
	}}
	p := &publisher{opts: Options{To: to, MigrationID: "m-1", Concurrency: n, Progress: prog,
		Registry: connectors.Builtin(), Logger: logger}, results: results}
	p.run(interrupt, entries)

	require.True(t, reported, "the oversized request is reported")
	require.True(t, sentFirst, "the first requests were sent to the broker before the last body was encoded")
	require.Equal(t, OutcomeFailed, entries[n-1].Outcome)
	require.Equal(t, "publish_request", entries[n-1].FailedStep)
	require.Contains(t, entries[n-1].Message.String(), "OFFSETAGENT_MAX_REQUEST_BYTES")
	for _, e := range entries[:n-1] {
		require.Equal(t, OutcomePending, e.Outcome, e.Name)
	}
}

// TestPublishRefusedInLaterCall: B refuses one request of a window published in several calls
// (here the second: its record batch is above the topic's max.message.bytes because of it).
// Only that request fails, at publish_request; the others of its call are written again on
// their own, as in a window published in one call, and every other request is written.
func TestPublishRefusedInLaterCall(t *testing.T) {
	fake := kafkatest.Kfake(t, kfake.SeedTopics(1, "results"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := fake.ListenAddrs()
	res, err := (&kafka.Client{Addr: kafka.TCP(brokers...)}).CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: "requests", NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: "8000"}}}}})
	require.NoError(t, err)
	require.NoError(t, res.Errors["requests"])
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	to := target.Target{Brokers: brokers, RequestTopic: "requests", ResultTopic: "results", MaxRequestBytes: 1 << 20}
	results, err := OpenResults(ctx, to, fleet.RequestSourcePrefix+"m-1", logger)
	require.NoError(t, err)
	defer results.Close()

	payload := make([]byte, 8000)
	_, err = rand.Read(payload)
	require.NoError(t, err)
	// firstWrite+8 requests: two calls, the refused one in the second.
	const n, big = firstWrite + 8, firstWrite + 3
	var entries []*Entry
	for i := range n {
		name := fmt.Sprintf("file-%03d", i)
		cfg := events.Config{{Key: "connector.class", Value: "FileStreamSource"}, {Key: "file", Value: "/tmp/" + name}}
		if i == big {
			// Random hex: no codec makes it fit.
			cfg = append(cfg, events.ConfigEntry{Key: "payload", Value: hex.EncodeToString(payload)})
		}
		entries = append(entries, &Entry{Name: name, TargetName: name, Body: &Body{Name: name, Config: cfg}})
	}
	// interrupt ends the run once it awaits results (every request is then written or
	// refused): nothing answers them.
	interrupt, stop := context.WithCancel(ctx)
	defer stop()
	p := &publisher{opts: Options{To: to, MigrationID: "m-1", Concurrency: n, WaitReport: time.Millisecond,
		Progress: doneHook{done: func(*Entry) {}, waiting: stop}, Registry: connectors.Builtin(), Logger: logger}, results: results}
	p.run(interrupt, entries)

	for i, e := range entries {
		if i == big {
			require.Equal(t, OutcomeFailed, e.Outcome)
			require.Equal(t, "publish_request", e.FailedStep)
			require.Contains(t, e.Message.String(), "Message Size Too Large")
			continue
		}
		require.Equal(t, OutcomePending, e.Outcome, e.Name)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "requests", Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	written := map[string]bool{}
	for len(written) < n-1 {
		m, err := r.ReadMessage(ctx)
		require.NoError(t, err, "the requests written: %d of %d", len(written), n-1)
		written[string(m.Key)] = true
	}
	require.NotContains(t, written, entries[big].TargetName)
}
