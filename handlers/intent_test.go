package handlers

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// staleStore is a Store whose offsets view changes when the offsets topic is read to its end:
// someone wrote the connector's offsets just before the request arrived. Only what the
// intent logic needs is real; the integration tests run the Creator on a broker.
type staleStore struct {
	mu            sync.Mutex
	synced        bool
	before, after []offsetstore.SourceRecord
}

func (s *staleStore) Sync(_ context.Context, topic string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if topic == "offsets" {
		s.synced = true
	}
	return nil
}
func (s *staleStore) Track(context.Context, string) error                       { return nil }
func (s *staleStore) ConnectorConfig(string) (map[string]string, bool)          { return nil, false }
func (s *staleStore) ConfigRecord(string) offsetstore.ConfigRecord              { return offsetstore.ConfigRecord{} }
func (s *staleStore) Partitions(context.Context, string) (int, error)           { return 25, nil }
func (s *staleStore) GroupMembers(context.Context, string) (int, error)         { return 0, nil }
func (s *staleStore) DeleteGroup(context.Context, string) error                 { return nil }
func (s *staleStore) Write(context.Context, string, []offsetstore.Record) error { return nil }
func (s *staleStore) WriteEncoded(context.Context, string, *offsetstore.Encoded) error {
	return nil
}
func (s *staleStore) GroupOffsets(context.Context, string) ([]offsetstore.GroupOffset, error) {
	return nil, nil
}
func (s *staleStore) CommitGroupOffsets(context.Context, string, []offsetstore.GroupOffset) error {
	return nil
}
func (s *staleStore) SourceOffsets(topic, _ string) []offsetstore.SourceRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.synced {
		return s.after
	}
	return s.before
}

type recordingIntents struct {
	mu   sync.Mutex
	puts []*Intent
}

func (r *recordingIntents) Get(string) (*Intent, bool)           { return nil, false }
func (r *recordingIntents) Delete(context.Context, string) error { return nil }
func (r *recordingIntents) Put(_ context.Context, in *Intent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.puts = append(r.puts, in)
	return nil
}

// The intent written during the barriers is replaced when the snapshot taken after them
// differs, so a rollback always restores what the wipe removed; when it matches, it is the
// only intent write.
func TestOptimisticIntent(t *testing.T) {
	old := offsetstore.SourceRecord{Key: []byte(`["c",{"filename":"f"}]`), Value: []byte(`{"position":1}`), Partition: 3}
	tests := []struct {
		name          string
		before, after []offsetstore.SourceRecord
		puts          int
	}{
		{name: "view up to date", before: []offsetstore.SourceRecord{old}, after: []offsetstore.SourceRecord{old}, puts: 1},
		{name: "view behind", before: nil, after: []offsetstore.SourceRecord{old}, puts: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			intents := &recordingIntents{}
			c, err := NewCreator(Options{Store: &staleStore{before: tc.before, after: tc.after}, Registry: connectors.Builtin(),
				ConfigTopic: "configs", OffsetsTopic: "offsets", Intents: intents})
			require.NoError(t, err)
			req := &events.Request{ID: "r1", Source: "/t", Data: events.CreateRequest{
				Name:              "c",
				Config:            events.Config{{Key: "connector.class", Value: "FileStreamSource"}, {Key: "file", Value: "f"}},
				HasInitialOffsets: true,
				InitialOffsets: []events.OffsetEntry{{
					Partition: jsonvalue.Map{{Key: "filename", Value: "f"}},
					Offset:    jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}},
				}},
			}}
			out := c.Create(context.Background(), req)
			require.Equal(t, events.TypeCreateSucceeded, out.EventType, out.Result.Message)
			require.Len(t, intents.puts, tc.puts)
			last := intents.puts[len(intents.puts)-1]
			require.Len(t, last.Snapshot, 1, "the intent that stands holds the snapshot the wipe removed")
			require.Equal(t, old.Key, last.Snapshot[0].Key)
			require.Equal(t, 1, *out.Result.OffsetsWiped)
		})
	}
}
