package handlers

import (
	"context"
	"errors"
	"maps"
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

func (s *staleStore) SyncEnds(_ context.Context, topics ...string) ([]func(context.Context) error, error) {
	return syncEach(s, topics), nil
}

func (s *staleStore) Sync(_ context.Context, topic string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if topic == "offsets" {
		s.synced = true
	}
	return nil
}
func (s *staleStore) Track(context.Context, string) error     { return nil }
func (s *staleStore) ProbeRead(context.Context, string) error { return nil }
func (s *staleStore) ProbeWrites(_ context.Context, topics []string) []error {
	return make([]error, len(topics))
}
func (s *staleStore) QueueProbeWrites(ctx context.Context, topics []string) func(context.Context) []error {
	errs := s.ProbeWrites(ctx, topics)
	return func(context.Context) []error { return errs }
}
func (s *staleStore) HoldWrites() func()                                        { return func() {} }
func (s *staleStore) ProbeGroupCommit(context.Context, string, []string) error  { return nil }
func (s *staleStore) ProbeGroupDelete(context.Context, string, string) error    { return nil }
func (s *staleStore) ConnectorConfig(string) (map[string]string, bool)          { return nil, false }
func (s *staleStore) ConfigRecord(string) offsetstore.ConfigRecord              { return offsetstore.ConfigRecord{} }
func (s *staleStore) Partitions(context.Context, string) (int, error)           { return 25, nil }
func (s *staleStore) GroupMembers(context.Context, string) (int, error)         { return 0, nil }
func (s *staleStore) DeleteGroup(context.Context, string) error                 { return nil }
func (s *staleStore) Write(context.Context, string, []offsetstore.Record) error { return nil }
func (s *staleStore) WriteEncoded(context.Context, string, *offsetstore.Encoded) error {
	return nil
}
func (s *staleStore) DescribeGroup(context.Context, string) (offsetstore.GroupActivity, error) {
	return offsetstore.GroupActivity{}, nil
}
func (s *staleStore) GroupConnectors(string) []string {
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

func (r *recordingIntents) Get(string) (*Intent, bool)            { return nil, false }
func (r *recordingIntents) Delete(context.Context, string) error  { return nil }
func (r *recordingIntents) CatchUp(context.Context, string) error { return nil }
func (r *recordingIntents) Queue(ctx context.Context, in *Intent) func(context.Context) error {
	err := r.Put(ctx, in)
	return func(context.Context) error { return err }
}
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

// A rollback acts only on what the interrupted request wrote: the intent of a request that
// found its connector existing, or whose connector's live record is not its own, changes
// nothing; an interrupted creation's config records (marked with its id) go back to what the
// intent found (a target state left behind is restored, not tombstoned) and its offsets to the
// snapshot, writing only what differs.
func TestRecoverIntentTouchesOnlyWhatTheRequestWrote(t *testing.T) {
	mark := offsetstore.RequestMark("/test", "id-1")
	connect := `{"properties":{"connector.class":"FileStreamSource","name":"file-src-1"}}`
	leftover := `{"state":"PAUSED"}`
	intent := func(existed bool, config []ConfigSnapshot) *Intent {
		return &Intent{Version: intentVersion, Name: "file-src-1", RequestID: "id-1", RequestSource: "/test", Type: "source",
			Existed: existed, Config: config, Topics: []string{testOffsetsTopic},
			Snapshot: []SnapshotRecord{{Topic: testOffsetsTopic, Partition: offsetstore.PartitionFor([]byte(staleKey), 25), Key: []byte(staleKey), Value: []byte(staleVal)}}}
	}
	tests := []struct {
		name string
		// configs are the config topic's records before the rollback; offsets the live ones.
		configs []offsetstore.Record
		offsets map[string]string
		in      *Intent
		// wantConfigs are the config records the rollback writes; wantOffsets the live ones after.
		wantConfigs []string
		wantOffsets map[string]string
	}{
		{
			name:        "existing connector, its request rejected at the existence check",
			configs:     []offsetstore.Record{{Key: []byte(connKey), Value: []byte(connect)}},
			offsets:     map[string]string{seedKey: `{"position":99}`},
			in:          intent(true, []ConfigSnapshot{{Key: connKey}}),
			wantOffsets: map[string]string{seedKey: `{"position":99}`},
		},
		{
			name:        "connector created by another writer before the check saw it",
			configs:     []offsetstore.Record{{Key: []byte(connKey), Value: []byte(connect)}},
			offsets:     map[string]string{seedKey: `{"position":99}`},
			in:          intent(false, nil),
			wantOffsets: map[string]string{seedKey: `{"position":99}`},
		},
		{
			name:        "stopped before writing anything",
			configs:     []offsetstore.Record{{Key: []byte(targetKey), Value: []byte(leftover)}},
			offsets:     map[string]string{staleKey: staleVal},
			in:          intent(false, []ConfigSnapshot{{Key: targetKey, Value: []byte(leftover)}}),
			wantOffsets: map[string]string{staleKey: staleVal},
		},
		{
			name: "interrupted creation over a target state left behind",
			configs: []offsetstore.Record{
				{Key: []byte(targetKey), Value: []byte(leftover)},
				{Key: []byte(targetKey), Value: []byte(`{"state":"STARTED","state.v2":"STARTED"}`), Headers: mark},
				{Key: []byte(connKey), Value: []byte(connect), Headers: mark},
			},
			offsets:     map[string]string{seedKey: `{"position":30}`},
			in:          intent(false, []ConfigSnapshot{{Key: targetKey, Value: []byte(leftover)}}),
			wantConfigs: []string{connKey + "=", targetKey + "=" + leftover},
			wantOffsets: map[string]string{staleKey: staleVal},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore()
			store.configs = tt.configs
			store.offsets[testOffsetsTopic] = map[string]offsetstore.SourceRecord{}
			for k, v := range tt.offsets {
				store.offsets[testOffsetsTopic][k] = offsetstore.SourceRecord{Key: []byte(k), Value: []byte(v), Partition: offsetstore.PartitionFor([]byte(k), 25)}
			}
			var written []string
			store.fail = func(op, topic string, recs []offsetstore.Record) error {
				for _, r := range recs {
					if topic == testConfigTopic {
						written = append(written, string(r.Key)+"="+string(r.Value))
					}
				}
				return nil
			}
			intents := &fakeIntents{intents: map[string]*Intent{"file-src-1": tt.in}}
			c := newTestCreator(t, store, intents)
			_, err := c.recoverInterrupted(context.Background(), &job{req: &events.Request{}, name: "file-src-1"})
			require.NoError(t, err)
			require.Equal(t, tt.wantConfigs, written, "config records written by the rollback")
			require.Equal(t, tt.wantOffsets, store.liveOffsets())
			_, left := intents.Get("file-src-1")
			require.False(t, left, "the intent is removed")
		})
	}
}

// The config records a request writes carry its mark, and the cleanup of a request whose
// write_config failed puts back only the keys whose latest record carries it, as the rollback
// of an interrupted request does: a target state it found is written back instead of
// tombstoned, a key it did not write is not touched, and a connector another writer created
// meanwhile is left as it is.
func TestWriteConfigMarksAndRestores(t *testing.T) {
	leftover := `{"state":"PAUSED"}`
	foreign := `{"properties":{"connector.class":"FileStreamSource","name":"file-src-1"}}`
	tests := []struct {
		name string
		// landed are the records of the failed write that reach the topic before it fails
		// (0: the target state, 1: the connector) and what others wrote meanwhile.
		landed func(recs []offsetstore.Record) []offsetstore.Record
		// wantWritten are the config records the cleanup writes; wantRemoved its report.
		wantWritten []string
		wantRemoved []string
		wantSummary string
		wantLive    map[string]string
	}{
		{
			name:        "refused outright",
			landed:      func([]offsetstore.Record) []offsetstore.Record { return nil },
			wantSummary: "nothing to undo",
			wantLive:    map[string]string{targetKey: leftover},
		},
		{
			name:        "target state written, connector refused",
			landed:      func(recs []offsetstore.Record) []offsetstore.Record { return recs[:1] },
			wantWritten: []string{targetKey + "=" + leftover},
			wantSummary: "restored " + targetKey,
			wantLive:    map[string]string{targetKey: leftover},
		},
		{
			name:        "both written, acknowledgement lost",
			landed:      func(recs []offsetstore.Record) []offsetstore.Record { return recs },
			wantWritten: []string{connKey + "=", targetKey + "=" + leftover},
			wantRemoved: []string{connKey},
			wantSummary: "tombstoned " + connKey + "; restored " + targetKey,
			wantLive:    map[string]string{targetKey: leftover},
		},
		{
			name: "another writer created the connector meanwhile",
			landed: func(recs []offsetstore.Record) []offsetstore.Record {
				return []offsetstore.Record{recs[0], {Key: []byte(connKey), Value: []byte(foreign)}}
			},
			wantSummary: "left connector file-src-1 as it is: another writer's",
			wantLive:    map[string]string{targetKey: `{"state":"STARTED","state.v2":"STARTED"}`, connKey: foreign},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore()
			store.configs = []offsetstore.Record{{Key: []byte(targetKey), Value: []byte(leftover)}}
			failed := false
			var written []string
			store.fail = func(op, topic string, recs []offsetstore.Record) error {
				if topic != testConfigTopic {
					return nil
				}
				if !failed {
					failed = true
					store.configs = append(store.configs, tt.landed(recs)...)
					return errors.New("broker gone")
				}
				for _, r := range recs {
					written = append(written, string(r.Key)+"="+string(r.Value))
				}
				return nil
			}
			c := newTestCreator(t, store, &fakeIntents{intents: map[string]*Intent{}})
			req := fileSourceRequest()
			req.Data.InitialOffsets, req.Data.HasInitialOffsets = nil, false
			out := c.Create(context.Background(), req)
			require.NotNil(t, out.Failure)
			require.Equal(t, StepWriteConfig, out.Failure.Step)
			require.Equal(t, tt.wantWritten, written, "config records written by the cleanup")
			require.Equal(t, tt.wantRemoved, out.Result.Cleanup.ConfigRecordsRemoved)
			require.Equal(t, tt.wantSummary, out.Result.Cleanup.Summary)
			live := map[string]string{}
			for _, r := range store.configs {
				live[string(r.Key)] = string(r.Value)
			}
			maps.DeleteFunc(live, func(_, v string) bool { return v == "" })
			require.Equal(t, tt.wantLive, live, "live config records after the cleanup")
		})
	}
}

// A write that goes through carries the request's mark on both records.
func TestWriteConfigMarks(t *testing.T) {
	store := newFakeStore()
	c := newTestCreator(t, store, &fakeIntents{intents: map[string]*Intent{}})
	req := fileSourceRequest()
	req.ID = "id-2"
	require.Nil(t, c.Create(context.Background(), req).Failure)
	for _, r := range store.configs[len(store.configs)-2:] {
		require.Equal(t, offsetstore.RequestMark("/test", "id-2"), r.Headers, string(r.Key))
	}
}

// A group whose entries have the snapshot's offsets but another epoch or metadata (the
// request committed the snapshot's offsets as Connect's PATCH does: no epoch, no metadata) is
// not what the snapshot holds: the rollback must commit the snapshot back.
func TestSameGroupOffsetsComparesEntries(t *testing.T) {
	epoch := func(e int32) *int32 { return &e }
	snap := []offsetstore.GroupOffset{{Topic: "in", Partition: 0, Offset: 40, LeaderEpoch: epoch(5), Metadata: "m"},
		{Topic: "in", Partition: 1, Offset: 17}}
	for _, tc := range []struct {
		name string
		now  []offsetstore.GroupOffset
		same bool
	}{
		{"identical, other order", []offsetstore.GroupOffset{snap[1], snap[0]}, true},
		{"no epoch for none", []offsetstore.GroupOffset{snap[0], {Topic: "in", Partition: 1, Offset: 17, LeaderEpoch: epoch(-1)}}, true},
		{"other epoch", []offsetstore.GroupOffset{{Topic: "in", Partition: 0, Offset: 40, Metadata: "m"}, snap[1]}, false},
		{"other metadata", []offsetstore.GroupOffset{{Topic: "in", Partition: 0, Offset: 40, LeaderEpoch: epoch(5)}, snap[1]}, false},
		{"other offset", []offsetstore.GroupOffset{{Topic: "in", Partition: 0, Offset: 41, LeaderEpoch: epoch(5), Metadata: "m"}, snap[1]}, false},
		{"missing entry", snap[:1], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.same, sameGroupOffsets(tc.now, snap))
		})
	}
}
