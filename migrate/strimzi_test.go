package migrate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
)

func sourceBody(state string) *apply.Body {
	return &apply.Body{Name: "pg-orders", InitialState: state, HasOffsets: true, Create: events.CreateOffsetsOnly,
		Config: events.Config{
			{Key: "connector.class", Value: "io.debezium.connector.postgresql.PostgresConnector"},
			{Key: "tasks.max", Value: "1"},
			{Key: "database.hostname", Value: "db"},
			{Key: "database.password", Value: "${secrets:kafka/pg:password}"},
			{Key: "snapshot.mode", Value: "never"},
			{Key: "include.schema.changes", Value: "true"},
			{Key: "database.port", Value: "5432"},
			{Key: "name", Value: "pg-orders"},
		},
		InitialOffsets: []events.ConnectorOffset{{
			Partition: jsonvalue.Map{{Key: "server", Value: "orders"}},
			Offset:    jsonvalue.Map{{Key: "lsn", Value: jsonvalue.Number("123")}},
		}},
	}
}

func sinkBody() *apply.Body {
	return &apply.Body{Name: "s3-sink", InitialState: fleet.StateStopped, HasOffsets: true, Create: events.CreateOffsetsOnly,
		Config: events.Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSinkConnector"},
			{Key: "tasks.max", Value: "4"},
			{Key: "topics", Value: "orders"},
			{Key: "connector.plugin.version", Value: "4.1.0"},
			{Key: "aws.secret.access.key", Value: "hunter2"},
			{Key: "store.url", Value: "https://app:s3cret@s3.example:443/bucket"},
			{Key: "proxy.url", Value: "https://app:${file:/etc/p:pw}@proxy:443"},
			{Key: "behavior.on.null.values", Value: "null"},
			{Key: "empty", Value: ""},
		},
	}
}

// Into an operator-managed B, names become KafkaConnector names while A is read (the body,
// its config's name and the sink's group follow), every body asks for the offsets only, and a
// connector without offsets gets no request. Two connectors becoming one name stop the run
// before anything is stopped on A.
func TestStrimziNamesAndBodies(t *testing.T) {
	src := func(name string) *fakeConnector {
		return &fakeConnector{typ: "source", state: fleet.StateRunning, stopAt: -1, offsets: []string{`{"partition":{"filename":"f"},"offset":{"position":3}}`},
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "f", "topic": "t", "name": name}}
	}
	fc := &fakeConnect{t: t, connectors: map[string]*fakeConnector{
		"Orders_Src": src("Orders_Src"),
		"fresh": {typ: "source", state: fleet.StatePaused, stopAt: -1,
			config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "g", "topic": "t", "name": "fresh"}},
	}}
	rep, err := export(context.Background(), Options{ConnectURL: fc.serve(t)}, true)
	require.NoError(t, err)
	apply.PrepareStrimzi(rep.Connectors)
	require.Len(t, rep.Connectors, 2)
	byName := map[string]*apply.Entry{}
	for _, e := range rep.Connectors {
		byName[e.Name] = e
	}
	e := byName["Orders_Src"]
	require.Equal(t, "orders-src", e.TargetName)
	require.Equal(t, `named orders-src on B: "Orders_Src" is not a Kubernetes resource name, and the operator names a connector after its KafkaConnector`, fleet.Join(e.Warnings, "\n").String())
	body, err := e.Body.MarshalJSON()
	require.NoError(t, err)
	req, err := events.ParseCreateRequest(body)
	require.NoError(t, err)
	require.Equal(t, "orders-src", req.Name)
	v, _ := req.Config.Get("name")
	require.Equal(t, "orders-src", v)
	require.Equal(t, events.CreateOffsetsOnly, req.Create)
	require.False(t, e.Local)
	require.True(t, byName["fresh"].Local, "no offsets: no request")
	require.Empty(t, byName["fresh"].Body.Create)

	fc.connectors["orders-src"] = src("orders-src")
	_, err = export(context.Background(), Options{ConnectURL: fc.serve(t), StopSource: true,
		States: &source.StateStore{Brokers: startKfake(t)}}, true)
	require.ErrorIs(t, err, fleet.ErrPrecheck)
	require.Contains(t, err.Error(), `both become KafkaConnector "orders-src": rename one (Rename)`)
	require.Empty(t, fc.stops, "nothing stopped on A")
}
