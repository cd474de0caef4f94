package handlers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// An intent names the Connect cluster its request writes (its config and offsets topics).
// Agents of two Connect clusters that share an intent topic (the default one, in a consumer
// group that mixes them) must not roll back each other's interrupted requests: this agent's
// refusal of a redelivered request whose intent is another cluster's writes nothing to its own
// cluster, keeps the intent for that cluster's agents, and leaves the request unanswered (an
// answer would make the intent look stale to them, and the sweep would remove it).
func TestRefuseLeavesAnotherClustersIntent(t *testing.T) {
	store := withStaleOffsets(t)
	var in Intent
	require.NoError(t, json.Unmarshal([]byte(`{"v":2,"name":"file-src-1","request_id":"id-1","request_source":"/test","type":"source",
		"config_topic":"other-configs","offsets_topic":"other-offsets","topics":["other-offsets"],
		"snapshot":[{"topic":"other-offsets","partition":3,"key":"WyJmaWxlLXNyYy0xIix7ImZpbGVuYW1lIjoiZiJ9XQ==","value":"eyJwb3NpdGlvbiI6MX0="}]}`), &in))
	intents := &fakeIntents{intents: map[string]*Intent{"file-src-1": &in}}
	var written []string
	store.fail = func(op, topic string, _ []offsetstore.Record) error {
		written = append(written, op+" "+topic)
		return nil
	}
	c := newTestCreator(t, store, intents)
	req := fileSourceRequest()
	req.Deadline = time.Now().Add(-time.Minute)
	out := PastDeadline(req, time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	c.Refuse(ctx, out)
	require.Empty(t, written, "nothing written for another Connect cluster's intent")
	require.Equal(t, kafkaio.ReasonCanceled, out.Failure.Reason, "left unanswered: %s", out.Result.Message)
	_, kept := intents.Get("file-src-1")
	require.True(t, kept, "the intent stays for its own cluster's agents")
}
