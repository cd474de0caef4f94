package handlers

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// startKafkaStore starts a kfake broker with Connect's topics (25 offsets partitions) and a
// running, loaded offsetstore.Store on it.
func startKafkaStore(t testing.TB) (*kfake.Cluster, []string, *offsetstore.Store) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, &kafka.Client{Addr: kafka.TCP(brokers...)}, testConfigTopic, testOffsetsTopic, true))
	s, err := offsetstore.New(offsetstore.Options{Brokers: brokers, ConfigTopic: testConfigTopic, OffsetsTopic: testOffsetsTopic})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	require.NoError(t, s.WaitReady(ctx))
	return c, brokers, s
}

// bulkBody is the body of a request of family f named name with n initial offsets, and the
// text of its initial_offsets.
func bulkBody(f fastFamily, name string, n int) (body, raw []byte) {
	offsets := f.request(rand.New(rand.NewPCG(uint64(n), 6)), n, false)
	raw = slices.Clone(offsets[bytes.IndexByte(offsets, '[') : len(offsets)-1])
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"name":%q,"config":{"connector.class":%q`, name, f.class)
	for k, v := range f.config {
		fmt.Fprintf(&b, `,%q:%q`, k, v)
	}
	b.WriteString(`},"initial_offsets":`)
	b.Write(raw)
	b.WriteString(`}`)
	return b.Bytes(), raw
}

// bulkRequest is bulkBody's request, decoded as the agent decodes a fetched record: its
// offsets left as text (RawOffsets). raw is that text.
func bulkRequest(t *testing.T, f fastFamily, name string, n int) (req *events.Request, raw []byte) {
	t.Helper()
	body, raw := bulkBody(f, name, n)
	msg, err := events.RequestMessage("requests", body, events.RequestOptions{ID: "bulk-" + name, Source: "/test"})
	require.NoError(t, err)
	req, err = events.DecodeRequest(&msg, 0)
	require.NoError(t, err)
	require.NotNil(t, req.Data.RawOffsets, "the request's offsets are left as text")
	return req, raw
}

// topicRecords returns every record of the offsets topic, per partition, in offset order.
func topicRecords(t *testing.T, brokers []string) [][]offsetstore.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: brokers})
	out := make([][]offsetstore.Record, 25)
	for p := range out {
		for offset := int64(0); ; {
			f, err := kafkaio.FetchPartition(ctx, cl, testOffsetsTopic, p, offset, 16<<20, 10*time.Millisecond)
			require.NoError(t, err)
			for _, m := range f.Messages {
				out[p] = append(out[p], offsetstore.Record{Key: m.Key, Value: m.Value, Partition: m.Partition})
			}
			if f.Next >= f.HighWatermark {
				break
			}
			offset = f.Next
		}
	}
	return out
}

// A bulk request written straight from its record batches leaves in the offsets topic exactly
// the records the general path makes of it: the same keys and values, each in the partition
// Connect's producer would choose, in request order within each partition.
func TestBulkWriteMatchesGeneralPathRecords(t *testing.T) {
	for _, f := range fastFamilies() {
		switch f.name {
		case "mm2 source", "filestream", "debezium sqlserver":
		default:
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			_, brokers, store := startKafkaStore(t)
			c, err := NewCreator(Options{Store: store, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
				OffsetsTopic: testOffsetsTopic, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2}})
			require.NoError(t, err)
			const n = 6000
			req, raw := bulkRequest(t, f, "bulk", n)
			class, _ := connectors.Builtin().Lookup(f.class)
			props := familyProps(f)
			props["name"] = "bulk"
			_, ok := rawSourceBatches("bulk", class, props, raw, rawRanges(rawParallelBytes, 2), 25)
			require.True(t, ok, "the request takes the single pass into batches")
			entries, err := events.ParseOffsets(raw)
			require.NoError(t, err)
			want, err := generalSourceRecords("bulk", class, props, entries)
			require.NoError(t, err)

			out := c.Create(context.Background(), req)
			require.Equal(t, events.TypeCreateSucceeded, out.EventType, out.Result.Message)
			require.Equal(t, n, out.OffsetsWritten)

			wantBy := make([][]offsetstore.Record, 25)
			for _, r := range want {
				p := offsetstore.PartitionFor(r.Key, 25)
				wantBy[p] = append(wantBy[p], offsetstore.Record{Key: r.Key, Value: r.Value, Partition: p})
			}
			got := topicRecords(t, brokers)
			for p := range wantBy {
				requireSameRecords(t, wantBy[p], got[p])
			}
			// The store's view took the records in from the batches.
			require.Len(t, store.SourceOffsets(testOffsetsTopic, "bulk"), n)
		})
	}
}

// A bulk request that fails after its records went out leaves the connector with no offsets:
// when one partition refuses the write, the cleanup removes what the other partitions
// acknowledged (the write's error names the refused records); when write_config fails after
// the write, it removes every record, found in the store's view (the batches are gone).
func TestBulkWriteFailureCleansUp(t *testing.T) {
	const n, refused = 6000, 11
	tests := []struct {
		name  string
		fault kfake.Fault
		step  Step
	}{
		{name: "one offsets partition refused", step: StepWriteOffsets,
			fault: kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: testOffsetsTopic, Partitions: []int32{refused}, Err: kerr.InvalidRecord, Count: 1}},
		{name: "config topic refused after the write", step: StepWriteConfig,
			// Partition 0, the config topic's only one: validate_offsets' permission probe
			// names partition -1 and is not the write refused here.
			fault: kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: testConfigTopic, Partitions: []int32{0}, Err: kerr.InvalidRecord, Count: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fk, brokers, store := startKafkaStore(t)
			c, err := NewCreator(Options{Store: store, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
				OffsetsTopic: testOffsetsTopic, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2}})
			require.NoError(t, err)
			req, _ := bulkRequest(t, fastFamilies()[0], "bulk", n)
			h := fk.Fault(tt.fault)

			out := c.Create(context.Background(), req)
			require.Equal(t, events.TypeCreateFailed, out.EventType)
			require.Equal(t, string(tt.step), out.Result.FailedStep, out.Result.Message)
			require.Equal(t, 1, h.Hits())
			cu := out.Result.Cleanup
			require.NotNil(t, cu)
			require.Empty(t, cu.Error, cu.Summary)
			require.Equal(t, n, cu.OffsetsRemoved, cu.Summary)

			got := topicRecords(t, brokers)
			live := map[string]bool{}
			written := 0
			for p := range got {
				for _, r := range got[p] {
					if r.Value != nil {
						written++
						if tt.step == StepWriteOffsets {
							require.NotEqual(t, refused, p, "a record of the refused partition was written")
						}
					}
					live[string(r.Key)] = r.Value != nil
				}
			}
			require.Positive(t, written)
			for k, l := range live {
				require.False(t, l, "%s is live after the cleanup", k)
			}
			require.NoError(t, store.Sync(context.Background(), testOffsetsTopic))
			require.Empty(t, store.SourceOffsets(testOffsetsTopic, "bulk"))
		})
	}
}

// releaseWatch is a Store that tells, at the start of each encoded write, whether the request
// record's value has been collected.
type releaseWatch struct {
	*offsetstore.Store
	freed     *atomic.Bool
	freedSeen []bool
}

func (w *releaseWatch) WriteEncoded(ctx context.Context, topic string, enc *offsetstore.Encoded) error {
	for range 20 {
		if w.freed.Load() {
			break
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond) // cleanups run on a goroutine of their own
	}
	w.freedSeen = append(w.freedSeen, w.freed.Load())
	return w.Store.WriteEncoded(ctx, topic, enc)
}

// The request record's bytes (up to MaxRequestBytes) are let go once the single pass made
// the batches: nothing the intent, the write, the result or the cleanup needs keeps them
// alive.
func TestBulkRequestTextReleasedBeforeWrite(t *testing.T) {
	_, _, store := startKafkaStore(t)
	w := &releaseWatch{Store: store, freed: &atomic.Bool{}}
	intents := &fakeIntents{intents: map[string]*Intent{}} // the intent is written before the wipe
	c, err := NewCreator(Options{Store: w, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
		OffsetsTopic: testOffsetsTopic, Intents: intents, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2}})
	require.NoError(t, err)
	req := func() *events.Request {
		body, _ := bulkBody(fastFamilies()[0], "bulk", 6000)
		msg, err := events.RequestMessage("requests", body, events.RequestOptions{ID: "bulk", Source: "/test"})
		require.NoError(t, err)
		runtime.AddCleanup(&msg.Value[0], func(f *atomic.Bool) { f.Store(true) }, w.freed)
		req, err := events.DecodeRequest(&msg, 0)
		require.NoError(t, err)
		require.NotNil(t, req.Data.RawOffsets)
		return req // msg goes out of scope, as the agent drops the record once decoded
	}()
	out := c.Create(context.Background(), req)
	require.Equal(t, events.TypeCreateSucceeded, out.EventType, out.Result.Message)
	require.Equal(t, []bool{true}, w.freedSeen, "the request record was still reachable when the write began")
	require.Equal(t, 1, intents.puts)
}
