package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
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
}
