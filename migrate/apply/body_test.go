package apply

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func TestBuildBody(t *testing.T) {
	src := &fleet.Connector{Name: "file-src", Type: connectors.Source, State: fleet.StatePaused,
		Config: events.Config{{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSourceConnector"},
			{Key: "file", Value: "test.txt"}, {Key: "name", Value: "file-src"}, {Key: "db.password", Value: "s3cret"}},
		Offsets: []events.ConnectorOffset{{
			Partition: jsonvalue.Map{{Key: "filename", Value: "test.txt"}},
			Offset:    jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("9007199254740993")}}}}}
	sink := &fleet.Connector{Name: "s3-sink", Type: connectors.Sink, State: fleet.StateRunning, Group: "connect-s3-sink",
		Config:  events.Config{{Key: "connector.class", Value: "io.confluent.connect.s3.S3SinkConnector"}, {Key: "topics", Value: "orders"}},
		Offsets: []events.ConnectorOffset{handlers.SinkOffset(offsetstore.GroupOffset{Topic: "orders", Partition: 2, Offset: 41})}}
	tests := []struct {
		name     string
		c        *fleet.Connector
		target   string
		state    string
		sinkMode fleet.SinkOffsetsMode
		want     string
	}{
		{name: "source keeps state, offsets verbatim and secrets verbatim", c: src, target: "file-src",
			want: `{"name":"file-src","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"test.txt","name":"file-src","db.password":"s3cret"},"initial_state":"PAUSED","initial_offsets":[{"partition":{"filename":"test.txt"},"offset":{"position":9007199254740993}}]}`},
		{name: "renamed source with an initial state override", c: src, target: "file-src-b", state: fleet.StateStopped,
			want: `{"name":"file-src-b","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"test.txt","name":"file-src-b","db.password":"s3cret"},"initial_state":"STOPPED","initial_offsets":[{"partition":{"filename":"test.txt"},"offset":{"position":9007199254740993}}]}`},
		{name: "sink offsets copied", c: sink, target: "s3-sink", sinkMode: fleet.SinkOffsetsCopy,
			want: `{"name":"s3-sink","config":{"connector.class":"io.confluent.connect.s3.S3SinkConnector","topics":"orders","name":"s3-sink"},"initial_state":"RUNNING","initial_offsets":[{"partition":{"kafka_partition":2,"kafka_topic":"orders"},"offset":{"kafka_offset":41}}]}`},
		{name: "sink offsets none", c: sink, target: "s3-sink", sinkMode: fleet.SinkOffsetsNone,
			want: `{"name":"s3-sink","config":{"connector.class":"io.confluent.connect.s3.S3SinkConnector","topics":"orders","name":"s3-sink"},"initial_state":"RUNNING"}`},
		{name: "source without offsets is created without initial_offsets", c: &fleet.Connector{Name: "x", Type: connectors.Source, State: fleet.StateRunning, Config: events.Config{}},
			target: "x", want: `{"name":"x","config":{"name":"x"},"initial_state":"RUNNING"}`},
		{name: "sink whose group has no partitions is created without initial_offsets", c: &fleet.Connector{Name: "s", Type: connectors.Sink, State: fleet.StateRunning, Config: events.Config{}},
			target: "s", want: `{"name":"s","config":{"name":"s"},"initial_state":"RUNNING"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := buildBody(tt.c, tt.target, source.Selection{}.EditConfig(tt.c.Config, tt.target), tt.state, tt.c.Offsets, tt.sinkMode)
			got, err := b.MarshalJSON()
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			// The agent's own parser reads it back as the same request.
			req, err := events.ParseCreateRequest(got)
			require.NoError(t, err)
			require.Equal(t, tt.target, req.Name)
			require.Equal(t, b.HasOffsets, req.HasInitialOffsets)
			require.Len(t, req.InitialOffsets, len(b.InitialOffsets))
		})
	}
}

func TestAttemptOf(t *testing.T) {
	tests := []struct {
		name, id string
		want     int
	}{
		{name: "first", id: requestID("m-1", "a/b", "", 1), want: 1},
		{name: "later", id: requestID("m-1", "a", events.CreateConnector, 12), want: 12},
		{name: "offsets only", id: requestID("m-1", "a", events.CreateOffsetsOnly, 3), want: 3},
		{name: "dry run", id: "m-1/a/dry-run-5", want: 0},
		{name: "leading zero is foreign", id: "m-1/a/01", want: 0},
		{name: "no slash", id: "x", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, attemptOf(tt.id))
		})
	}
}
