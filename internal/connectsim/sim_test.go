package connectsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/offsetstore"
)

const (
	configTopic  = "connect-configs"
	offsetsTopic = "connect-offsets"
	statusTopic  = "connect-status"
)

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startBroker starts a kfake broker on 127.0.0.1 with Connect's config, offsets and status
// topics, created as a worker creates them.
func startBroker(t testing.TB) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, offsetstore.CheckConnectTopics(testContext(t), cl, configTopic, offsetsTopic, true))
	require.NoError(t, kafkaio.EnsureTopic(testContext(t), cl, statusTopic, 5, map[string]string{"cleanup.policy": "compact"}))
	require.NoError(t, kafkaio.EnsureTopic(testContext(t), cl, "t", 2, nil))
	return brokers
}

// write writes records as a Connect worker would (keys partitioned by murmur2).
func write(t testing.TB, brokers []string, topic string, recs ...offsetstore.Record) {
	t.Helper()
	s, err := offsetstore.New(offsetstore.Options{Brokers: brokers, ConfigTopic: "unused-config", OffsetsTopic: "unused-offsets"})
	require.NoError(t, err)
	require.NoError(t, s.Write(testContext(t), topic, recs))
}

// serve runs a Sim over brokers' topics behind an httptest server and returns its URL.
func serve(t testing.TB, brokers []string, mod func(*Config)) string {
	t.Helper()
	cfg := Config{Topics: offsetstore.Options{Brokers: brokers, ConfigTopic: configTopic, OffsetsTopic: offsetsTopic},
		StatusTopic: statusTopic, WorkerID: "127.0.0.1:8083"}
	if mod != nil {
		mod(&cfg)
	}
	sim, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.NoError(t, sim.WaitReady(testContext(t)))
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return srv.URL
}

// call sends one request and returns the status and the body.
func call(t testing.TB, base, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(testContext(t), method, base+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// rawRecords reads every record of topic (all partitions), in partition then offset order.
func rawRecords(t testing.TB, brokers []string, topic string) []kafka.Message {
	t.Helper()
	ctx := testContext(t)
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: brokers})
	n, err := kafkaio.PartitionCount(ctx, cl, topic)
	require.NoError(t, err)
	var out []kafka.Message
	for p := range n {
		next := int64(0)
		for range 1000 {
			f, err := kafkaio.FetchPartition(ctx, cl, topic, p, next, 1<<20, time.Millisecond)
			require.NoError(t, err)
			out = append(out, f.Messages...)
			if f.Next >= f.LastStable {
				break
			}
			next = f.Next
		}
	}
	return out
}

// lastRecord is the value of the latest record of key in topic ("<nil>" for a tombstone,
// "<none>" for no record).
func lastRecord(t testing.TB, brokers []string, topic, key string) string {
	t.Helper()
	v := "<none>"
	for _, m := range rawRecords(t, brokers, topic) {
		if string(m.Key) == key {
			v = string(m.Value)
			if m.Value == nil {
				v = "<nil>"
			}
		}
	}
	return v
}

// fleet is Connect cluster A of the tests: a FileStream source (running, offsets, an active
// topic), a FileStream sink (paused, a group), a source with its own offsets topic, and a
// connector whose class is not installed; written as a worker writes them.
func fleet(t testing.TB, brokers []string) {
	t.Helper()
	cfg := func(name, props string) offsetstore.Record {
		return offsetstore.Record{Key: []byte("connector-" + name), Value: []byte(`{"properties":` + props + `}`), Partition: 0}
	}
	write(t, brokers, configTopic,
		cfg("file-src", `{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"in.txt","topic":"t","name":"file-src"}`),
		offsetstore.Record{Key: []byte("target-state-file-sink"), Value: []byte(`{"state":"PAUSED","state.v2":"PAUSED"}`), Partition: 0},
		cfg("file-sink", `{"connector.class":"FileStreamSink","file":"out.txt","topics":"t","name":"file-sink"}`),
		cfg("own-src", `{"connector.class":"FileStreamSource","file":"own.txt","topic":"t","offsets.storage.topic":"own-offsets","name":"own-src"}`),
		cfg("nope", `{"connector.class":"com.example.NopeConnector","name":"nope"}`),
		// A connector deleted before: listed nowhere.
		cfg("gone", `{"connector.class":"FileStreamSource","name":"gone"}`),
		offsetstore.Record{Key: []byte("connector-gone"), Partition: 0})
	write(t, brokers, offsetsTopic,
		offsetstore.Record{Key: []byte(`["file-src",{"filename":"in.txt"}]`), Value: []byte(`{"position":30}`), Partition: -1})
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(testContext(t), cl, "own-offsets", 3, map[string]string{"cleanup.policy": "compact"}))
	write(t, brokers, statusTopic,
		offsetstore.Record{Key: []byte("status-topic-t:connector-file-src"),
			Value: []byte(`{"topic":{"name":"t","connector":"file-src","task":0,"discoverTimestamp":1700000000000}}`), Partition: -1},
		offsetstore.Record{Key: []byte("status-topic-gone:connector-file-src"),
			Value: []byte(`{"topic":{"name":"gone","connector":"file-src","task":0,"discoverTimestamp":1700000000000}}`), Partition: -1},
		offsetstore.Record{Key: []byte("status-topic-gone:connector-file-src"), Partition: -1})
	kafkatest.CommitEntries(t, brokers, "connect-file-sink", kafkatest.GroupEntry{Topic: "t", Partition: 0, Offset: 7, Epoch: -1})
}

// step is one call of a script and what it must answer: the status, and the body exactly
// (JSON, any key order) or, with contains, a part of it; check looks at the topics after.
type step struct {
	name         string
	method, path string
	body         string
	code         int
	want         string
	contains     bool
	check        func(t *testing.T)
}

func runSteps(t *testing.T, base string, steps []step) {
	t.Helper()
	for _, s := range steps {
		ok := t.Run(s.name, func(t *testing.T) {
			code, got := call(t, base, s.method, s.path, s.body)
			require.Equal(t, s.code, code, got)
			switch {
			case s.contains:
				require.Contains(t, got, s.want)
			case s.want == "":
				require.Empty(t, got)
			default:
				require.JSONEq(t, s.want, got)
			}
			if s.check != nil {
				s.check(t)
			}
		})
		if !ok {
			return // later steps build on this one
		}
	}
}

const fileSrcInfo = `{"name":"file-src","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"in.txt","topic":"t","name":"file-src"},"tasks":[],"type":"source"}`

// TestCalls drives every call of the REST API over a fleet written as a worker writes it, in
// order, and checks each answer and what each write left in the topics.
func TestCalls(t *testing.T) {
	brokers := startBroker(t)
	fleet(t, brokers)
	base := serve(t, brokers, nil)
	notStopped := `{"error_code":400,"message":"Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/file-src/stop' endpoint"}`
	srcPatch := func(position string) string {
		return `{"offsets":[{"partition":{"filename":"in.txt"},"offset":{"position":` + position + `}}]}`
	}
	fileSrcKey := `["file-src",{"filename":"in.txt"}]`
	runSteps(t, base, []step{
		{name: "root", method: "GET", path: "/", code: 200, want: `{"version":"4.3.1","commit":"connectsim","kafka_cluster_id":"kfake"}`},
		{name: "list", method: "GET", path: "/connectors", code: 200, want: `["file-sink","file-src","nope","own-src"]`},
		{name: "list expanded", method: "GET", path: "/connectors?expand=status&expand=info", code: 200, want: `{
			"file-src":{"status":{"name":"file-src","connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"source"},"info":` + fileSrcInfo + `},
			"file-sink":{"status":{"name":"file-sink","connector":{"state":"PAUSED","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"sink"},
				"info":{"name":"file-sink","config":{"connector.class":"FileStreamSink","file":"out.txt","topics":"t","name":"file-sink"},"tasks":[],"type":"sink"}},
			"own-src":{"status":{"name":"own-src","connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"source"},
				"info":{"name":"own-src","config":{"connector.class":"FileStreamSource","file":"own.txt","topic":"t","offsets.storage.topic":"own-offsets","name":"own-src"},"tasks":[],"type":"source"}},
			"nope":{"status":{"name":"nope","connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083"},"tasks":[],"type":"unknown"},
				"info":{"name":"nope","config":{"connector.class":"com.example.NopeConnector","name":"nope"},"tasks":[],"type":"unknown"}}}`},
		// One parameter "status,info" is no expansion Connect knows: ignored.
		{name: "list with an unknown expansion", method: "GET", path: "/connectors?expand=status,info", code: 200,
			want: `{"file-src":{},"file-sink":{},"own-src":{},"nope":{}}`},
		{name: "info", method: "GET", path: "/connectors/file-src", code: 200, want: fileSrcInfo},
		{name: "info of an unknown connector", method: "GET", path: "/connectors/missing", code: 404, want: `{"error_code":404,"message":"Connector missing not found"}`},
		{name: "config", method: "GET", path: "/connectors/file-src/config", code: 200,
			want: `{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"in.txt","topic":"t","name":"file-src"}`},
		{name: "status", method: "GET", path: "/connectors/file-sink/status", code: 200,
			want: `{"name":"file-sink","connector":{"state":"PAUSED","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"sink"}`},
		{name: "status of an unknown connector", method: "GET", path: "/connectors/missing/status", code: 404,
			want: `{"error_code":404,"message":"No status found for connector missing"}`},
		{name: "tasks", method: "GET", path: "/connectors/file-src/tasks", code: 200, want: `[]`},
		{name: "active topics", method: "GET", path: "/connectors/file-src/topics", code: 200, want: `{"file-src":{"topics":["t"]}}`},
		{name: "active topics of a sink without any", method: "GET", path: "/connectors/file-sink/topics", code: 200, want: `{"file-sink":{"topics":[]}}`},
		{name: "source offsets", method: "GET", path: "/connectors/file-src/offsets", code: 200,
			want: `{"offsets":[{"partition":{"filename":"in.txt"},"offset":{"position":30}}]}`},
		{name: "sink offsets", method: "GET", path: "/connectors/file-sink/offsets", code: 200,
			want: `{"offsets":[{"partition":{"kafka_partition":0,"kafka_topic":"t"},"offset":{"kafka_offset":7}}]}`},
		{name: "offsets of an unknown connector", method: "GET", path: "/connectors/missing/offsets", code: 404, want: `{"error_code":404,"message":"Connector missing not found"}`},
		{name: "alter without offsets", method: "PATCH", path: "/connectors/file-src/offsets", body: `{}`, code: 400,
			want: `{"error_code":400,"message":"Partitions / offsets need to be provided for an alter offsets request"}`},
		{name: "alter with an empty list", method: "PATCH", path: "/connectors/file-src/offsets", body: `{"offsets":[]}`, code: 400,
			want: `{"error_code":400,"message":"Partitions / offsets need to be provided for an alter offsets request"}`},
		{name: "alter with an unknown field", method: "PATCH", path: "/connectors/file-src/offsets", body: `{"offsetz":[]}`, code: 500,
			want: `Unrecognized field \"offsetz\"`, contains: true},
		{name: "alter an unknown connector", method: "PATCH", path: "/connectors/missing/offsets", body: srcPatch("1"), code: 404,
			want: `{"error_code":404,"message":"Connector missing not found"}`},
		{name: "alter a running connector", method: "PATCH", path: "/connectors/file-src/offsets", body: srcPatch("99"), code: 400, want: notStopped},
		{name: "stop an unknown connector", method: "PUT", path: "/connectors/missing/stop", code: 404, want: `{"error_code":404,"message":"Unknown connector missing"}`},
		{name: "stop", method: "PUT", path: "/connectors/file-src/stop", code: 204, check: func(t *testing.T) {
			recs := rawRecords(t, brokers, configTopic)
			last := recs[len(recs)-2:]
			require.Equal(t, "commit-file-src", string(last[0].Key))
			require.Equal(t, `{"tasks":0}`, string(last[0].Value))
			require.Equal(t, "target-state-file-src", string(last[1].Key))
			require.Equal(t, `{"state":"PAUSED","state.v2":"STOPPED"}`, string(last[1].Value))
		}},
		{name: "stopped", method: "GET", path: "/connectors/file-src/status", code: 200,
			want: `{"name":"file-src","connector":{"state":"STOPPED","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"source"}`},
		{name: "alter a stopped source", method: "PATCH", path: "/connectors/file-src/offsets", body: srcPatch("99"), code: 200,
			want: `{"message":"The offsets for this connector have been altered successfully"}`, check: func(t *testing.T) {
				require.Equal(t, `{"position":99}`, lastRecord(t, brokers, offsetsTopic, fileSrcKey))
			}},
		{name: "altered", method: "GET", path: "/connectors/file-src/offsets", code: 200,
			want: `{"offsets":[{"partition":{"filename":"in.txt"},"offset":{"position":99}}]}`},
		{name: "alter refused by the class", method: "PATCH", path: "/connectors/file-src/offsets", body: srcPatch("-1"), code: 500,
			want: `{"error_code":500,"message":"The value for the 'position' key in the offset should be a non-negative value"}`},
		{name: "alter with a nested map", method: "PATCH", path: "/connectors/file-src/offsets",
			body: `{"offsets":[{"partition":{"filename":{"a":1}},"offset":{"position":1}}]}`, code: 500,
			want: `{"error_code":500,"message":"Offsets may only contain primitive types as values, but field filename contains MAP"}`},
		{name: "reset a partition", method: "PATCH", path: "/connectors/file-src/offsets",
			body: `{"offsets":[{"partition":{"filename":"in.txt"},"offset":null}]}`, code: 200,
			want: `{"message":"The offsets for this connector have been altered successfully"}`, check: func(t *testing.T) {
				require.Equal(t, "<nil>", lastRecord(t, brokers, offsetsTopic, fileSrcKey))
			}},
		{name: "none left", method: "GET", path: "/connectors/file-src/offsets", code: 200, want: `{"offsets":[]}`},
		{name: "stop the sink", method: "PUT", path: "/connectors/file-sink/stop", code: 204},
		{name: "alter a stopped sink", method: "PATCH", path: "/connectors/file-sink/offsets",
			body: `{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":42}},{"partition":{"kafka_topic":"t","kafka_partition":"1"},"offset":{"kafka_offset":"5"}}]}`,
			code: 200, want: `{"message":"The offsets for this connector have been altered successfully"}`, check: func(t *testing.T) {
				// What Connect's PATCH commits: no leader epoch, empty metadata.
				require.Equal(t, kafkatest.PatchEntries(map[string]int64{"t/0": 42, "t/1": 5}), kafkatest.GroupEntries(t, brokers, "connect-file-sink"))
			}},
		{name: "alter a sink with a bad partition", method: "PATCH", path: "/connectors/file-sink/offsets",
			body: `{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":"x"},"offset":{"kafka_offset":1}}]}`, code: 400,
			want: `{"error_code":400,"message":"Failed to parse the following Kafka partition value in the provided offsets: 'x'. Partition values for sink connectors need to be integers."}`},
		{name: "delete a sink partition's offset", method: "PATCH", path: "/connectors/file-sink/offsets",
			body: `{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":null}]}`, code: 200,
			want: `{"message":"The offsets for this connector have been altered successfully"}`, check: func(t *testing.T) {
				require.Equal(t, kafkatest.PatchEntries(map[string]int64{"t/0": 42}), kafkatest.GroupEntries(t, brokers, "connect-file-sink"))
			}},
		{name: "reset a sink", method: "DELETE", path: "/connectors/file-sink/offsets", code: 200,
			want: `{"message":"The offsets for this connector have been reset successfully"}`},
		{name: "its group is gone", method: "GET", path: "/connectors/file-sink/offsets", code: 200, want: `{"offsets":[]}`},
		{name: "resume", method: "PUT", path: "/connectors/file-sink/resume", code: 202, check: func(t *testing.T) {
			require.Equal(t, `{"state":"STARTED","state.v2":"STARTED"}`, lastRecord(t, brokers, configTopic, "target-state-file-sink"))
		}},
		{name: "resumed", method: "GET", path: "/connectors/file-sink/status", code: 200,
			want: `{"name":"file-sink","connector":{"state":"RUNNING","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"sink"}`},
		{name: "reset a running connector", method: "DELETE", path: "/connectors/file-sink/offsets", code: 400,
			want: `Connectors must be in the STOPPED state`, contains: true},
		{name: "pause", method: "PUT", path: "/connectors/file-sink/pause", code: 202, check: func(t *testing.T) {
			require.Equal(t, `{"state":"PAUSED","state.v2":"PAUSED"}`, lastRecord(t, brokers, configTopic, "target-state-file-sink"))
		}},
		{name: "pause an unknown connector", method: "PUT", path: "/connectors/missing/pause", code: 404, want: `{"error_code":404,"message":"Unknown connector missing"}`},
		{name: "restart", method: "POST", path: "/connectors/file-sink/restart", code: 204},
		{name: "restart with its tasks", method: "POST", path: "/connectors/file-sink/restart?includeTasks=true", code: 202,
			want: `{"name":"file-sink","connector":{"state":"PAUSED","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"sink"}`},
		{name: "restart an unknown connector", method: "POST", path: "/connectors/missing/restart", code: 404, want: `{"error_code":404,"message":"Unknown connector: missing"}`},
		{name: "stop a source with its own offsets topic", method: "PUT", path: "/connectors/own-src/stop", code: 204},
		{name: "alter it", method: "PATCH", path: "/connectors/own-src/offsets",
			body: `{"offsets":[{"partition":{"filename":"own.txt"},"offset":{"position":12}}]}`, code: 200,
			want: `{"message":"The offsets for this connector have been altered successfully"}`, check: func(t *testing.T) {
				// Its own topic and the worker's (KIP-618).
				key := `["own-src",{"filename":"own.txt"}]`
				require.Equal(t, `{"position":12}`, lastRecord(t, brokers, "own-offsets", key))
				require.Equal(t, `{"position":12}`, lastRecord(t, brokers, offsetsTopic, key))
			}},
		{name: "reset it", method: "DELETE", path: "/connectors/own-src/offsets", code: 200,
			want: `{"message":"The offsets for this connector have been reset successfully"}`, check: func(t *testing.T) {
				key := `["own-src",{"filename":"own.txt"}]`
				require.Equal(t, "<nil>", lastRecord(t, brokers, "own-offsets", key))
				require.Equal(t, "<nil>", lastRecord(t, brokers, offsetsTopic, key))
			}},
		{name: "create by config", method: "PUT", path: "/connectors/new-src/config",
			body: `{"connector.class":"FileStreamSource","file":"n.txt","topic":"t","tasks.max":1}`, code: 201,
			want: `{"name":"new-src","config":{"connector.class":"FileStreamSource","file":"n.txt","topic":"t","tasks.max":"1","name":"new-src"},"tasks":[],"type":"source"}`,
			check: func(t *testing.T) {
				require.Equal(t, `{"properties":{"connector.class":"FileStreamSource","file":"n.txt","topic":"t","tasks.max":"1","name":"new-src"}}`,
					lastRecord(t, brokers, configTopic, "connector-new-src"))
			}},
		{name: "update by config", method: "PUT", path: "/connectors/new-src/config",
			body: `{"connector.class":"FileStreamSource","name":"new-src","file":"m.txt","topic":"t"}`, code: 200,
			want: `{"name":"new-src","config":{"connector.class":"FileStreamSource","name":"new-src","file":"m.txt","topic":"t"},"tasks":[],"type":"source"}`},
		{name: "config with another name", method: "PUT", path: "/connectors/new-src/config", body: `{"connector.class":"FileStreamSource","name":"other"}`, code: 400,
			want: `{"error_code":400,"message":"Connector name configuration (other) doesn't match connector name in the URL (new-src)"}`},
		{name: "config without a class", method: "PUT", path: "/connectors/new-src/config", body: `{"file":"x"}`, code: 400,
			want: `{"error_code":400,"message":"Connector config {file=x, name=new-src} contains no connector type"}`},
		{name: "config of a class not installed", method: "PUT", path: "/connectors/new-src/config", body: `{"connector.class":"com.example.NopeConnector"}`, code: 400,
			want: `Failed to find any class that implements Connector and which name matches com.example.NopeConnector, available connectors are: PluginDesc{klass=class `, contains: true},
		{name: "create stopped", method: "POST", path: "/connectors",
			body: `{"name":"posted","config":{"connector.class":"FileStreamSink","topics":"t"},"initial_state":"stopped"}`, code: 201,
			want: `{"name":"posted","config":{"connector.class":"FileStreamSink","topics":"t","name":"posted"},"tasks":[],"type":"sink"}`, check: func(t *testing.T) {
				recs := rawRecords(t, brokers, configTopic)
				last := recs[len(recs)-2:]
				require.Equal(t, "target-state-posted", string(last[0].Key), "the target state first")
				require.Equal(t, "connector-posted", string(last[1].Key))
			}},
		{name: "created stopped", method: "GET", path: "/connectors/posted/status", code: 200,
			want: `{"name":"posted","connector":{"state":"STOPPED","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"sink"}`},
		{name: "create again", method: "POST", path: "/connectors", body: `{"name":"posted","config":{"connector.class":"FileStreamSink","topics":"t"}}`, code: 409,
			want: `{"error_code":409,"message":"Connector posted already exists"}`},
		{name: "create with initial offsets", method: "POST", path: "/connectors",
			body: `{"name":"x","config":{"connector.class":"FileStreamSink","topics":"t"},"initial_offsets":[]}`, code: 500,
			want: `Unrecognized field \"initial_offsets\"`, contains: true},
		{name: "delete", method: "DELETE", path: "/connectors/new-src", code: 204, check: func(t *testing.T) {
			require.Equal(t, "<nil>", lastRecord(t, brokers, configTopic, "connector-new-src"))
			require.Equal(t, "<nil>", lastRecord(t, brokers, configTopic, "target-state-new-src"))
		}},
		{name: "deleted", method: "GET", path: "/connectors/new-src", code: 404, want: `{"error_code":404,"message":"Connector new-src not found"}`},
		{name: "delete an unknown connector", method: "DELETE", path: "/connectors/new-src", code: 404, want: `{"error_code":404,"message":"Connector new-src not found"}`},
		{name: "plugins", method: "GET", path: "/connector-plugins", code: 200,
			want: `{"class":"org.apache.kafka.connect.file.FileStreamSinkConnector","type":"sink","version":"4.3.1"}`, contains: true},
		{name: "validate", method: "PUT", path: "/connector-plugins/FileStreamSource/config/validate",
			body: `{"connector.class":"FileStreamSource","file":"x","topic":"t"}`, code: 200,
			want: `{"name":"org.apache.kafka.connect.file.FileStreamSourceConnector","error_count":0,"groups":[],"configs":[]}`},
		{name: "validate a class not installed", method: "PUT", path: "/connector-plugins/NopeConnector/config/validate",
			body: `{"connector.class":"com.example.NopeConnector"}`, code: 500,
			want: `"org.apache.kafka.connect.runtime.rest.errors.BadRequestException: Failed to find any class that implements Connector and which name matches com.example.NopeConnector, available connectors are: `, contains: true},
		{name: "validate another class than the path's", method: "PUT", path: "/connector-plugins/FileStreamSink/config/validate",
			body: `{"connector.class":"FileStreamSource"}`, code: 400,
			want: `{"error_code":400,"message":"Included connector type FileStreamSource does not match request type FileStreamSink"}`},
		{name: "an unknown path", method: "GET", path: "/nothing", code: 404, want: `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{name: "a method the path does not take", method: "DELETE", path: "/connectors/file-src/status", code: 405,
			want: `{"error_code":405,"message":"HTTP 405 Method Not Allowed"}`},
	})
}

// A connector another writer (an agent) created after the sim loaded is found at once: a name
// the view does not hold is looked for again after reading the config topic to its end.
func TestFindsWhatAnotherWriterCreated(t *testing.T) {
	brokers := startBroker(t)
	base := serve(t, brokers, func(c *Config) { c.TopicTrackingDisabled = true })
	code, _ := call(t, base, "GET", "/connectors", "")
	require.Equal(t, 200, code)
	write(t, brokers, configTopic,
		offsetstore.Record{Key: []byte("target-state-late"), Value: []byte(`{"state":"PAUSED","state.v2":"STOPPED"}`), Partition: 0},
		offsetstore.Record{Key: []byte("connector-late"), Value: []byte(`{"properties":{"connector.class":"FileStreamSource","name":"late"}}`), Partition: 0})
	runSteps(t, base, []step{
		{name: "status", method: "GET", path: "/connectors/late/status", code: 200,
			want: `{"name":"late","connector":{"state":"STOPPED","worker_id":"127.0.0.1:8083","version":"4.3.1"},"tasks":[],"type":"source"}`},
		{name: "topic tracking disabled", method: "GET", path: "/connectors/late/topics", code: 403,
			want: `{"error_code":403,"message":"Topic tracking is disabled."}`},
	})
}

// TestFleet holds a fleet of connectors and stops them all at once, many calls in flight (run
// with -race): every one ends STOPPED, each with its own two records.
func TestFleet(t *testing.T) {
	const n = 2000
	brokers := startBroker(t)
	recs := make([]offsetstore.Record, 0, n)
	for i := range n {
		name := fmt.Sprintf("src-%04d", i)
		recs = append(recs, offsetstore.Record{Key: []byte("connector-" + name),
			Value: []byte(`{"properties":{"connector.class":"FileStreamSource","file":"f","topic":"t","name":"` + name + `"}}`), Partition: 0})
	}
	write(t, brokers, configTopic, recs...)
	base := serve(t, brokers, nil)
	g, ctx := errgroup.WithContext(testContext(t))
	g.SetLimit(64)
	for i := range n {
		g.Go(func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, fmt.Sprintf("%s/connectors/src-%04d/stop", base, i), nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				return fmt.Errorf("stop src-%04d: %d", i, resp.StatusCode)
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	code, body := call(t, base, "GET", "/connectors?expand=status", "")
	require.Equal(t, 200, code)
	var got map[string]struct {
		Status stateInfo `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got, n)
	for name, e := range got {
		require.Equal(t, "STOPPED", e.Status.Connector.State, name)
	}
	require.Len(t, rawRecords(t, brokers, configTopic), 3*n)
}

// Statuses name the plugin's version from Kafka 4.1 on (KIP-891), not before; the topics of a
// name no connector has are answered, as Connect answers them.
func TestVersionedAnswers(t *testing.T) {
	brokers := startBroker(t)
	write(t, brokers, configTopic, offsetstore.Record{Key: []byte("connector-src"),
		Value: []byte(`{"properties":{"connector.class":"FileStreamSource","name":"src"}}`), Partition: 0})
	for _, tt := range []struct{ version, want string }{
		{"3.9.1", `{"name":"src","connector":{"state":"RUNNING","worker_id":"w"},"tasks":[],"type":"source"}`},
		{"4.1.0", `{"name":"src","connector":{"state":"RUNNING","worker_id":"w","version":"4.1.0"},"tasks":[],"type":"source"}`},
	} {
		t.Run(tt.version, func(t *testing.T) {
			base := serve(t, brokers, func(c *Config) { c.Version, c.WorkerID = tt.version, "w" })
			runSteps(t, base, []step{
				{name: "status", method: "GET", path: "/connectors/src/status", code: 200, want: tt.want},
				{name: "topics of no connector", method: "GET", path: "/connectors/none/topics", code: 200, want: `{"none":{"topics":[]}}`},
			})
		})
	}
}

// BenchmarkFleetCalls measures the calls a fleet migration makes per connector against a sim
// holding 10,000 connectors (the fleet benchmark's size): each call finds its connector by name, never
// by a scan, so its cost does not grow with the fleet.
func BenchmarkFleetCalls(b *testing.B) {
	const n = 10000
	brokers := startBroker(b)
	recs := make([]offsetstore.Record, 0, n)
	offs := make([]offsetstore.Record, 0, n)
	for i := range n {
		name := fmt.Sprintf("src-%05d", i)
		recs = append(recs, offsetstore.Record{Key: []byte("connector-" + name),
			Value: []byte(`{"properties":{"connector.class":"FileStreamSource","file":"f","topic":"t","name":"` + name + `"}}`), Partition: 0})
		offs = append(offs, offsetstore.Record{Key: []byte(`["` + name + `",{"filename":"f"}]`), Value: []byte(`{"position":1}`), Partition: -1})
	}
	write(b, brokers, configTopic, recs...)
	write(b, brokers, offsetsTopic, offs...)
	base := serve(b, brokers, nil)
	for _, bc := range []struct{ name, method, path string }{
		{"status", "GET", "/connectors/src-%05d/status"},
		{"offsets", "GET", "/connectors/src-%05d/offsets"},
		{"stop", "PUT", "/connectors/src-%05d/stop"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				code, _ := call(b, base, bc.method, fmt.Sprintf(bc.path, i%n), "")
				if code/100 != 2 {
					b.Fatalf("%s: %d", bc.name, code)
				}
				i++
			}
		})
	}
	b.Run("list expanded", func(b *testing.B) {
		for b.Loop() {
			if code, _ := call(b, base, "GET", "/connectors?expand=status&expand=info", ""); code != 200 {
				b.Fatal(code)
			}
		}
	})
}
