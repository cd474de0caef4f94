package handlers

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func newManagedCreator(t *testing.T, store *fakeStore, intents IntentStore, m Manager) *Creator {
	t.Helper()
	c, err := NewCreator(Options{Store: store, Registry: connectors.Builtin(), ConfigTopic: testConfigTopic,
		OffsetsTopic: testOffsetsTopic, Intents: intents, ManagedBy: m, Backoff: kafkaio.Backoff{Base: 1, Max: 1, Attempts: 2}})
	require.NoError(t, err)
	return c
}

func offsetsOnlySinkRequest() *events.Request {
	return &events.Request{ID: "id-s", Source: "/test", Data: events.CreateRequest{
		Name:   "file-sink",
		Create: events.CreateOffsetsOnly,
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

// An offsets-only request places the offsets as a creation would (wipe, then write) and
// writes no config record; its result says so and what must happen next.
func TestCreateOffsetsOnly(t *testing.T) {
	tests := []struct {
		name    string
		manager Manager
		create  string
		next    string
	}{
		{name: "request field", create: events.CreateOffsetsOnly, next: "POST /connectors on the Connect cluster"},
		{name: "strimzi cluster, no field", manager: ManagerStrimzi, next: "a KafkaConnector resource named file-src-1"},
		{name: "strimzi cluster, field", manager: ManagerStrimzi, create: events.CreateOffsetsOnly, next: "a KafkaConnector resource named file-src-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := withStaleOffsets(t)
			intents := &fakeIntents{intents: map[string]*Intent{}}
			req := fileSourceRequest()
			req.Data.Create = tc.create
			out := newManagedCreator(t, store, intents, tc.manager).Create(context.Background(), req)

			require.Nil(t, out.Failure)
			require.Equal(t, events.TypeCreateSucceeded, out.EventType)
			require.Equal(t, "validate_config:ok validate_offsets:ok wipe_offsets:ok write_offsets:ok write_config:skipped", stageOutcomes(out.Result))
			require.Equal(t, map[string]string{seedKey: `{"position":30}`, otherKey: `{"position":1}`}, store.liveOffsets())
			require.Empty(t, store.configKeys(), "no config record")
			require.Equal(t, 1, out.OffsetsWritten)
			require.Equal(t, 1, out.OffsetsWiped)
			require.Equal(t, events.CreateOffsetsOnly, out.Result.Created)
			require.Contains(t, out.Result.Next, tc.next)
			require.Contains(t, out.Result.Next, "in state RUNNING")
			require.Len(t, out.Result.PreviousOffsets.Offsets, 1)
			require.GreaterOrEqual(t, intents.puts, 1, "an intent before the first write, as for a creation")
		})
	}
	t.Run("sink", func(t *testing.T) {
		store := newFakeStore()
		store.groups["connect-file-sink"] = []offsetstore.GroupOffset{{Topic: "t", Partition: 1, Offset: 2}}
		out := newManagedCreator(t, store, nil, ManagerNone).Create(context.Background(), offsetsOnlySinkRequest())
		require.Nil(t, out.Failure)
		require.Equal(t, []offsetstore.GroupOffset{{Topic: "t", Partition: 0, Offset: 5}}, store.groups["connect-file-sink"])
		require.Empty(t, store.configKeys())
		require.Equal(t, events.CreateOffsetsOnly, out.Result.Created)
	})
	t.Run("full creation says nothing of it", func(t *testing.T) {
		out := newManagedCreator(t, withStaleOffsets(t), nil, ManagerNone).Create(context.Background(), fileSourceRequest())
		require.Nil(t, out.Failure)
		require.Empty(t, out.Result.Created)
		require.Empty(t, out.Result.Next)
	})
}

// Requests an offsets-only cluster or request cannot take are refused before anything is
// written; a connector that exists is a 409 as for a creation, and nothing of it is touched.
func TestCreateOffsetsOnlyRefused(t *testing.T) {
	tests := []struct {
		name    string
		manager Manager
		edit    func(r *events.Request)
		exists  bool
		code    int
		message string
	}{
		{name: "unknown create", edit: func(r *events.Request) { r.Data.Create = "everything" }, code: 400,
			message: `create must be "connector" or "offsets-only", got "everything"`},
		{name: "connector on a strimzi cluster", manager: ManagerStrimzi, edit: func(r *events.Request) { r.Data.Create = events.CreateConnector }, code: 400,
			message: "managed by strimzi (OFFSETAGENT_CONNECTORS_MANAGED_BY)"},
		{name: "no offsets", edit: func(r *events.Request) {
			r.Data.Create, r.Data.InitialOffsets, r.Data.HasInitialOffsets = events.CreateOffsetsOnly, nil, false
		}, code: 400, message: `create "offsets-only" needs initial_offsets`},
		{name: "name no KafkaConnector can have", manager: ManagerStrimzi, edit: func(r *events.Request) {
			r.Data.Name = "File_Src"
			r.Data.Config = append(events.Config{}, r.Data.Config...)
		}, code: 400, message: `connector name "File_Src" is not a Kubernetes resource name`},
		{name: "existing connector", manager: ManagerStrimzi, exists: true, code: 409, message: "Connector file-src-1 already exists"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := withStaleOffsets(t)
			if tc.exists {
				require.NoError(t, store.Write(context.Background(), testConfigTopic, []offsetstore.Record{{Key: []byte(connKey), Value: []byte(`{"properties":{}}`)}}))
			}
			before := store.configKeys()
			req := fileSourceRequest()
			if tc.edit != nil {
				tc.edit(req)
			}
			out := newManagedCreator(t, store, &fakeIntents{intents: map[string]*Intent{}}, tc.manager).Create(context.Background(), req)
			require.Equal(t, events.TypeCreateFailed, out.EventType)
			require.Equal(t, StepValidateConfig, out.Failure.Step)
			require.Equal(t, tc.code, out.Result.ErrorCode)
			require.Contains(t, out.Result.Message, tc.message)
			require.Equal(t, map[string]string{staleKey: staleVal, otherKey: `{"position":1}`}, store.liveOffsets(), "offsets untouched")
			require.Equal(t, before, store.configKeys(), "config untouched")
		})
	}
}

// Offsets placed by an offsets-only request that then fails are removed, and the connector's
// earlier offsets put back, as for a creation.
func TestCreateOffsetsOnlyFailureUndoes(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		fail       func(op, topic string, recs []offsetstore.Record) error
		failedStep Step
		summary    string
	}{
		{name: "offsets write fails", fail: failFirst("write", testOffsetsTopic, []byte(`{"position":30}`), boom), failedStep: StepWriteOffsets,
			summary: "removed 1 initial offsets; restored 1 previous offsets"},
		{name: "wipe fails", fail: failFirst("write", testOffsetsTopic, nil, boom), failedStep: StepWipeOffsets,
			summary: "restored 1 previous offsets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := withStaleOffsets(t)
			store.fail = tc.fail
			req := fileSourceRequest()
			req.Data.Create = events.CreateOffsetsOnly
			out := newManagedCreator(t, store, &fakeIntents{intents: map[string]*Intent{}}, ManagerNone).Create(context.Background(), req)
			require.Equal(t, events.TypeCreateFailed, out.EventType)
			require.Equal(t, tc.failedStep, out.Failure.Step)
			require.Equal(t, tc.summary, out.Result.Cleanup.Summary)
			require.Equal(t, map[string]string{staleKey: staleVal, otherKey: `{"position":1}`}, store.liveOffsets())
			require.Empty(t, store.configKeys())
		})
	}
}

// A dry run of an offsets-only request plans no config record.
func TestCreateOffsetsOnlyDryRun(t *testing.T) {
	store := withStaleOffsets(t)
	req := fileSourceRequest()
	req.DryRun = true
	out := newManagedCreator(t, store, nil, ManagerStrimzi).Create(context.Background(), req)
	require.Equal(t, events.TypeCreatePlanned, out.EventType)
	require.Len(t, out.Result.Plan.Records, 1)
	require.Len(t, out.Result.Plan.Tombstones, 1)
	require.Empty(t, out.Result.Plan.ConfigRecords)
	require.Equal(t, events.CreateOffsetsOnly, out.Result.Created)
}

// crashAt makes a Creator's Fault stop the request at point, as a dying agent would: the
// intent stays, nothing after the point runs.
type crashed struct{}

func createUntil(t *testing.T, c *Creator, req *events.Request, point string) {
	t.Helper()
	c.opts.Fault = func(p, _ string) {
		if p == point {
			panic(crashed{})
		}
	}
	defer func() {
		c.opts.Fault = nil
		r := recover()
		require.Equal(t, crashed{}, r, "the request reached %s", point)
	}()
	c.Create(context.Background(), req)
}

// An offsets-only request interrupted after its write is rolled back by the next request for
// the name: its offsets removed, the earlier ones back, no config record. If the connector was
// created in between (the operator applied its resource), it is not the request's, and the
// rollback touches nothing of it.
func TestOffsetsOnlyInterruptedRollsBack(t *testing.T) {
	for _, operatorCreated := range []bool{false, true} {
		name := "rolled back"
		if operatorCreated {
			name = "connector created since: left alone"
		}
		t.Run(name, func(t *testing.T) {
			store := withStaleOffsets(t)
			intents := &fakeIntents{intents: map[string]*Intent{}}
			c := newManagedCreator(t, store, intents, ManagerStrimzi)
			createUntil(t, c, fileSourceRequest(), "after:"+string(StepWriteOffsets))
			require.Equal(t, `{"position":30}`, store.liveOffsets()[seedKey], "the interrupted request placed its offset")
			_, ok := intents.Get("file-src-1")
			require.True(t, ok, "its intent stays")
			if operatorCreated {
				require.NoError(t, store.Write(context.Background(), testConfigTopic, []offsetstore.Record{{Key: []byte(connKey), Value: []byte(`{"properties":{}}`)}}))
			}
			_, err := c.recoverInterrupted(context.Background(), &job{req: &events.Request{}, name: "file-src-1"})
			require.NoError(t, err)
			_, ok = intents.Get("file-src-1")
			require.False(t, ok, "the intent is removed")
			if operatorCreated {
				require.Equal(t, map[string]string{seedKey: `{"position":30}`, otherKey: `{"position":1}`}, store.liveOffsets())
				require.Equal(t, []string{connKey}, store.configKeys())
				return
			}
			require.Equal(t, map[string]string{staleKey: staleVal, otherKey: `{"position":1}`}, store.liveOffsets())
			require.Empty(t, store.configKeys())
		})
	}
}

func TestParseManager(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Manager
		err  bool
	}{{in: "", want: ManagerNone}, {in: "strimzi", want: ManagerStrimzi}, {in: "Strimzi", err: true}, {in: "argo", err: true}} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseManager(tc.in)
			require.Equal(t, tc.err, err != nil)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestIsKubernetesName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"file-src-1", true}, {"a.b-c", true}, {"a", true}, {"File", false}, {"a_b", false}, {"-a", false}, {"a-", false},
		{"a..b", false}, {"", false}, {string(make([]byte, 254)), false},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.ok, IsKubernetesName(tc.name)) })
	}
}
