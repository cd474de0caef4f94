package cutover

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// The migration reads, in A's offsets topic, every commit A made for a moved Debezium source's
// partitions (under A's name and partitions, though B's are renamed): the furthest one past
// the offset read is kept in the cutover report, which tells an offset set back on A (a
// mismatch when B produces again what A had committed) from A's uncommitted output after a
// crash (a replay). A read through its REST API only has no history, and says so.
func TestReadHistoryOnA(t *testing.T) {
	tests := []struct {
		name     string
		commits  []string // A's commits of the partition, in order; the last is the offset read
		furthest string   // "": none past the offset read
	}{
		{name: "committed forward only", commits: []string{`{"file":"bin.000003","pos":400}`, `{"file":"bin.000003","pos":1000,"event":2,"row":1}`}},
		{name: "set back after a later commit", furthest: `{"file":"bin.000004","pos":120}`,
			commits: []string{`{"file":"bin.000003","pos":1000,"event":2,"row":1}`, `{"file":"bin.000004","pos":120}`, `{"file":"bin.000003","pos":400}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			brokers := startKfake(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
			require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "connect-offsets", 5, nil))
			partA := jsonvalue.Map{{Key: "server", Value: "shop"}}
			key := offsetstore.AppendKey(nil, "mysql", offsetstore.JavaHashMapOrder(partA))
			w := &kafka.Writer{Addr: kafka.TCP(brokers...), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
			defer w.Close()
			for _, v := range append([]string{`{"file":"bin.000009","pos":4}`}, tt.commits...) {
				k := key
				if v == `{"file":"bin.000009","pos":4}` {
					k = offsetstore.AppendKey(nil, "other", offsetstore.JavaHashMapOrder(partA)) // another connector's, further
				}
				require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets", Key: k, Value: []byte(v),
					Partition: offsetstore.PartitionFor(k, 5)}))
			}
			onA, err := jsonvalue.NewStringScanner(tt.commits[len(tt.commits)-1]).Object()
			require.NoError(t, err)
			offs := []events.ConnectorOffset{{Partition: partA, Offset: onA}}
			conn := &fleet.Connector{Name: "mysql", Type: connectors.Source, Offsets: offs}
			rk := &fleet.Rekey{Key: "server", From: "shop", To: "shop2"}
			rep := &apply.Report{MigrationID: "m-1", Connectors: []*apply.Entry{{Name: "mysql", TargetName: "mysql-b", Type: "source", Outcome: apply.OutcomeSucceeded, Connector: conn,
				Planned: &plan.Connector{Connector: conn, Rekey: rk},
				Body: &apply.Body{Config: events.Config{{Key: "connector.class", Value: "io.debezium.connector.mysql.MySqlConnector"}},
					InitialOffsets: rk.Apply(offs), HasOffsets: true}}}}
			c := New(rep, "connect-offsets", nil)
			require.Equal(t, `{"server":"shop2"}`, jsonvalue.SortedText(c.Connectors[0].Partitions[0].Partition))

			c.ReadHistoryOnA(ctx, &source.TopicsSource{Brokers: brokers, OffsetsTopic: "connect-offsets"}, rep, connectors.Builtin())
			cc := c.Connectors[0]
			require.Equal(t, "read", cc.HistoryOnA.String())
			if tt.furthest == "" {
				require.Nil(t, cc.Partitions[0].FurthestOnA)
			} else {
				require.Equal(t, tt.furthest, jsonvalue.SortedText(cc.Partitions[0].FurthestOnA))
			}

			c.ReadHistoryOnA(ctx, nil, rep, connectors.Builtin())
			require.Contains(t, c.Connectors[0].HistoryOnA.String(), "not read: A was read through its REST API only")
		})
	}
}
