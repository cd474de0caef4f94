package handlers

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A request whose deadline passes while it is validated writes nothing: the deadline is looked
// at again before the first write, and the request fails there with 408.
func TestCreatePastDeadlineBeforeFirstWrite(t *testing.T) {
	store := withStaleOffsets(t)
	before := store.liveOffsets()
	req := fileSourceRequest()
	req.Deadline = time.Now().Add(time.Hour)
	c, err := NewCreator(Options{Store: store, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
		OffsetsTopic: testOffsetsTopic, Intents: &fakeIntents{intents: map[string]*Intent{}}, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2},
		Fault: func(point, _ string) {
			if point == "after:validate_offsets" {
				req.Deadline = time.Now().Add(-time.Second) // validation took the request past it
			}
		}})
	require.NoError(t, err)
	out := c.Create(context.Background(), req)
	require.NotNil(t, out.Failure)
	require.Equal(t, StepWipeOffsets, out.Failure.Step)
	require.Equal(t, CodeDeadline, out.Failure.Code)
	require.Contains(t, out.Failure.Message, "deadline")
	require.Contains(t, out.Failure.Message, "nothing was written")
	require.Equal(t, "validate_config:ok validate_offsets:ok wipe_offsets:failed write_offsets:skipped write_config:skipped", stageOutcomes(out.Result))
	require.Equal(t, before, store.liveOffsets())
	require.Empty(t, store.configKeys())
}

func TestPastDeadline(t *testing.T) {
	now := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	req := fileSourceRequest()
	require.Nil(t, PastDeadline(req, now), "no deadline")
	req.Deadline = now.Add(time.Nanosecond)
	require.Nil(t, PastDeadline(req, now), "still ahead")
	req.Deadline = now
	out := PastDeadline(req, now)
	require.NotNil(t, out, "at the deadline")
	require.Equal(t, CodeDeadline, out.Result.ErrorCode)
	require.Equal(t, string(StepDecode), out.Result.FailedStep)
	require.Contains(t, out.Result.Message, "2026-12-04T17:00:00Z passed 0s before")

	// A giveup that comes first refuses the request as well: from it on, its sender reports it
	// failed.
	req.Deadline, req.GiveUp = now.Add(time.Hour), now.Add(-time.Second)
	out = PastDeadline(req, now)
	require.NotNil(t, out, "past the giveup")
	require.Equal(t, CodeDeadline, out.Result.ErrorCode)
	require.Contains(t, out.Result.Message, "2026-12-04T16:59:59Z passed 1s before")
	req.Deadline, req.GiveUp = time.Time{}, now.Add(time.Second)
	require.Nil(t, PastDeadline(req, now), "giveup ahead, no deadline")
}

// A destructive stage that ends at or past the request's giveup fails it with 408 whatever it
// did, and the cleanup rolls back what it wrote: a write acknowledged after the giveup (the
// config records above all: once they are in, the connector exists) may have landed after the
// request's sender reported it failed.
func TestCreateWritesPastGiveUpRolledBack(t *testing.T) {
	tests := []struct {
		name string
		// topic picks the write (its first to the topic) during which the giveup passes.
		topic   string
		step    Step
		stages  string
		configs []string
		summary string
	}{
		{
			name: "config records acknowledged after the giveup", topic: testConfigTopic, step: StepWriteConfig,
			stages:  "validate_config:ok validate_offsets:ok wipe_offsets:ok write_offsets:ok write_config:failed",
			configs: []string{targetKey, connKey, connKey + "=", targetKey + "="}, // the rollback puts the connector record back first
			summary: "tombstoned connector-file-src-1 and target-state-file-src-1; removed 1 initial offsets; restored 1 previous offsets",
		},
		{
			name: "wipe acknowledged after the giveup", topic: testOffsetsTopic, step: StepWipeOffsets,
			stages:  "validate_config:ok validate_offsets:ok wipe_offsets:failed write_offsets:skipped write_config:skipped",
			summary: "restored 1 previous offsets",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := withStaleOffsets(t)
			before := store.liveOffsets()
			req := fileSourceRequest()
			req.Deadline, req.GiveUp = time.Now().Add(time.Hour), time.Now().Add(time.Hour)
			var once sync.Once
			store.fail = func(op, topic string, _ []offsetstore.Record) error {
				if op == "write" && topic == tt.topic {
					// The write goes through, but is acknowledged past the giveup.
					once.Do(func() { req.GiveUp = time.Now().Add(-time.Millisecond) })
				}
				return nil
			}
			out := newTestCreator(t, store, &fakeIntents{intents: map[string]*Intent{}}).Create(context.Background(), req)
			require.NotNil(t, out.Failure)
			require.Equal(t, tt.step, out.Failure.Step)
			require.Equal(t, CodeDeadline, out.Failure.Code)
			require.Contains(t, out.Failure.Message, "ran past its giveup")
			require.Contains(t, out.Failure.Message, "rolled back")
			require.Equal(t, tt.stages, stageOutcomes(out.Result))
			require.Equal(t, tt.summary, out.Result.Cleanup.Summary)
			require.Empty(t, out.Result.Cleanup.Left)
			require.Equal(t, before, store.liveOffsets())
			require.Equal(t, tt.configs, store.configKeys())
		})
	}
}

// No write begins once the giveup has passed: a request whose giveup passes during validation
// is refused at its first write with nothing written, like one past its deadline.
func TestCreatePastGiveUpBeforeFirstWrite(t *testing.T) {
	store := withStaleOffsets(t)
	before := store.liveOffsets()
	req := fileSourceRequest()
	req.GiveUp = time.Now().Add(-time.Millisecond)
	out := newTestCreator(t, store, &fakeIntents{intents: map[string]*Intent{}}).Create(context.Background(), req)
	require.NotNil(t, out.Failure)
	require.Equal(t, StepWipeOffsets, out.Failure.Step)
	require.Equal(t, CodeDeadline, out.Failure.Code)
	require.Contains(t, out.Failure.Message, "nothing was written")
	require.Equal(t, events.NothingUndone, out.Result.Cleanup.Summary)
	require.Equal(t, before, store.liveOffsets())
	require.Empty(t, store.configKeys())
}

// A request's writes end before its giveup by the reserve kept for its result: the
// configured one, or half its sender's grace (the giveup less the deadline) when shorter.
func TestWritesEnd(t *testing.T) {
	giveUp := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	tests := []struct {
		name             string
		deadline, giveUp time.Time
		reserve          time.Duration
		want             time.Time
	}{
		{name: "no giveup", deadline: giveUp},
		{name: "default reserve", deadline: giveUp.Add(-time.Minute), giveUp: giveUp, want: giveUp.Add(-DefaultResultReserve)},
		{name: "configured reserve", deadline: giveUp.Add(-time.Minute), giveUp: giveUp, reserve: 20 * time.Second, want: giveUp.Add(-20 * time.Second)},
		{name: "half a short grace", deadline: giveUp.Add(-2 * time.Second), giveUp: giveUp, want: giveUp.Add(-time.Second)},
		{name: "giveup without deadline", giveUp: giveUp, want: giveUp.Add(-DefaultResultReserve)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCreator(Options{Store: newFakeStore(), Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
				OffsetsTopic: testOffsetsTopic, ResultReserve: tt.reserve})
			require.NoError(t, err)
			req := fileSourceRequest()
			req.Deadline, req.GiveUp = tt.deadline, tt.giveUp
			require.Equal(t, tt.want, c.writesEnd(req))
		})
	}
}
