package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// fakeConnect answers the Connect REST calls of validate_config with the recorded responses of
// testdata/connect: the connector "already-there" exists, a config with errors.tolerance=some
// fails validation with two errors, every other config validates.
type fakeConnect struct {
	mu        sync.Mutex
	validated []map[string]string
}

func startFakeConnect(t *testing.T) (*fakeConnect, string) {
	t.Helper()
	f := &fakeConnect{}
	srv := httptest.NewServer(f) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeConnect) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, file := http.StatusNotFound, "connector-not-found.json"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/connectors/already-there":
		status, file = http.StatusOK, "connector-exists.json"
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/connectors/"):
	case r.Method == http.MethodGet && r.URL.Path == "/connector-plugins":
		status, file = http.StatusOK, "connector-plugins.json"
	case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/config/validate"):
		var cfg map[string]string
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &cfg); err != nil {
			http.Error(w, `{"error_code":500,"message":"bad body"}`, http.StatusInternalServerError)
			return
		}
		f.mu.Lock()
		f.validated = append(f.validated, cfg)
		f.mu.Unlock()
		status, file = http.StatusOK, "validate-ok.json"
		if cfg["errors.tolerance"] == "some" {
			file = "validate-errors.json"
		}
	default:
		http.Error(w, `{"error_code":404,"message":"HTTP 404 Not Found"}`, http.StatusNotFound)
		return
	}
	body, err := os.ReadFile(filepath.Join("testdata", "connect", file))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (f *fakeConnect) validations() []map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]string(nil), f.validated...)
}

// With OFFSETAGENT_CONNECT_URL set, validate_config asks Connect: the type it reports settles a
// class the registry does not know, a config with errors fails with Connect's aggregated text,
// and a connector Connect already has is a 409. Failed requests write nothing.
func TestConnectRESTValidation(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	fake, url := startFakeConnect(t)
	cfg.ConnectURL = url
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	cl.createTopic("orders", 3)

	// No "topics": the registry alone would call this class a source connector.
	okID := cl.publish(`{"name":"my-sink","config":{"connector.class":"com.example.MySinkConnector","tasks.max":"1"},
	  "initial_offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":5}}]}`, events.RequestOptions{})
	badID := cl.publish(`{"name":"file-sink-1","config":{"connector.class":"FileStreamSink","topics":"orders",
	  "errors.retry.timeout":"soon","errors.tolerance":"some"}}`, events.RequestOptions{})
	existsID := cl.publish(`{"name":"already-there","config":{"connector.class":"FileStreamSource","file":"a.txt","topic":"t"},
	  "initial_offsets":[{"partition":{"filename":"a.txt"},"offset":{"position":1}}]}`, events.RequestOptions{})

	res := cl.waitResult(okID, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, "sink", res.Data.Type, "the type comes from Connect's plugin list")
	require.Equal(t, map[string]int64{"orders/0": 5}, cl.groupOffsets("connect-my-sink"))

	tests := []struct {
		name, id, message string
		code              int
	}{
		{name: "config with errors", id: badID, code: 400, message: "Connector configuration is invalid and contains the following 2 error(s):\n" +
			"Invalid value soon for configuration errors.retry.timeout: Not a number of type LONG\n" +
			"Invalid value some for configuration errors.tolerance: String must be one of: none, all\n" +
			"You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"},
		{name: "connector exists in Connect", id: existsID, code: 409, message: "Connector already-there already exists"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := cl.waitResult(tc.id, resultWait)
			require.Equal(t, events.TypeCreateFailed, res.Type)
			require.Equal(t, "validate_config", res.Data.FailedStep)
			require.Equal(t, tc.code, res.Data.ErrorCode)
			require.Equal(t, tc.message, res.Data.Message)
			require.Contains(t, res.Data.Cleanup.Summary, "nothing to undo")
		})
	}

	live := cl.live(cfg.ConfigTopic)
	require.Len(t, live, 2, "only my-sink's config records: %v", live)
	require.Contains(t, live, "connector-my-sink")
	require.Empty(t, cl.live(cfg.OffsetsTopic))
	require.Empty(t, cl.groupOffsets("connect-file-sink-1"))

	var sent map[string]string
	for _, v := range fake.validations() {
		if v["name"] == "my-sink" {
			sent = v
		}
	}
	require.Equal(t, map[string]string{"connector.class": "com.example.MySinkConnector", "tasks.max": "1", "name": "my-sink"}, sent,
		"Connect validates the config as POST /connectors would, name included")
}

// An unreachable Connect cluster is a transient error: retried with the default backoff
// (about 8 s on average, at most about 17 s), then a failed result, never a pass.
func TestConnectRESTUnreachable(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.ConnectURL = "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	// Every attempt of the default schedule, with millisecond delays: the default's own delays
	// (up to 5 s each, about 25 s in all) prove nothing more here.
	backoff := kafkaio.DefaultBackoff()
	backoff.Base, backoff.Max = time.Millisecond, 10*time.Millisecond
	a := startAgent(t, cfg, agent.Options{Backoff: backoff})
	cl := newClient(t, cfg)

	id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	res := cl.waitResult(id, 60*time.Second)
	require.Equal(t, events.TypeCreateFailed, res.Type)
	require.Equal(t, "validate_config", res.Data.FailedStep)
	require.Equal(t, 500, res.Data.ErrorCode)
	require.Contains(t, res.Data.Message, "connection refused")
	require.GreaterOrEqual(t, a.metric(t, "offsetagent_retries_total", "reason", "network"), float64(kafkaio.DefaultBackoff().Attempts-1),
		"every attempt but the last was retried")
	require.Empty(t, cl.readAll(cfg.ConfigTopic))
	require.Empty(t, cl.readAll(cfg.OffsetsTopic))
}

// decodePlan reads a planned result's plan.
func decodePlan(t *testing.T, res result) events.Plan {
	t.Helper()
	var p events.Plan
	require.NoError(t, json.Unmarshal([]byte(mustJSON(t, res.Data.Plan)), &p))
	return p
}

func strPtr(s string) *string { return &s }

// A dry run validates and reports the plan, byte for byte, and changes no topic and no group.
func TestDryRunLeavesEverythingUnchanged(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	old := []string{`["file-src-1",{"filename":"test.txt"}]`, `["file-src-1",{"filename":"old.txt"}]`}
	cl.produce(cfg.OffsetsTopic,
		kafka.Message{Key: []byte(old[0]), Value: []byte(`{"position":99}`)},
		kafka.Message{Key: []byte(old[1]), Value: []byte(`{"position":5}`)},
		kafka.Message{Key: []byte(`["other",{"filename":"test.txt"}]`), Value: []byte(`{"position":1}`)},
	)
	cl.createTopic("orders", 3)
	commitGroup(t, cl, "connect-jdbc-sink", map[int]int64{0: 40, 2: 41}, "orders")
	configBefore, offsetsBefore := records(cl.readAll(cfg.ConfigTopic)), records(cl.readAll(cfg.OffsetsTopic))

	t.Run("source", func(t *testing.T) {
		id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{DryRun: true})
		res := cl.waitResult(id, resultWait)
		require.Equal(t, events.TypeCreatePlanned, res.Type, res.Data.Message)
		require.Equal(t, "source", res.Data.Type)
		require.Equal(t, 0, *res.Data.OffsetsWritten)
		require.Equal(t, 0, *res.Data.OffsetsWiped)
		outcomes := map[string]string{}
		for _, s := range res.Data.Stages {
			outcomes[s.Stage] = string(s.Outcome)
		}
		require.Equal(t, map[string]string{"validate_config": "ok", "validate_offsets": "ok", "wipe_offsets": "skipped",
			"write_offsets": "skipped", "write_config": "skipped"}, outcomes)

		p := decodePlan(t, res)
		sort.Slice(p.Tombstones, func(i, j int) bool { return p.Tombstones[i].Key < p.Tombstones[j].Key })
		require.Equal(t, []events.PlannedRecord{
			{Topic: cfg.OffsetsTopic, Partition: partitionOf(old[1]), Key: old[1]},
			{Topic: cfg.OffsetsTopic, Partition: partitionOf(old[0]), Key: old[0]},
		}, p.Tombstones)
		require.Equal(t, []events.PlannedRecord{
			{Topic: cfg.OffsetsTopic, Partition: 2, Key: old[0], Value: strPtr(`{"position":30}`)},
		}, p.Records)
		var golden struct{ Config []goldenRecord }
		require.NoError(t, json.Unmarshal([]byte(readFile(t, "testdata/file-src-1.records.golden.json")), &golden))
		require.Len(t, p.ConfigRecords, len(golden.Config))
		for i, g := range golden.Config {
			require.Equal(t, events.PlannedRecord{Topic: cfg.ConfigTopic, Partition: g.Partition, Key: g.Key, Value: g.Value}, p.ConfigRecords[i])
		}
		require.Empty(t, p.Error)
	})

	t.Run("sink", func(t *testing.T) {
		body := `{"name":"jdbc-sink","config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"orders","tasks.max":"1"},
		  "initial_offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":5}},
		    {"partition":{"kafka_topic":"orders","kafka_partition":1},"offset":{"kafka_offset":6}}]}`
		id := cl.publish(body, events.RequestOptions{DryRun: true})
		res := cl.waitResult(id, resultWait)
		require.Equal(t, events.TypeCreatePlanned, res.Type, res.Data.Message)
		require.Equal(t, "sink", res.Data.Type)
		p := decodePlan(t, res)
		require.Equal(t, "connect-jdbc-sink", p.Group)
		require.True(t, p.GroupDeleted)
		require.Equal(t, `[{"topic":"orders","partition":0,"offset":5},{"topic":"orders","partition":1,"offset":6}]`, mustJSON(t, p.GroupOffsets))
		require.Empty(t, p.Tombstones)
		require.Empty(t, p.Records)
		require.Len(t, p.ConfigRecords, 2)
	})

	require.Equal(t, configBefore, records(cl.readAll(cfg.ConfigTopic)), "config topic unchanged")
	require.Equal(t, offsetsBefore, records(cl.readAll(cfg.OffsetsTopic)), "offsets topic unchanged")
	require.Equal(t, map[string]int64{"orders/0": 40, "orders/2": 41}, cl.groupOffsets("connect-jdbc-sink"), "group unchanged")
}

// createCompactTopic creates a compacted topic as Connect creates offsets topics.
func createCompactTopic(t *testing.T, cl *client, topic string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}},
	}}})
	require.NoError(t, err)
	for _, e := range resp.Errors {
		require.NoError(t, e)
	}
}

// A source connector with its own offsets.storage.topic: its keys are tombstoned in both topics
// and the new offsets land in both, as Connect's ConnectorOffsetBackingStore writes them; a topic
// outside OFFSETAGENT_ALLOWED_OFFSETS_TOPICS is refused.
func TestConnectorSpecificOffsetsTopic(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	connTopic := "conn-" + cfg.OffsetsTopic // unique per test, for shared external clusters
	cfg.AllowedOffsetsTopics = regexp.QuoteMeta(connTopic)
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	createCompactTopic(t, cl, connTopic, 25)

	oldGlobal := `["src-1",{"filename":"old.txt"}]`
	oldConn := `["src-1",{"filename":"older.txt"}]`
	other := `["other",{"filename":"x"}]`
	cl.produce(cfg.OffsetsTopic, kafka.Message{Key: []byte(oldGlobal), Value: []byte(`{"position":5}`)},
		kafka.Message{Key: []byte(other), Value: []byte(`{"position":1}`)})
	cl.produce(connTopic, kafka.Message{Key: []byte(oldConn), Value: []byte(`{"position":3}`)})

	id := cl.publish(`{"name":"src-1","config":{"connector.class":"FileStreamSource","file":"test.txt","topic":"t",
	  "offsets.storage.topic":"`+connTopic+`"},"initial_offsets":[{"partition":{"filename":"test.txt"},"offset":{"position":30}}]}`,
		events.RequestOptions{})
	res := cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, 2, *res.Data.OffsetsWiped)
	require.Equal(t, 1, *res.Data.OffsetsWritten)
	require.Equal(t, []string{
		`{"partition":{"filename":"old.txt"},"offset":{"position":5}}`,
		`{"partition":{"filename":"older.txt"},"offset":{"position":3}}`,
	}, offsetSet(t, res.Data.PreviousOffsets), "result: %s", mustJSON(t, res.Data))

	newKey := `["src-1",{"filename":"test.txt"}]`
	want := liveRecord{Partition: partitionOf(newKey), Value: `{"position":30}`}
	require.Equal(t, map[string]liveRecord{newKey: want}, cl.live(connTopic), "connector topic: old key tombstoned, new offset written")
	require.Equal(t, map[string]liveRecord{newKey: want, other: {Partition: partitionOf(other), Value: `{"position":1}`}},
		cl.live(cfg.OffsetsTopic), "global topic: old key tombstoned, new offset mirrored, other connectors untouched")

	t.Run("disallowed topic", func(t *testing.T) {
		id := cl.publish(`{"name":"src-2","config":{"connector.class":"FileStreamSource","file":"a","offsets.storage.topic":"not-allowed"},
		  "initial_offsets":[{"partition":{"filename":"a"},"offset":{"position":1}}]}`, events.RequestOptions{})
		res := cl.waitResult(id, resultWait)
		require.Equal(t, events.TypeCreateFailed, res.Type)
		require.Equal(t, "validate_config", res.Data.FailedStep)
		require.Equal(t, 400, res.Data.ErrorCode)
		require.Equal(t, `offsets.storage.topic "not-allowed" is not allowed: it must match ^(?:`+regexp.QuoteMeta(connTopic)+`)$`, res.Data.Message)
		_, ok := cl.live(cfg.ConfigTopic)["connector-src-2"]
		require.False(t, ok)
	})
}
