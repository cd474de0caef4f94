package handlers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// interruptedAttempt is a store and intent log as an attempt of fileSourceRequest leaves them
// when it is stopped after write_config: its initial offset over the wiped stale one, its
// marked config records over a target state left behind, its intent.
func interruptedAttempt(t *testing.T) (*fakeStore, *fakeIntents) {
	t.Helper()
	store := withStaleOffsets(t)
	leftover := []byte(`{"state":"PAUSED"}`)
	require.NoError(t, store.Write(context.Background(), testConfigTopic, []offsetstore.Record{{Key: []byte(targetKey), Value: leftover}}))
	in := &Intent{Version: intentVersion, Name: "file-src-1", RequestID: "id-1", RequestSource: "/test", Type: "source",
		Config: []ConfigSnapshot{{Key: targetKey, Value: leftover}}, Topics: []string{testOffsetsTopic},
		Snapshot: []SnapshotRecord{{Topic: testOffsetsTopic, Partition: offsetstore.PartitionFor([]byte(staleKey), 25), Key: []byte(staleKey), Value: []byte(staleVal)}}}
	mark := offsetstore.RequestMark("/test", "id-1")
	require.NoError(t, store.Write(context.Background(), testOffsetsTopic, []offsetstore.Record{
		{Key: []byte(staleKey), Partition: -1}, {Key: []byte(seedKey), Value: []byte(`{"position":30}`), Partition: -1}}))
	require.NoError(t, store.Write(context.Background(), testConfigTopic, []offsetstore.Record{
		{Key: []byte(targetKey), Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`), Headers: mark},
		{Key: []byte(connKey), Value: []byte(`{"properties":{}}`), Headers: mark}}))
	return store, &fakeIntents{intents: map[string]*Intent{"file-src-1": in}}
}

// A request refused before its first stage whose earlier attempt was interrupted after
// write_config (the connector live and started) is rolled back before its result: the
// connector's records and offsets are as before the attempt, the intent is gone, and the 408
// says what was undone instead of "nothing was written". A refusal of a request whose intent
// the view does not hold changes nothing.
func TestRefuseRollsBackTheInterruptedAttempt(t *testing.T) {
	store, intents := interruptedAttempt(t)
	c := newTestCreator(t, store, intents)
	req := fileSourceRequest()
	req.Deadline = time.Now().Add(-time.Minute)

	other := PastDeadline(&events.Request{ID: "id-9", Source: "/test", Deadline: req.Deadline, Data: events.CreateRequest{Name: "file-src-1"}}, time.Now())
	c.Refuse(context.Background(), other)
	require.Equal(t, events.NothingUndone, other.Result.Cleanup.Summary, "another request's intent is not this refusal's")
	_, kept := intents.Get("file-src-1")
	require.True(t, kept)

	out := PastDeadline(req, time.Now())
	c.Refuse(context.Background(), out)
	require.Equal(t, CodeDeadline, out.Result.ErrorCode)
	require.Equal(t, kafkaio.ReasonPermanent, out.Failure.Reason)
	require.NotContains(t, out.Result.Message, "nothing was written")
	require.Contains(t, out.Result.Message, "an interrupted earlier attempt of this request was rolled back "+
		"(tombstoned connector-file-src-1; restored target-state-file-src-1; removed 1 offsets it wrote; restored 1 previous offsets)")
	require.Equal(t, out.Result.Message, out.Failure.Message)
	require.Equal(t, []string{connKey}, out.Result.Cleanup.ConfigRecordsRemoved)
	require.Equal(t, 1, out.Result.Cleanup.OffsetsRemoved)
	require.Equal(t, 1, out.Result.Cleanup.OffsetsRestored)
	require.Equal(t, map[string]string{staleKey: staleVal, otherKey: `{"position":1}`}, store.liveOffsets())
	require.False(t, store.ConfigRecord(connKey).Live)
	require.Equal(t, `{"state":"PAUSED"}`, string(store.ConfigRecord(targetKey).Value))
	_, left := intents.Get("file-src-1")
	require.False(t, left, "the intent is removed once the rollback is done")
}

// A rollback that cannot be done is tried again, not given up: the refusal is not answered
// (ReasonCanceled once ctx ends) and the intent stays for the request's redelivery.
func TestRefuseKeepsTheIntentWhileTheRollbackCannotBeDone(t *testing.T) {
	store, intents := interruptedAttempt(t)
	tries := 0
	store.fail = func(op, topic string, _ []offsetstore.Record) error {
		if op == "write" && topic == testConfigTopic {
			tries++
			return errors.New("boom")
		}
		return nil
	}
	c := newTestCreator(t, store, intents)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req := fileSourceRequest()
	req.Deadline = time.Now().Add(-time.Minute)
	out := PastDeadline(req, time.Now())
	c.Refuse(ctx, out)
	require.Equal(t, kafkaio.ReasonCanceled, out.Failure.Reason, "left unanswered")
	require.Greater(t, tries, 2, "tried again")
	_, kept := intents.Get("file-src-1")
	require.True(t, kept, "the intent stays while the rollback is owed")
	require.True(t, store.ConfigRecord(connKey).Live)
}

// A request that fails after validate_config rolled back an interrupted attempt of it says so:
// here its deadline passes before its first write.
func TestCreateFailureTellsTheRollback(t *testing.T) {
	store, intents := interruptedAttempt(t)
	req := fileSourceRequest()
	req.Deadline = time.Now().Add(time.Hour)
	c, err := NewCreator(Options{Store: store, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
		OffsetsTopic: testOffsetsTopic, Intents: intents, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2},
		Fault: func(point, _ string) {
			if point == "after:validate_offsets" {
				req.Deadline = time.Now().Add(-time.Second)
			}
		}})
	require.NoError(t, err)
	out := c.Create(context.Background(), req)
	require.NotNil(t, out.Failure)
	require.Equal(t, CodeDeadline, out.Failure.Code)
	require.NotContains(t, out.Result.Message, "nothing was written")
	require.Contains(t, out.Result.Message, "an interrupted earlier attempt of this request was rolled back (tombstoned connector-file-src-1;")
	require.Equal(t, []string{connKey}, out.Result.Cleanup.ConfigRecordsRemoved)
	require.Equal(t, map[string]string{staleKey: staleVal, otherKey: `{"position":1}`}, store.liveOffsets())
}
