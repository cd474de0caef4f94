package apply

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/target"
)

// doneHook is a Progress whose Done calls done.
type doneHook struct {
	noProgress
	done func(e *Entry)
}

func (h doneHook) Done(e *Entry) { h.done(e) }

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
