package offsetstore

import (
	"log/slog"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/alloctest"
)

// The config view keeps, per connector key, the request mark of its latest record and the
// bytes of target-state records (and malformed connector records): what a rollback needs to
// tell a request's records from others' and to put back what it found.
func TestConfigRecordKeepsMarksAndTargetStates(t *testing.T) {
	v := newConfigView(slog.New(slog.DiscardHandler))
	mark := RequestMark("/src", "id-1")
	v.apply([]kafka.Message{
		{Key: []byte("target-state-a"), Value: []byte(`{"state":"PAUSED"}`)},
		{Key: []byte("connector-a"), Value: []byte(`{"properties":{"name":"a"}}`)},
		{Key: []byte("target-state-b"), Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`), Headers: mark},
		{Key: []byte("connector-b"), Value: []byte(`{"properties":{"name":"b"}}`), Headers: mark},
		{Key: []byte("connector-c"), Value: []byte(`not json`)},
		{Key: []byte("connector-d"), Value: []byte(`{"properties":{"name":"d"}}`), Headers: mark},
		{Key: []byte("connector-d")},
	})
	tests := []struct {
		key  string
		want ConfigRecord
	}{
		{"target-state-a", ConfigRecord{Live: true, Value: []byte(`{"state":"PAUSED"}`)}},
		{"connector-a", ConfigRecord{Live: true}},
		{"target-state-b", ConfigRecord{Live: true, Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`), Writer: Writer{RequestID: "id-1", RequestSource: "/src"}}},
		{"connector-b", ConfigRecord{Live: true, Writer: Writer{RequestID: "id-1", RequestSource: "/src"}}},
		{"connector-c", ConfigRecord{Live: true, Value: []byte(`not json`)}},
		{"connector-d", ConfigRecord{}},
		{"target-state-x", ConfigRecord{}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			require.Equal(t, tt.want, v.record(tt.key))
		})
	}
	require.True(t, v.record("connector-b").Writer.IsRequest("/src", "id-1"))
	require.False(t, v.record("connector-b").Writer.IsRequest("/src", "id-2"))
	require.False(t, v.record("connector-a").Writer.IsRequest("", ""), "an unmarked record is no request's")
}

// A marked record written through the store carries its mark to the broker: the writing
// store's view takes it from the written bytes, a store started afterwards from the topic.
func TestConfigMarkThroughTheBroker(t *testing.T) {
	s, brokers := startStore(t)
	ctx := testContext(t)
	mark := RequestMark("/src", "id-7")
	require.NoError(t, s.Write(ctx, testConfigTopic, []Record{
		{Key: []byte("target-state-m"), Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`), Headers: mark},
		{Key: []byte("connector-m"), Value: []byte(`{"properties":{"name":"m"}}`), Headers: mark},
	}))
	require.NoError(t, s.Sync(ctx, testConfigTopic))
	want := Writer{RequestID: "id-7", RequestSource: "/src"}
	require.Equal(t, want, s.ConfigRecord("connector-m").Writer, "own write")
	require.Equal(t, want, s.ConfigRecord("target-state-m").Writer, "own write")

	fresh := runStore(t, brokers)
	require.Equal(t, want, fresh.ConfigRecord("connector-m").Writer, "read from the topic")
	require.Equal(t, []byte(`{"state":"STARTED","state.v2":"STARTED"}`), fresh.ConfigRecord("target-state-m").Value)
}

// The config view applies the agent's own config records from their decoded forms (the
// messages' WriterData, which the log hands from Record.Decoded), without parsing their bytes;
// records without one are parsed.
func TestConfigViewTakesDecodedOwnRecords(t *testing.T) {
	v := newConfigView(slog.New(slog.DiscardHandler))
	v.apply([]kafka.Message{
		{Key: []byte("target-state-o"), Value: []byte(`{"state":"PAUSED","state.v2":"STOPPED"}`), WriterData: DecodedTargetState(TargetStopped)},
		{Key: []byte("connector-o"), Value: []byte(`{"properties":{"name":"o","topics":"t"}}`),
			WriterData: DecodedConnector{"name": "o", "topics": "t", "decoded": "from WriterData"}},
		{Key: []byte("connector-p"), Value: []byte(`{"properties":{"name":"p"}}`)},
	})
	props, ok := v.connectorConfig("o")
	require.True(t, ok)
	require.Equal(t, "from WriterData", props["decoded"], "the view took the decoded form; the bytes were not parsed")
	state, ok := v.targetState("o")
	require.True(t, ok)
	require.Equal(t, TargetStopped, state)
	require.Equal(t, ConfigRecord{Live: true, Value: []byte(`{"state":"PAUSED","state.v2":"STOPPED"}`)}, v.record("target-state-o"))
	props, ok = v.connectorConfig("p")
	require.True(t, ok)
	require.Equal(t, map[string]string{"name": "p"}, props)
}

// A request's two config records carry the same mark: the second's is read without copying
// its strings again, and a record of another request, or without a mark, reads as its own.
func TestWriterOfSharesTheLastMark(t *testing.T) {
	mark := func(id, source string) []kafka.Header {
		return []kafka.Header{{Key: HeaderRequestID, Value: []byte(id)}, {Key: HeaderRequestSource, Value: []byte(source)}}
	}
	var last Writer
	first, second := mark("req-1", "/src"), mark("req-1", "/src")
	require.Equal(t, Writer{RequestID: "req-1", RequestSource: "/src"}, writerOf(first, &last))
	require.Zero(t, alloctest.Least(100, func() { _ = writerOf(second, &last) }), "the second record of a request")
	require.Equal(t, Writer{RequestID: "req-2", RequestSource: "/src"}, writerOf(mark("req-2", "/src"), &last))
	require.Equal(t, Writer{}, writerOf(nil, &last))
	require.Equal(t, Writer{RequestID: "req-2", RequestSource: "/src"}, last, "a record without a mark leaves the last one")
}
