package handlers

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// countingStore is a real store whose reads of connector configs are counted.
type countingStore struct {
	*offsetstore.Store
	configReads atomic.Int64
}

func (s *countingStore) ConnectorConfig(name string) (map[string]string, bool) {
	s.configReads.Add(1)
	return s.Store.ConnectorConfig(name)
}

// seedFleet writes n connectors to the config topic, even ones sinks of their default group,
// odd ones FileStream sources, plus "owner", a sink of group connect-shared, and waits until
// the store's view holds them.
func seedFleet(t testing.TB, brokers []string, store *offsetstore.Store, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "orders", 2, nil))
	rec := func(name, props string) offsetstore.Record {
		return offsetstore.Record{Key: []byte("connector-" + name), Partition: 0,
			Value: fmt.Appendf(nil, `{"properties":{"name":%q,%s}}`, name, props)}
	}
	recs := []offsetstore.Record{rec("owner", `"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"orders","consumer.override.group.id":"connect-shared"`)}
	for i := range n {
		if i%2 == 0 {
			recs = append(recs, rec(fmt.Sprintf("sink-%05d", i), `"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"orders","tasks.max":"1"`))
		} else {
			recs = append(recs, rec(fmt.Sprintf("source-%05d", i), `"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"/data/in.txt","topic":"lines"`))
		}
	}
	require.NoError(t, store.Write(ctx, testConfigTopic, recs))
	require.NoError(t, store.Sync(ctx, testConfigTopic))
}

// sinkDryRun is a dry run of sink connector name with an initial offset, in group (its
// default group when empty).
func sinkDryRun(t testing.TB, name, group string) *events.Request {
	t.Helper()
	override := ""
	if group != "" {
		override = fmt.Sprintf(`,"consumer.override.group.id":%q`, group)
	}
	body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"orders"%s},
	  "initial_offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":1}}]}`, name, override)
	msg, err := events.RequestMessage("requests", []byte(body), events.RequestOptions{ID: "dry-" + name, Source: "/test", DryRun: true})
	require.NoError(t, err)
	req, err := events.DecodeRequest(&msg, 0)
	require.NoError(t, err)
	return req
}

// A sink request finds the connectors of its consumer group without reading every
// connector's config: with thousands of connectors on the cluster, that scan made each sink
// request's validate_config cost grow with the fleet already there. The request still gets
// its 409 when another sink owns the group.
func TestSinkRequestReadsOnlyItsGroupsConnectors(t *testing.T) {
	_, brokers, real := startKafkaStore(t)
	const fleet = 400
	seedFleet(t, brokers, real, fleet)
	store := &countingStore{Store: real}
	c, err := NewCreator(Options{Store: store, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
		OffsetsTopic: testOffsetsTopic, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2}})
	require.NoError(t, err)
	tests := []struct {
		name, connector, group string
		wantType, wantText     string
	}{
		{name: "a group of its own", connector: "new-sink", wantType: events.TypeCreatePlanned},
		{name: "another sink's group", connector: "intruder", group: "connect-shared", wantType: events.TypeCreateFailed,
			wantText: "Consumer group connect-shared belongs to connector owner"},
		{name: "a fleet sink's default group", connector: "intruder-2", group: "connect-sink-00002", wantType: events.TypeCreateFailed,
			wantText: "Consumer group connect-sink-00002 belongs to connector sink-00002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			store.configReads.Store(0)
			out := c.Create(ctx, sinkDryRun(t, tt.connector, tt.group))
			require.Equal(t, tt.wantType, out.EventType, out.Result.Message)
			if tt.wantText != "" {
				require.Equal(t, string(StepValidateConfig), out.Result.FailedStep)
				require.Equal(t, 409, out.Result.ErrorCode)
				require.Contains(t, out.Result.Message, tt.wantText)
			}
			// The request's own name and its group's owner at most, not the fleet.
			require.LessOrEqual(t, store.configReads.Load(), int64(4), "connector configs read for one sink request among %d connectors", fleet)
		})
	}
}

// BenchmarkSinkValidateFleet times a sink request's dry run (validate_config and
// validate_offsets, nothing written) on a config topic holding n connectors: its cost must
// not grow with n (compare n=1000 with n=2000).
func BenchmarkSinkValidateFleet(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		b.Run(fmt.Sprintf("connectors=%d", n), func(b *testing.B) {
			_, brokers, store := startKafkaStore(b)
			seedFleet(b, brokers, store, n)
			c, err := NewCreator(Options{Store: store, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
				OffsetsTopic: testOffsetsTopic, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2}})
			require.NoError(b, err)
			ctx := context.Background()
			reqs := make([]*events.Request, b.N)
			for i := range reqs {
				reqs[i] = sinkDryRun(b, fmt.Sprintf("bench-sink-%d", i), "")
			}
			b.ResetTimer()
			for i := range b.N {
				if out := c.Create(ctx, reqs[i]); out.EventType != events.TypeCreatePlanned {
					b.Fatalf("request %d: %s %s", i, out.EventType, out.Result.Message)
				}
			}
		})
	}
}
