package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/alloctest"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// runIntentLog runs il's view until the test ends and waits for its initial load.
func runIntentLog(t *testing.T, il *intentLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- il.log.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.NoError(t, il.log.WaitReady(testContext(t)))
}

// The removal of a finished request's intent and claim runs off the lane, and is retried when
// it fails; but it never lands after a newer record of its key: the connector's next request,
// whose intent is written while the removal is still pending or failing, keeps its intent.
func TestLateIntentRemovalNeverWipesNewerIntent(t *testing.T) {
	tests := []struct {
		name string
		// next writes the next request's intent right after the first one finished.
		next bool
	}{
		{name: "newer intent written while the removal fails", next: true},
		{name: "failed removal retried", next: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _, c := testAgentCluster(t, &fakeProcessor{})
			il := a.intents
			runIntentLog(t, il)
			ctx := testContext(t)
			const name = "conn-a"
			holder, err := il.Claim(ctx, name, "/src", "first")
			require.NoError(t, err)
			require.Nil(t, holder)
			require.NoError(t, il.Put(ctx, &handlers.Intent{Name: name, RequestID: "first", RequestSource: "/src", Type: "source"}))

			// The first request's result is out; the Produce that carries its removal fails.
			a.results.add("/src", "first")
			failed := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: a.cfg.IntentTopic, Err: kerr.NotEnoughReplicas})
			il.finish(ctx, name, "/src", "first")
			if tc.next {
				// The next request for the connector, on this replica: its claim and intent.
				// A write that fails with the removal's Produce is tried again, as the
				// Creator's retry does.
				holder, err := retryWrite(ctx, func() (*handlers.ClaimHolder, error) { return il.Claim(ctx, name, "/src", "second") })
				require.NoError(t, err)
				require.Nil(t, holder, "the first request's claim is finished")
				_, err = retryWrite(ctx, func() (*handlers.ClaimHolder, error) {
					return nil, il.Put(ctx, &handlers.Intent{Name: name, RequestID: "second", RequestSource: "/src", Type: "source"})
				})
				require.NoError(t, err)
			}
			il.wait()
			require.Equal(t, 1, failed.Hits(), "the removal's first Produce failed")

			// A replica that reads the topic from the start sees what the log holds.
			fresh, err := newIntentLog(offsetstore.Options{Brokers: a.cfg.Brokers}, a.cfg.IntentTopic, nil, nil)
			require.NoError(t, err)
			runIntentLog(t, fresh)
			in, ok := fresh.Get(name)
			claims := fresh.claims[name]
			if tc.next {
				require.True(t, ok, "the next request's intent is in the log")
				require.Equal(t, "second", in.RequestID)
				require.Len(t, claims, 1)
				require.Equal(t, "second", claims[0].RequestID)
			} else {
				require.False(t, ok, "the finished request's intent is removed")
				require.Empty(t, claims)
			}
		})
	}
}

// retryWrite calls op until it returns without an error, at most a few times.
func retryWrite(ctx context.Context, op func() (*handlers.ClaimHolder, error)) (*handlers.ClaimHolder, error) {
	var err error
	for range 5 {
		var h *handlers.ClaimHolder
		if h, err = op(); err == nil || ctx.Err() != nil {
			return h, err
		}
	}
	return nil, err
}

// The intent view applies this replica's own intent and claim records from what they were
// encoded from (the messages' WriterData), without parsing them; others' are parsed.
func TestIntentViewTakesOwnRecordsDecoded(t *testing.T) {
	il := &intentLog{intents: map[string]*handlers.Intent{}, claims: map[string][]claimEntry{}, claimNames: map[string]string{}}
	own := &handlers.Intent{Name: "a", RequestID: "decoded", RequestSource: "/src"}
	claim := &claimRecord{Claim: "a", RequestID: "decoded", RequestSource: "/src"}
	il.apply([]kafka.Message{
		{Key: []byte("a"), Value: []byte(`{"name":"a","request_id":"bytes","request_source":"/src"}`), WriterData: own},
		{Key: []byte(claimKey("a", "/src", "decoded")), Value: []byte(`{"claim":"a","request_id":"bytes","request_source":"/src"}`), WriterData: claim, Offset: 3},
		{Key: []byte("b"), Value: []byte(`{"name":"b","request_id":"parsed","request_source":"/src"}`)},
	})
	in, ok := il.Get("a")
	require.True(t, ok)
	require.Same(t, own, in, "the own intent, not parsed")
	require.Equal(t, []claimEntry{{key: claimKey("a", "/src", "decoded"), offset: 3, claimRecord: *claim}}, il.claims["a"])
	in, ok = il.Get("b")
	require.True(t, ok)
	require.Equal(t, "parsed", in.RequestID)
}

// An upgrade must not lose an in-flight request: the intent and claim records an agent of the
// previous release left in the intent topic (its bytes, as another process wrote them, with no
// decoded form beside them) are read by this release's view as what they say. The records are
// the previous release's encodings: an intent of the current version with its Connect cluster
// and snapshot, a version-0 intent (written before intents named their cluster and config
// records carried marks), and a claim.
func TestIntentLogReadsThePreviousReleasesRecords(t *testing.T) {
	a, _, _ := testAgentCluster(t, &fakeProcessor{})
	ctx := testContext(t)
	v2 := `{"v":2,"name":"file-src-1","request_id":"id-1","request_source":"/test","type":"source",` +
		`"config_topic":"connect-configs","offsets_topic":"connect-offsets","topics":["connect-offsets"],` +
		`"snapshot":[{"topic":"connect-offsets","partition":3,"key":"WyJmaWxlLXNyYy0xIix7ImZpbGVuYW1lIjoiZiJ9XQ==","value":"eyJwb3NpdGlvbiI6MX0="}]}`
	v0 := `{"name":"file-src-0","request_id":"id-0","request_source":"/test","type":"source","existed":true}`
	claim := `{"claim":"file-src-1","request_id":"id-1","request_source":"/test"}`
	cl := &kafka.Client{Addr: kafka.TCP(a.cfg.Brokers...)}
	res, err := cl.Produce(ctx, &kafka.ProduceRequest{Topic: a.cfg.IntentTopic, Partition: 0, RequiredAcks: kafka.RequireAll,
		Records: kafka.NewRecordReader(
			kafka.Record{Key: kafka.NewBytes([]byte(claimKey("file-src-1", "/test", "id-1"))), Value: kafka.NewBytes([]byte(claim))},
			kafka.Record{Key: kafka.NewBytes([]byte("file-src-1")), Value: kafka.NewBytes([]byte(v2))},
			kafka.Record{Key: kafka.NewBytes([]byte("file-src-0")), Value: kafka.NewBytes([]byte(v0))},
		)})
	require.NoError(t, err)
	require.NoError(t, res.Error)

	il, err := newIntentLog(offsetstore.Options{Brokers: a.cfg.Brokers}, a.cfg.IntentTopic, nil, nil)
	require.NoError(t, err)
	runIntentLog(t, il)
	in, ok := il.Get("file-src-1")
	require.True(t, ok, "the previous release's intent is read")
	require.Equal(t, &handlers.Intent{Version: 2, Name: "file-src-1", RequestID: "id-1", RequestSource: "/test", Type: "source",
		ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets", Topics: []string{"connect-offsets"},
		Snapshot: []handlers.SnapshotRecord{{Topic: "connect-offsets", Partition: 3,
			Key: []byte(`["file-src-1",{"filename":"f"}]`), Value: []byte(`{"position":1}`)}}}, in)
	in, ok = il.Get("file-src-0")
	require.True(t, ok, "a version-0 intent is read")
	require.Equal(t, &handlers.Intent{Name: "file-src-0", RequestID: "id-0", RequestSource: "/test", Type: "source", Existed: true}, in)
	require.Equal(t, []claimEntry{{key: claimKey("file-src-1", "/test", "id-1"), offset: res.BaseOffset,
		claimRecord: claimRecord{Claim: "file-src-1", RequestID: "id-1", RequestSource: "/test"}}}, il.claims["file-src-1"])
}

// The intent partition of a connector is the one kafka.Hash picks for its name (the key of
// its intent), and finding it allocates nothing: a request asks for it for its claim, its
// intent and their removal. (kafkaio's TestHashPartitionMatchesKafkaHash holds the hash to
// kafka.Hash over many partition counts.)
func TestIntentPartitionIsKafkaHash(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(50, "intents"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	il, err := newIntentLog(offsetstore.Options{Brokers: c.ListenAddrs()}, "intents", nil, nil)
	require.NoError(t, err)
	runIntentLog(t, il)
	require.Equal(t, 50, il.log.Partitions())
	parts := make([]int, 50)
	for i := range parts {
		parts[i] = i
	}
	names := []string{"", "a", "mm2-source-17", "file-src-0", "ü", "日本", strings.Repeat("long-name-", 30), "\x00\xff"}
	for i := range 200 {
		names = append(names, fmt.Sprintf("connector-%d", i))
	}
	for _, name := range names {
		got, err := il.partitionOf(name)
		require.NoError(t, err)
		require.Equal(t, (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(name)}, parts...), got, "%q", name)
	}
	allocs := alloctest.Least(100, func() {
		if _, err := il.partitionOf("mm2-source-17"); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// A request's claim and its result, written while the producer is idle, are sent by the
// request's own goroutine and waited for until the broker answers: no sender goroutine is
// started and handed the write (a wake-up on the request's path each), and a result whose
// context ends while it is on the wire is still known written.
func TestClaimAndResultSentByRequestsGoroutine(t *testing.T) {
	a, _, c := testAgentCluster(t, &fakeProcessor{})
	runIntentLog(t, a.intents)
	ctx := testContext(t)
	_, err := a.intents.Claim(ctx, "warm-up", "/src", "0") // connections and metadata
	require.NoError(t, err)
	// during runs write while the broker holds its Produce, and returns the goroutines' stacks
	// taken then; cancel ends write's context while the Produce is held.
	during := func(cancel bool, write func(ctx context.Context) error) []string {
		inFlight, answer := make(chan struct{}), make(chan struct{})
		c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.DropControl() // this Produce only
			close(inFlight)
			<-answer
			return nil, nil, false
		})
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		done := make(chan error, 1)
		go func() { done <- write(wctx) }()
		<-inFlight
		buf := make([]byte, 1<<20)
		stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		if cancel {
			stop()
		}
		close(answer)
		require.NoError(t, <-done)
		return stacks
	}
	sentBy := func(stacks []string, caller string) {
		t.Helper()
		for _, g := range stacks {
			require.NotContains(t, g, "kafkaio.(*Producer).send(", "a sender goroutine was handed the write")
		}
		for _, g := range stacks {
			if strings.Contains(g, caller) {
				require.Contains(t, g, "kafkaio.(*Producer).sendInline(", "the writer did not send it:\n%s", g)
				return
			}
		}
		t.Fatalf("no goroutine in %s", caller)
	}

	sentBy(during(false, func(ctx context.Context) error {
		_, err := a.intents.Claim(ctx, "conn-1", "/src", "1")
		return err
	}), "agent.(*intentLog).Claim(")

	res := &events.Result{RequestID: "1", RequestSource: "/src", Name: "conn-1"}
	msg, err := events.ResultMessage(a.cfg.ResultTopic, events.TypeCreateSucceeded, res, "")
	require.NoError(t, err)
	sentBy(during(true, func(ctx context.Context) error { return a.produceResult(ctx, msg, res) }), "agent.(*Agent).produceResult(")
	require.True(t, a.results.seen("/src", "1"), "the result is known published")
}

// A claim record's bytes are json.Marshal's of the record, for names, sources and ids that
// encoding/json escapes (HTML characters, invalid UTF-8, U+2028), and its key is claimKey's.
func TestClaimRecordEncoding(t *testing.T) {
	for _, c := range []claimRecord{
		{Claim: "mm2-source-17", RequestID: "0b6c0a6e-6f4b-4d53-9d2a-2c2f6e1f0c11", RequestSource: "/migrate"},
		{Claim: `a<b>&"c"\d`, RequestID: "id\x00\x1f\n", RequestSource: "/src\u2028\u2029"},
		{Claim: "bad\xffutf8\xc3", RequestID: "é日本", RequestSource: ""},
	} {
		want, err := json.Marshal(&c)
		require.NoError(t, err)
		key := claimKey(c.Claim, c.RequestSource, c.RequestID)
		k, v := c.appendMessage(key)
		require.Equal(t, string(want), string(v))
		require.Equal(t, key, string(k))
		require.Equal(t, len(k), cap(k), "an append to the key must not write into the value")
	}
}

// An intent record's bytes are json.Marshal's of the intent, those encoded by hand (no config
// records, no snapshots) as those that keep json.Marshal, escapes and omitted fields included;
// its key is the connector's name.
func TestIntentEncoding(t *testing.T) {
	for _, in := range []*handlers.Intent{
		{Name: "mm2-source-17", RequestID: "id-1", RequestSource: "/migrate", Type: "source"},
		{Version: 2, Name: `a<b>&"c"`, RequestID: "id\x00\n", RequestSource: "/src\u2028", Type: "sink",
			ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets", Existed: true,
			Topics: []string{"connect-offsets", "bad\xff"}, Group: "connect-é"},
		{Version: 2, Name: "n", Topics: []string{}},
		{Version: 2, Name: "n", Type: "source", Existed: true,
			Config:   []handlers.ConfigSnapshot{{Key: "connector-n", Value: []byte(`{"k":"v"}`)}},
			Snapshot: []handlers.SnapshotRecord{{Topic: "o", Partition: 3, Key: []byte("k"), Value: []byte("v")}}},
	} {
		want, err := json.Marshal(in)
		require.NoError(t, err)
		k, v, err := intentMessage(in)
		require.NoError(t, err)
		require.Equal(t, string(want), string(v))
		require.Equal(t, in.Name, string(k))
	}
}

// intentMessage encodes most intents by hand: a field added to handlers.Intent would be left
// out of them, silently, unless intentMessage learns it (or sends intents that have it to
// json.Marshal). This lists the fields it knows, in the order json.Marshal writes them.
func TestIntentEncodingKnowsEveryField(t *testing.T) {
	known := []string{"Version", "Name", "RequestID", "RequestSource", "Type", "ConfigTopic", "OffsetsTopic",
		"Existed", "Config", "Topics", "Group", "Snapshot", "GroupSnapshot"}
	typ := reflect.TypeOf(handlers.Intent{})
	var fields []string
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
			fields = append(fields, f.Name)
		}
	}
	require.Equal(t, known, fields, "handlers.Intent's fields changed: update intentMessage and this list")
}
