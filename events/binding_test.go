package events

import (
	"context"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

func testEvent(t *testing.T, extensions map[string]any) *event.Event {
	t.Helper()
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID("id-1")
	ev.SetSource("/src")
	ev.SetType("com.example.test")
	ev.SetTime(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	require.NoError(t, ev.SetData(event.ApplicationJSON, map[string]int{"a": 1}))
	for k, v := range extensions {
		ev.SetExtension(k, v)
	}
	return &ev
}

func TestWriteMessageHeaders(t *testing.T) {
	tests := []struct {
		name    string
		ctx     context.Context
		ext     map[string]any
		key     []byte // key already on the record
		wantKey string
		headers []string
		value   string
	}{
		{
			name:    "binary is the default",
			ctx:     context.Background(),
			ext:     map[string]any{"zeta": "z", "alpha": 1, "partitionkey": "pk"},
			wantKey: "pk",
			headers: []string{
				"ce_specversion", "1.0", "ce_id", "id-1", "ce_source", "/src", "ce_type", "com.example.test",
				"content-type", "application/json", "ce_time", "2025-03-04T05:06:07Z",
				"ce_alpha", "1", "ce_partitionkey", "pk", "ce_zeta", "z",
			},
			value: `{"a":1}`,
		},
		{
			name:    "structured",
			ctx:     binding.WithForceStructured(context.Background()),
			ext:     map[string]any{"partitionkey": "pk"},
			wantKey: "pk",
			headers: []string{"content-type", "application/cloudevents+json"},
			value:   `{"specversion":"1.0","id":"id-1","source":"/src","type":"com.example.test","datacontenttype":"application/json","time":"2025-03-04T05:06:07Z","data":{"a":1},"partitionkey":"pk"}`,
		},
		{
			name:    "no partitionkey keeps the record key",
			ctx:     context.Background(),
			key:     []byte("existing"),
			wantKey: "existing",
			headers: []string{
				"ce_specversion", "1.0", "ce_id", "id-1", "ce_source", "/src", "ce_type", "com.example.test",
				"content-type", "application/json", "ce_time", "2025-03-04T05:06:07Z",
			},
			value: `{"a":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := kafka.Message{Topic: "t", Key: tt.key, Headers: []kafka.Header{{Key: "stale", Value: []byte("x")}}}
			require.NoError(t, WriteMessage(tt.ctx, binding.ToMessage(testEvent(t, tt.ext)), &out))
			require.Equal(t, "t", out.Topic)
			require.Equal(t, tt.wantKey, string(out.Key))
			var got []string
			for _, h := range out.Headers {
				got = append(got, h.Key, string(h.Value))
			}
			require.Equal(t, tt.headers, got)
			require.Equal(t, tt.value, string(out.Value))
		})
	}
}

func TestMessageRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		ctx      context.Context
		encoding binding.Encoding
	}{
		{name: "binary", ctx: context.Background(), encoding: binding.EncodingBinary},
		{name: "structured", ctx: binding.WithForceStructured(context.Background()), encoding: binding.EncodingStructured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := testEvent(t, map[string]any{"partitionkey": "pk", "flag": true})
			var out kafka.Message
			require.NoError(t, WriteMessage(tt.ctx, binding.ToMessage(want), &out))

			m := NewMessage(&out)
			require.Equal(t, tt.encoding, m.ReadEncoding())
			got, err := binding.ToEvent(context.Background(), m)
			require.NoError(t, err)
			require.Equal(t, want.ID(), got.ID())
			require.Equal(t, want.Source(), got.Source())
			require.Equal(t, want.Type(), got.Type())
			require.Equal(t, want.Time(), got.Time())
			require.Equal(t, want.DataContentType(), got.DataContentType())
			require.JSONEq(t, string(want.Data()), string(got.Data()))
			require.Equal(t, "pk", got.Extensions()["partitionkey"])

			// Re-writing a record-backed message (the direct binary path) gives the same record.
			var again kafka.Message
			require.NoError(t, WriteMessage(tt.ctx, m, &again))
			require.Equal(t, out.Key, again.Key)
			if tt.encoding == binding.EncodingBinary {
				require.Equal(t, out.Headers, again.Headers)
				require.Equal(t, out.Value, again.Value)
			}
		})
	}
}

func TestMessageMetadata(t *testing.T) {
	m := NewMessage(record(`{}`, "CE_SPECVERSION", "1.0", "ce_id", "a", "ce_id", "b", "Content-Type", "application/json", "ce_dryrun", "true"))
	require.Equal(t, binding.EncodingBinary, m.ReadEncoding())
	_, id := m.GetAttribute(spec.ID)
	require.Equal(t, "b", id, "the last of repeated headers wins")
	require.Equal(t, "true", m.GetExtension("dryrun"))
	require.Equal(t, "application/json", m.ContentType)

	s := NewMessage(record(`{}`, "content-type", "application/cloudevents+json"))
	require.Equal(t, binding.EncodingStructured, s.ReadEncoding())
	attr, v := s.GetAttribute(spec.ID)
	require.Nil(t, attr)
	require.Nil(t, v)

	u := NewMessage(record(`{}`))
	require.Equal(t, binding.EncodingUnknown, u.ReadEncoding())
	require.ErrorIs(t, u.ReadBinary(context.Background(), nil), binding.ErrNotBinary)
	require.ErrorIs(t, u.ReadStructured(context.Background(), nil), binding.ErrNotStructured)
}
