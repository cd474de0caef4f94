package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// kgoProducer is a franz-go producer to topic, writing to the partitions its records name;
// transactional when txnID is not empty (the product never writes in transactions: only the
// tests' other writers, as a Connect worker with exactly.once.source.support=enabled does).
func kgoProducer(t *testing.T, brokers []string, topic, txnID string) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// kgoRecord is msg as a franz-go record for partition p.
func kgoRecord(msg kafka.Message, p int) *kgo.Record {
	r := &kgo.Record{Key: msg.Key, Value: msg.Value, Partition: int32(p)}
	for _, h := range msg.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return r
}

func fileRequest(t *testing.T, cfg agent.Config, name string, pos int) (string, *kgo.Record) {
	t.Helper()
	id := "req-" + name
	body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":%q,"file":"%s.txt","topic":"t","tasks.max":"1"},"initial_offsets":[{"partition":{"filename":"%s.txt"},"offset":{"position":%d}}]}`,
		name, fileSource, name, name, pos)
	msg, err := events.RequestMessage(cfg.RequestTopic, []byte(body), events.RequestOptions{ID: id, Source: "/integration-test"})
	require.NoError(t, err)
	return id, kgoRecord(msg, 0)
}

// A request produced in a transaction that aborts is never processed; one in a transaction
// still open is processed once it commits, not before, and so are the requests written after
// it in its partition (they are past the last stable offset until then).
func TestRequestsInTransactions(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	txn := kgoProducer(t, cfg.Brokers, cfg.RequestTopic, "requests-txn")
	plain := kgoProducer(t, cfg.Brokers, cfg.RequestTopic, "")

	abortedID, aborted := fileRequest(t, cfg, "txn-aborted", 1)
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctx, aborted).FirstErr())
	require.NoError(t, txn.EndTransaction(ctx, kgo.TryAbort))
	beforeID, before := fileRequest(t, cfg, "plain-before", 2)
	require.NoError(t, plain.ProduceSync(ctx, before).FirstErr())
	// Its result shows that the agent has read past the aborted request.
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(beforeID, resultWait).Type)

	openID, open := fileRequest(t, cfg, "txn-open", 3)
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctx, open).FirstErr())
	afterID, after := fileRequest(t, cfg, "plain-after", 4)
	require.NoError(t, plain.ProduceSync(ctx, after).FirstErr())
	time.Sleep(2 * time.Second) // a window in which the agent would have processed them
	for _, r := range cl.allResults() {
		require.NotContains(t, []string{openID, afterID}, r.Data.RequestID, "processed before its transaction committed")
	}

	require.NoError(t, txn.EndTransaction(ctx, kgo.TryCommit))
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(openID, resultWait).Type)
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(afterID, resultWait).Type)
	var ids []string
	for _, r := range cl.allResults() {
		ids = append(ids, r.Data.RequestID)
	}
	// The two read once the transaction commits are for distinct connectors, which the agent
	// processes side by side: their results may come in either order.
	require.Len(t, ids, 3, "%v", ids)
	require.Equal(t, beforeID, ids[0])
	require.ElementsMatch(t, []string{openID, afterID}, ids[1:])
	require.NotContains(t, ids, abortedID)
	live := cl.live(cfg.ConfigTopic)
	require.NotContains(t, live, "connector-txn-aborted")
	require.Contains(t, live, "connector-txn-open")
}

// Offsets and config records written in a transaction that aborted (as an exactly-once source
// worker's are when its transaction fails) are not what the views, `offsetagent offsets`,
// export and migrate see: they carry the committed offsets and configs only, for the offsets
// topic and a connector-specific one alike.
func TestAbortedOffsetsAndConfigRecords(t *testing.T) {
	f := newFleet(t)
	agentA := startAgent(t, f.cfgA, agent.Options{})
	pub := newClient(t, f.cfgA)
	for _, b := range []string{
		fmt.Sprintf(`{"name":"eos-src","config":{"connector.class":%q,"file":"eos.txt","topic":"t","tasks.max":"1"},"initial_offsets":[{"partition":{"filename":"eos.txt"},"offset":{"position":7}}]}`, fileSource),
		fmt.Sprintf(`{"name":"eos-own","config":{"connector.class":%q,"file":"own.txt","topic":"t","tasks.max":"1","offsets.storage.topic":%q},"initial_offsets":[{"partition":{"filename":"own.txt"},"offset":{"position":77}}]}`, fileSource, f.own),
	} {
		id := pub.publish(b, events.RequestOptions{})
		r := pub.waitResult(id, resultWait)
		require.Equal(t, events.TypeCreateSucceeded, r.Type, r.Data.Message)
	}
	agentA.stop(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The aborted transaction writes over each committed record, in its partition, and adds a
	// connector and a target state that were never committed.
	partitionOf := func(topic, key string) int {
		rec, ok := f.clA.live(topic)[key]
		require.True(t, ok, "%s in %s", key, topic)
		return rec.Partition
	}
	eosKey, ownKey := `["eos-src",{"filename":"eos.txt"}]`, `["eos-own",{"filename":"own.txt"}]`
	abortWrite := func(topic, txnID string, recs ...*kgo.Record) {
		t.Helper()
		p := kgoProducer(t, f.cfgA.Brokers, topic, txnID)
		require.NoError(t, p.BeginTransaction())
		require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr())
		require.NoError(t, p.EndTransaction(ctx, kgo.TryAbort))
	}
	abortWrite(f.cfgA.OffsetsTopic, "eos-offsets", &kgo.Record{Key: []byte(eosKey), Value: []byte(`{"position":999}`),
		Partition: int32(partitionOf(f.cfgA.OffsetsTopic, eosKey))})
	abortWrite(f.own, "eos-own-offsets", &kgo.Record{Key: []byte(ownKey), Value: []byte(`{"position":999}`),
		Partition: int32(partitionOf(f.own, ownKey))})
	abortWrite(f.cfgA.ConfigTopic, "eos-configs",
		&kgo.Record{Key: []byte("connector-ghost"), Value: []byte(`{"properties":{"connector.class":"` + fileSource + `","file":"g.txt","topic":"t","name":"ghost"}}`)},
		&kgo.Record{Key: []byte("target-state-ghost"), Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`)},
		&kgo.Record{Key: []byte("target-state-eos-src"), Value: []byte(`{"state":"PAUSED","state.v2":"PAUSED"}`)})

	// The view, as `offsetagent offsets` reads it.
	store, err := offsetstore.New(offsetstore.Options{Brokers: f.cfgA.Brokers, ConfigTopic: f.cfgA.ConfigTopic,
		OffsetsTopic: f.cfgA.OffsetsTopic, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- store.Run(sctx) }()
	t.Cleanup(func() { stop(); <-done })
	require.NoError(t, store.WaitReady(ctx))
	for name, want := range map[string]string{"eos-src": `{"position":7}`, "eos-own": `{"position":77}`} {
		offs, err := handlers.Offsets(ctx, store, connectors.Builtin(), f.cfgA.OffsetsTopic, name)
		require.NoError(t, err)
		require.Len(t, offs.Offsets, 1, name)
		require.JSONEq(t, want, mustJSON(t, offs.Offsets[0].Offset), name)
	}
	_, ghost := store.ConnectorConfig("ghost")
	require.False(t, ghost, "a connector of an aborted transaction")

	// Export reads A the same way ("ghost" matches no connector of A: AllowEmpty goes on).
	sel, err := source.NewSelection(source.SelectionFlags{Include: []string{"eos-.*", "ghost"}})
	require.NoError(t, err)
	// Export and migrate have bounds of their own: the 2 minutes above, spent on a loaded
	// host by the writes and the view, cut the migration short (its requests "pending").
	ectx, ecancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer ecancel()
	rep, err := migrate.Export(ectx, migrate.Options{
		Topics:    &source.TopicsSource{Brokers: f.cfgA.Brokers, ConfigTopic: f.cfgA.ConfigTopic, OffsetsTopic: f.cfgA.OffsetsTopic},
		Selection: sel, Logger: slog.New(slog.DiscardHandler), AllowEmpty: true,
	})
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range rep.Connectors {
		require.NotNil(t, e.Body, "%s: %s", e.Name, e.Message)
		require.Len(t, e.Body.InitialOffsets, 1)
		got[e.Name] = e.Body.InitialState + " " + mustJSON(t, e.Body.InitialOffsets[0].Offset)
	}
	require.Equal(t, map[string]string{"eos-src": `RUNNING {"position":7}`, "eos-own": `RUNNING {"position":77}`}, got)

	// Migrate carries the committed offsets to B.
	startAgent(t, f.cfgB, agent.Options{})
	opts := f.options(t, source.SelectionFlags{Include: []string{"eos-.*", "ghost"}})
	opts.AllowEmpty = true
	mrep, _, err := migrate.Migrate(context.Background(), opts) // bounded by its Timeout and Grace
	require.NoError(t, err)
	require.True(t, mrep.OK(), "%v", outcomes(mrep))
	require.Len(t, mrep.Connectors, 2)
	require.Equal(t, `{"position":7}`, f.clB.live(f.cfgB.OffsetsTopic)[eosKey].Value)
	require.Equal(t, `{"position":77}`, f.clB.live(f.own)[ownKey].Value)
	require.True(t, strings.Contains(f.clB.live(f.cfgB.ConfigTopic)["target-state-eos-src"].Value, "STARTED"))
}
