package handlers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

const (
	testConfigTopic  = "connect-configs"
	testOffsetsTopic = "connect-offsets"
)

// fakeStore is an in-memory Store: the config topic as a list of records, each offsets topic
// as its live records by key, consumer groups as lists of offsets. fail, when set, is asked
// before every write and delete; an error it returns fails the call.
type fakeStore struct {
	mu      sync.Mutex
	configs []offsetstore.Record // every record written to the config topic, in order
	offsets map[string]map[string]offsetstore.SourceRecord
	groups  map[string][]offsetstore.GroupOffset
	fail    func(op, topic string, recs []offsetstore.Record) error
}

func newFakeStore() *fakeStore {
	return &fakeStore{offsets: map[string]map[string]offsetstore.SourceRecord{}, groups: map[string][]offsetstore.GroupOffset{}}
}

func (s *fakeStore) Sync(context.Context, string) error { return nil }
func (s *fakeStore) SyncEnds(ctx context.Context, topics ...string) ([]func(context.Context) error, error) {
	return syncEach(s, topics), nil
}
func (s *fakeStore) Track(context.Context, string) error { return nil }
func (s *fakeStore) Partitions(context.Context, string) (int, error) {
	return 25, nil
}

// The in-memory store allows everything; permissions are tested on kfake with ACLs.
func (s *fakeStore) ProbeRead(context.Context, string) error { return nil }
func (s *fakeStore) ProbeWrites(_ context.Context, topics []string) []error {
	return make([]error, len(topics))
}
func (s *fakeStore) QueueProbeWrites(ctx context.Context, topics []string) func(context.Context) []error {
	errs := s.ProbeWrites(ctx, topics)
	return func(context.Context) []error { return errs }
}
func (s *fakeStore) HoldWrites() func()                                       { return func() {} }
func (s *fakeStore) ProbeGroupCommit(context.Context, string, []string) error { return nil }
func (s *fakeStore) ProbeGroupDelete(context.Context, string, string) error   { return nil }

func (s *fakeStore) ConnectorConfig(name string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exists := false
	for _, r := range s.configs {
		if string(r.Key) == "connector-"+name {
			exists = r.Value != nil
		}
	}
	return map[string]string{}, exists
}

func (s *fakeStore) ConfigRecord(key string) offsetstore.ConfigRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out offsetstore.ConfigRecord
	for _, r := range s.configs {
		if string(r.Key) == key {
			out = offsetstore.ConfigRecord{Live: r.Value != nil}
			if out.Live && strings.HasPrefix(key, "target-state-") {
				out.Value = r.Value
			}
			for _, h := range r.Headers {
				switch h.Key {
				case offsetstore.HeaderRequestID:
					out.Writer.RequestID = string(h.Value)
				case offsetstore.HeaderRequestSource:
					out.Writer.RequestSource = string(h.Value)
				}
			}
		}
	}
	return out
}

func (s *fakeStore) SourceOffsets(topic, connector string) []offsetstore.SourceRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []offsetstore.SourceRecord
	for _, r := range s.offsets[topic] {
		if c, _, ok := offsetstore.DecodeKey(r.Key); ok && c == connector {
			out = append(out, r)
		}
	}
	return out
}

func (s *fakeStore) check(op, topic string, recs []offsetstore.Record) error {
	if s.fail == nil {
		return nil
	}
	return s.fail(op, topic, recs)
}

// WriteEncoded writes the records as Write does; a failure names every record, by its number
// in enc.
func (s *fakeStore) WriteEncoded(ctx context.Context, topic string, enc *offsetstore.Encoded) error {
	return s.Write(ctx, topic, enc.Records())
}

func (s *fakeStore) Write(_ context.Context, topic string, recs []offsetstore.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("write", topic, recs); err != nil {
		var we *kafkaio.WriteError
		if errors.As(err, &we) {
			return err // says itself what was written
		}
		return &kafkaio.WriteError{Failed: []int{0}, Err: err}
	}
	if topic == testConfigTopic {
		s.configs = append(s.configs, recs...)
		return nil
	}
	if s.offsets[topic] == nil {
		s.offsets[topic] = map[string]offsetstore.SourceRecord{}
	}
	for _, r := range recs {
		if r.Value == nil {
			delete(s.offsets[topic], string(r.Key))
			continue
		}
		p := r.Partition
		if p < 0 {
			p = offsetstore.PartitionFor(r.Key, 25)
		}
		s.offsets[topic][string(r.Key)] = offsetstore.SourceRecord{Key: r.Key, Value: r.Value, Partition: p}
	}
	return nil
}

func (s *fakeStore) GroupOffsets(_ context.Context, group string) ([]offsetstore.GroupOffset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups[group], nil
}

func (s *fakeStore) GroupMembers(context.Context, string) (int, error) { return 0, nil }
func (s *fakeStore) DescribeGroup(context.Context, string) (offsetstore.GroupActivity, error) {
	return offsetstore.GroupActivity{}, nil
}
func (s *fakeStore) GroupConnectors(string) []string { return nil }

func (s *fakeStore) DeleteGroup(_ context.Context, group string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("delete_group", group, nil); err != nil {
		return err
	}
	delete(s.groups, group)
	return nil
}

func (s *fakeStore) CommitGroupOffsets(_ context.Context, group string, offsets []offsetstore.GroupOffset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("commit_group", group, nil); err != nil {
		return err
	}
	s.groups[group] = append(s.groups[group], offsets...)
	return nil
}

// liveOffsets returns the offsets topic's live records as key -> value.
func (s *fakeStore) liveOffsets() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, r := range s.offsets[testOffsetsTopic] {
		out[k] = string(r.Value)
	}
	return out
}

// configKeys returns the keys written to the config topic, "<key>=" for tombstones.
func (s *fakeStore) configKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.configs {
		k := string(r.Key)
		if r.Value == nil {
			k += "="
		}
		out = append(out, k)
	}
	return out
}

// fakeIntents is an in-memory IntentStore that records what happened to intents.
type fakeIntents struct {
	mu      sync.Mutex
	intents map[string]*Intent
	puts    int
}

func (f *fakeIntents) Get(name string) (*Intent, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.intents[name]
	return in, ok
}

func (f *fakeIntents) Put(_ context.Context, in *Intent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intents[in.Name] = in
	f.puts++
	return nil
}

// Queue writes at once: the map is the store.
func (f *fakeIntents) Queue(ctx context.Context, in *Intent) func(context.Context) error {
	err := f.Put(ctx, in)
	return func(context.Context) error { return err }
}

// CatchUp has nothing to read: the map is the store.
func (f *fakeIntents) CatchUp(context.Context, string) error { return nil }

func (f *fakeIntents) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.intents, name)
	return nil
}

func newTestCreator(t *testing.T, store *fakeStore, intents IntentStore) *Creator {
	t.Helper()
	c, err := NewCreator(Options{Store: store, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
		OffsetsTopic: testOffsetsTopic, Intents: intents, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2}})
	require.NoError(t, err)
	return c
}

// fileSourceRequest is the KIP-995 seed example: file-src-1 born at position 30.
func fileSourceRequest() *events.Request {
	return &events.Request{ID: "id-1", Source: "/test", Type: events.TypeCreateRequest, Data: events.CreateRequest{
		Name: "file-src-1",
		Config: events.Config{
			{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSourceConnector"},
			{Key: "file", Value: "test.txt"}, {Key: "topic", Value: "test-topic"}, {Key: "tasks.max", Value: "1"},
		},
		InitialOffsets: []events.OffsetEntry{{
			Partition: jsonvalue.Map{{Key: "filename", Value: "test.txt"}},
			Offset:    jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("30")}},
		}},
		HasInitialOffsets: true,
	}}
}

const (
	seedKey   = `["file-src-1",{"filename":"test.txt"}]`
	staleKey  = `["file-src-1",{"filename":"old.txt"}]`
	staleVal  = `{"position":7}`
	otherKey  = `["other",{"filename":"test.txt"}]`
	targetKey = "target-state-file-src-1"
	connKey   = "connector-file-src-1"
)

// withStaleOffsets returns a store where file-src-1 has an offset left behind by an earlier
// connector of the name, and another connector has one of its own.
func withStaleOffsets(t *testing.T) *fakeStore {
	t.Helper()
	s := newFakeStore()
	require.NoError(t, s.Write(context.Background(), testOffsetsTopic, []offsetstore.Record{
		{Key: []byte(staleKey), Value: []byte(staleVal), Partition: -1},
		{Key: []byte(otherKey), Value: []byte(`{"position":1}`), Partition: -1},
	}))
	return s
}

func stageOutcomes(res events.Result) string {
	var b strings.Builder
	for _, s := range res.Stages {
		b.WriteString(s.Stage + ":" + string(s.Outcome) + " ")
	}
	return strings.TrimSpace(b.String())
}

func TestCreateSucceeds(t *testing.T) {
	store := withStaleOffsets(t)
	intents := &fakeIntents{intents: map[string]*Intent{}}
	out := newTestCreator(t, store, intents).Create(context.Background(), fileSourceRequest())

	require.Nil(t, out.Failure)
	require.Equal(t, events.TypeCreateSucceeded, out.EventType)
	require.Equal(t, "validate_config:ok validate_offsets:ok wipe_offsets:ok write_offsets:ok write_config:ok", stageOutcomes(out.Result))
	require.Equal(t, 1, out.OffsetsWritten)
	require.Equal(t, 1, out.OffsetsWiped)
	require.Equal(t, connectors.Source, out.ConnectorType)
	require.Equal(t, "The offsets for this connector have been altered successfully", out.Result.InitialOffsetsResponse)
	require.Equal(t, map[string]string{seedKey: `{"position":30}`, otherKey: `{"position":1}`}, store.liveOffsets())
	require.Equal(t, []string{targetKey, connKey}, store.configKeys(), "target state first (KIP-980)")
	require.Equal(t, []events.ConnectorOffset{{
		Partition: jsonvalue.Map{{Key: "filename", Value: "old.txt"}},
		Offset:    jsonvalue.Map{{Key: "position", Value: jsonvalue.Number("7")}},
	}}, out.Result.PreviousOffsets.Offsets)
	require.GreaterOrEqual(t, intents.puts, 1, "an intent is recorded before the first write")
}

// Each writing stage has an undo: a failure at a stage runs the undo of every stage that wrote,
// last first, and leaves the connector's offsets as they were and no config record behind.
func TestCreateFailureUndoesEachStage(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		// fail says which store call fails (with a permanent error).
		fail        func(op, topic string, recs []offsetstore.Record) error
		failedStep  Step
		summary     string
		removed     int
		restored    int
		configLeft  []string // config-topic writes, tombstones as "<key>="
		wantOffsets map[string]string
	}{
		{
			name:       "config write fails",
			fail:       failFirst("write", testConfigTopic, nil, boom),
			failedStep: StepWriteConfig,
			// The write landed nothing: no config record carries the request's mark, so the
			// cleanup writes none.
			summary:     "removed 1 initial offsets; restored 1 previous offsets",
			removed:     1,
			restored:    1,
			wantOffsets: map[string]string{staleKey: staleVal, otherKey: `{"position":1}`},
		},
		{
			// Refused outright: nothing of it is in the topic, and nothing of it is undone.
			name:        "config write refused",
			fail:        failFirst("write", testConfigTopic, nil, &kafkaio.WriteError{Failed: []int{0, 1}, NotWritten: []int{0, 1}, Err: boom}),
			failedStep:  StepWriteConfig,
			summary:     "removed 1 initial offsets; restored 1 previous offsets",
			removed:     1,
			restored:    1,
			wantOffsets: map[string]string{staleKey: staleVal, otherKey: `{"position":1}`},
		},
		{
			name:        "offsets write fails",
			fail:        failFirst("write", testOffsetsTopic, []byte(`{"position":30}`), boom),
			failedStep:  StepWriteOffsets,
			summary:     "removed 1 initial offsets; restored 1 previous offsets",
			removed:     1,
			restored:    1,
			wantOffsets: map[string]string{staleKey: staleVal, otherKey: `{"position":1}`},
		},
		{
			name:        "offsets write refused",
			fail:        failFirst("write", testOffsetsTopic, []byte(`{"position":30}`), &kafkaio.WriteError{Failed: []int{0}, NotWritten: []int{0}, Err: boom}),
			failedStep:  StepWriteOffsets,
			summary:     "restored 1 previous offsets",
			restored:    1,
			wantOffsets: map[string]string{staleKey: staleVal, otherKey: `{"position":1}`},
		},
		{
			name:        "wipe refused",
			fail:        failFirst("write", testOffsetsTopic, nil, &kafkaio.WriteError{Failed: []int{0}, NotWritten: []int{0}, Err: boom}),
			failedStep:  StepWipeOffsets,
			summary:     events.NothingUndone,
			wantOffsets: map[string]string{staleKey: staleVal, otherKey: `{"position":1}`},
		},
		{
			name:        "wipe fails",
			fail:        failFirst("write", testOffsetsTopic, nil, boom),
			failedStep:  StepWipeOffsets,
			summary:     "restored 1 previous offsets",
			restored:    1,
			wantOffsets: map[string]string{staleKey: staleVal, otherKey: `{"position":1}`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := withStaleOffsets(t)
			store.fail = tc.fail
			out := newTestCreator(t, store, &fakeIntents{intents: map[string]*Intent{}}).Create(context.Background(), fileSourceRequest())

			require.Equal(t, events.TypeCreateFailed, out.EventType)
			require.NotNil(t, out.Failure)
			require.Equal(t, tc.failedStep, out.Failure.Step)
			require.Equal(t, kafkaio.ReasonPermanent, out.Failure.Reason)
			require.Equal(t, string(tc.failedStep), out.Result.FailedStep)
			require.Equal(t, 500, out.Result.ErrorCode)
			require.Contains(t, out.Result.Message, "boom")
			c := out.Result.Cleanup
			require.NotNil(t, c)
			require.Empty(t, c.Error)
			require.Equal(t, tc.summary, c.Summary)
			require.Equal(t, tc.removed, c.OffsetsRemoved)
			require.Equal(t, tc.restored, c.OffsetsRestored)
			require.Equal(t, tc.wantOffsets, store.liveOffsets())
			require.Equal(t, tc.configLeft, store.configKeys())
			require.Zero(t, out.OffsetsWritten, "the metrics count only successful requests")
		})
	}
}

// failFirst fails the first call of op on topic (whose first record has the value value, when
// value is not nil) with err; later calls succeed.
func failFirst(op, topic string, value []byte, err error) func(string, string, []offsetstore.Record) error {
	var once sync.Once
	return func(gotOp, gotTopic string, recs []offsetstore.Record) error {
		if gotOp != op || gotTopic != topic || (value != nil && (len(recs) == 0 || string(recs[0].Value) != string(value))) {
			return nil
		}
		var out error
		once.Do(func() { out = err })
		return out
	}
}

func TestCreateValidationFailureWritesNothing(t *testing.T) {
	store := withStaleOffsets(t)
	intents := &fakeIntents{intents: map[string]*Intent{}}
	req := fileSourceRequest()
	req.Data.Name = "  "
	out := newTestCreator(t, store, intents).Create(context.Background(), req)

	require.Equal(t, events.TypeCreateFailed, out.EventType)
	require.Equal(t, StepValidateConfig, out.Failure.Step)
	require.Equal(t, 400, out.Result.ErrorCode)
	require.Equal(t, "validate_config:failed validate_offsets:skipped wipe_offsets:skipped write_offsets:skipped write_config:skipped", stageOutcomes(out.Result))
	require.Equal(t, &events.Cleanup{Summary: events.NothingUndone}, out.Result.Cleanup)
	require.Empty(t, store.configKeys())
	require.Zero(t, intents.puts)
	require.Len(t, store.liveOffsets(), 2)
}

func TestCreateExistingConnectorConflicts(t *testing.T) {
	store := withStaleOffsets(t)
	require.NoError(t, store.Write(context.Background(), testConfigTopic, []offsetstore.Record{{Key: []byte(connKey), Value: []byte(`{"properties":{}}`)}}))
	out := newTestCreator(t, store, nil).Create(context.Background(), fileSourceRequest())
	require.Equal(t, 409, out.Result.ErrorCode)
	require.Equal(t, "Connector file-src-1 already exists", out.Result.Message)
}

// A dry run computes the plan and writes nothing.
func TestCreateDryRunPlans(t *testing.T) {
	store := withStaleOffsets(t)
	req := fileSourceRequest()
	req.DryRun = true
	out := newTestCreator(t, store, nil).Create(context.Background(), req)

	require.Equal(t, events.TypeCreatePlanned, out.EventType)
	require.NotNil(t, out.Result.Plan)
	require.Equal(t, []events.PlannedRecord{{Topic: testOffsetsTopic, Partition: offsetstore.PartitionFor([]byte(staleKey), 25), Key: staleKey}}, out.Result.Plan.Tombstones)
	v := `{"position":30}`
	require.Equal(t, []events.PlannedRecord{{Topic: testOffsetsTopic, Partition: 2, Key: seedKey, Value: &v}}, out.Result.Plan.Records)
	require.Len(t, out.Result.Plan.ConfigRecords, 2)
	require.Empty(t, store.configKeys())
	require.Len(t, store.liveOffsets(), 2)
}

// A sink connector's cleanup deletes its group and commits the previous offsets back; if the
// group cannot be deleted the cleanup stops there and says what is left.
func TestCreateSinkCleanup(t *testing.T) {
	sinkRequest := func() *events.Request {
		return &events.Request{ID: "id-2", Source: "/test", Data: events.CreateRequest{
			Name: "file-sink",
			Config: events.Config{
				{Key: "connector.class", Value: "org.apache.kafka.connect.file.FileStreamSinkConnector"},
				{Key: "topics", Value: "t"},
			},
			InitialOffsets: []events.OffsetEntry{{
				Partition: jsonvalue.Map{{Key: "kafka_topic", Value: "t"}, {Key: "kafka_partition", Value: jsonvalue.Number("0")}},
				Offset:    jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number("5")}},
			}},
			HasInitialOffsets: true,
		}}
	}
	prev := []offsetstore.GroupOffset{{Topic: "t", Partition: 0, Offset: 2}}
	boom := errors.New("boom")
	configFails := failFirst("write", testConfigTopic, nil, boom)
	deletes := 0
	secondDeleteFails := func(op, _ string, _ []offsetstore.Record) error {
		if op != "delete_group" {
			return nil
		}
		if deletes++; deletes == 2 {
			return boom
		}
		return nil
	}
	tests := []struct {
		name      string
		fail      func(op, topic string, recs []offsetstore.Record) error
		summary   string
		left      string
		wantGroup []offsetstore.GroupOffset
	}{
		{
			name:      "config write fails",
			fail:      failFirst("write", testConfigTopic, nil, boom),
			summary:   "removed 1 initial offsets of group connect-file-sink; restored 1 previous offsets",
			wantGroup: prev,
		},
		{
			name: "group cannot be deleted",
			fail: func(op, topic string, recs []offsetstore.Record) error {
				if err := configFails(op, topic, recs); err != nil {
					return err
				}
				return secondDeleteFails(op, topic, recs)
			},
			summary:   "cleanup incomplete",
			left:      `group "connect-file-sink" may hold initial offsets`,
			wantGroup: []offsetstore.GroupOffset{{Topic: "t", Partition: 0, Offset: 5}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newFakeStore()
			store.groups["connect-file-sink"] = prev
			store.fail = tc.fail
			out := newTestCreator(t, store, nil).Create(context.Background(), sinkRequest())
			require.Equal(t, events.TypeCreateFailed, out.EventType)
			require.Equal(t, tc.summary, out.Result.Cleanup.Summary)
			require.Equal(t, tc.left, out.Result.Cleanup.Left)
			require.Equal(t, tc.left != "", out.Result.Cleanup.Error != "")
			require.Equal(t, tc.wantGroup, store.groups["connect-file-sink"])
		})
	}
}

// syncEach is SyncEnds for the test stores: a wait per topic that is the store's Sync.
func syncEach(s Store, topics []string) []func(context.Context) error {
	waits := make([]func(context.Context) error, len(topics))
	for i, topic := range topics {
		waits[i] = func(ctx context.Context) error { return s.Sync(ctx, topic) }
	}
	return waits
}
