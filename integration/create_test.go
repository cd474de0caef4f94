package integration

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

const resultWait = 30 * time.Second

type goldenRecord struct {
	Partition int     `json:"partition"`
	Key       string  `json:"key"`
	Value     *string `json:"value"`
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func records(msgs []kafka.Message) []goldenRecord {
	out := []goldenRecord{}
	for _, m := range msgs {
		r := goldenRecord{Partition: m.Partition, Key: string(m.Key)}
		if m.Value != nil {
			v := string(m.Value)
			r.Value = &v
		}
		out = append(out, r)
	}
	return out
}

// The seed example, in both binding modes: the exact records a Connect worker would have
// written, the result event and the metrics.
func TestCreateSourceConnectorExactRecords(t *testing.T) {
	for _, mode := range []events.Mode{events.ModeBinary, events.ModeStructured} {
		t.Run(string(mode), func(t *testing.T) {
			c := startCluster(t)
			cfg := testConfig(c)
			cfg.RequestTopicPartitions = 1
			a := startAgent(t, cfg, agent.Options{})
			cl := newClient(t, cfg)

			id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{Mode: mode})
			res := cl.waitResult(id, resultWait)

			require.Equal(t, events.TypeCreateSucceeded, res.Type)
			require.Equal(t, "file-src-1", string(res.Msg.Key), "result record key is the connector name")
			d := res.Data
			require.Equal(t, id, d.RequestID)
			require.Equal(t, "/integration-test", d.RequestSource)
			require.Equal(t, "source", d.Type)
			require.Equal(t, "RUNNING", d.InitialState)
			require.Equal(t, "The offsets for this connector have been altered successfully", d.InitialOffsetsResponse)
			require.Equal(t, 1, *d.OffsetsWritten)
			require.Equal(t, 0, *d.OffsetsWiped)
			require.Equal(t, `{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"test.txt","topic":"test-topic","tasks.max":"1","name":"file-src-1"}`, mustJSON(t, d.Config))
			var stages []string
			for _, s := range d.Stages {
				require.Equal(t, events.OutcomeOK, s.Outcome, s.Stage)
				stages = append(stages, s.Stage)
			}
			require.Equal(t, []string{"validate_config", "validate_offsets", "wipe_offsets", "write_offsets", "write_config"}, stages)

			var golden struct{ Config, Offsets []goldenRecord }
			require.NoError(t, json.Unmarshal([]byte(readFile(t, "testdata/file-src-1.records.golden.json")), &golden))
			require.Equal(t, golden.Config, records(cl.readAll(cfg.ConfigTopic)))
			require.Equal(t, golden.Offsets, records(cl.readAll(cfg.OffsetsTopic)))

			require.Equal(t, 1.0, a.metric(t, "offsetagent_requests_total", "result", "succeeded"))
			require.Equal(t, 1.0, a.metric(t, "offsetagent_offsets_written_total", "type", "source"))
			require.Equal(t, 6, a.histogramCount(t, "offsetagent_stage_duration_seconds"), "one observation per executed stage, decode_request included")
			require.Equal(t, 1, a.histogramCount(t, "offsetagent_request_duration_seconds"))
			require.Equal(t, 0.0, a.metric(t, "offsetagent_requests_in_flight"))
			code, _ := a.get(t, "/readyz")
			require.Equal(t, 200, code)
			code, body := a.get(t, "/metrics")
			require.Equal(t, 200, code)
			require.Contains(t, body, `offsetagent_stage_failures_total{error_code="500",stage="write_config"} 0`, "series are pre-initialised")
		})
	}
}

// MirrorMaker 2 offsets given in the PATCH-body shape: HashMap key order, murmur2 partition 19 of
// 25 for the documented vector (docs/connect-internals.md, "Partitioning"), an integer beyond
// float64's exact range kept exact, a null offset writing nothing, and initial_state STOPPED in its
// two-field form.
func TestCreateMirrorSourceStopped(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)

	id := cl.publish(readFile(t, "testdata/mm2-source.json"), events.RequestOptions{Mode: events.ModeStructured})
	res := cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, "STOPPED", res.Data.InitialState)
	require.Equal(t, 2, *res.Data.OffsetsWritten)

	live := cl.live(cfg.OffsetsTopic)
	require.Equal(t, map[string]liveRecord{
		`["mm2-source",{"cluster":"A","partition":0,"topic":"orders"}]`: {Partition: 19, Value: `{"offset":9007199254740993}`},
		`["mm2-source",{"cluster":"A","partition":1,"topic":"orders"}]`: {Partition: partitionOf(`["mm2-source",{"cluster":"A","partition":1,"topic":"orders"}]`), Value: `{"offset":7}`},
	}, live)
	cfgRecs := records(cl.readAll(cfg.ConfigTopic))
	require.Len(t, cfgRecs, 2)
	require.Equal(t, "target-state-mm2-source", cfgRecs[0].Key)
	require.Equal(t, `{"state":"PAUSED","state.v2":"STOPPED"}`, *cfgRecs[0].Value)
	require.Equal(t, `{"properties":{"connector.class":"MirrorSourceConnector","source.cluster.alias":"A","target.cluster.alias":"B","topics":"orders","tasks.max":"2","name":"mm2-source"}}`, *cfgRecs[1].Value)
}

// Existing offsets of the name (a deleted connector's leftovers) are tombstoned with their
// original key bytes, reported in previous_offsets, and replaced.
func TestCreateWipesPreviousOffsets(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	a := startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	// Leftovers written by an old worker: one the request replaces, one it does not mention,
	// and another connector's key that must stay.
	cl.produce(cfg.OffsetsTopic,
		kafka.Message{Key: []byte(`["file-src-1",{"filename":"test.txt"}]`), Value: []byte(`{"position":99}`)},
		kafka.Message{Key: []byte(`["file-src-1",{"filename":"old.txt"}]`), Value: []byte(`{"position":5}`)},
		kafka.Message{Key: []byte(`["other",{"filename":"test.txt"}]`), Value: []byte(`{"position":1}`)},
	)
	id := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	res := cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, 2, *res.Data.OffsetsWiped)
	require.Equal(t, []string{
		`{"partition":{"filename":"old.txt"},"offset":{"position":5}}`,
		`{"partition":{"filename":"test.txt"},"offset":{"position":99}}`,
	}, offsetSet(t, res.Data.PreviousOffsets))
	require.Equal(t, map[string]liveRecord{
		`["file-src-1",{"filename":"test.txt"}]`: {Partition: 2, Value: `{"position":30}`},
		`["other",{"filename":"test.txt"}]`:      {Partition: partitionOf(`["other",{"filename":"test.txt"}]`), Value: `{"position":1}`},
	}, cl.live(cfg.OffsetsTopic))
	require.Equal(t, 2.0, a.metric(t, "offsetagent_offsets_wiped_total", "type", "source"))
}

// A sink connector: its group (connect-<name>) loses its old offsets and gets the initial ones.
func TestCreateSinkConnector(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	a := startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	cl.createTopic("orders", 3)
	commitGroup(t, cl, "connect-jdbc-sink", map[int]int64{0: 40, 2: 41}, "orders")

	body := `{"name":"jdbc-sink","config":{"connector.class":"io.confluent.connect.jdbc.JdbcSinkConnector","topics":"orders","tasks.max":"1"},
	  "initial_offsets":[
	    {"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":5}},
	    {"partition":{"kafka_topic":"orders","kafka_partition":"1"},"offset":{"kafka_offset":"6"}},
	    {"partition":{"kafka_topic":"orders","kafka_partition":2},"offset":null}]}`
	id := cl.publish(body, events.RequestOptions{})
	res := cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, "sink", res.Data.Type)
	require.Equal(t, "The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses.", res.Data.InitialOffsetsResponse)
	require.Equal(t, map[string]int64{"orders/0": 5, "orders/1": 6}, cl.groupOffsets("connect-jdbc-sink"))
	require.Equal(t, kafkatest.PatchEntries(map[string]int64{"orders/0": 5, "orders/1": 6}), cl.groupEntries("connect-jdbc-sink"),
		"the entries Connect's PATCH commits")
	require.Equal(t, []string{
		`{"partition":{"kafka_partition":0,"kafka_topic":"orders"},"offset":{"kafka_offset":40}}`,
		`{"partition":{"kafka_partition":2,"kafka_topic":"orders"},"offset":{"kafka_offset":41}}`,
	}, offsetSet(t, res.Data.PreviousOffsets))
	require.Equal(t, 2.0, a.metric(t, "offsetagent_offsets_written_total", "type", "sink"))
	require.Equal(t, 2.0, a.metric(t, "offsetagent_offsets_wiped_total", "type", "sink"))
}

// Bad requests each get a clear failed result naming the step; none stalls the partition (the
// valid request published after them still succeeds) and none writes anything.
func TestFailedRequests(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	a := startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)

	cases := []struct {
		name, body, step, message string
		code                      int
	}{
		{"no connector class", `{"name":"x1","config":{"tasks.max":"1"}}`, "validate_config", "Connector config {tasks.max=1, name=x1} contains no connector type", 400},
		{"name mismatch", `{"name":"x2","config":{"connector.class":"FileStreamSource","name":"y"}}`, "validate_config", "Connector name configuration (y) doesn't match connector name in the URL (x2)", 400},
		{"tasks.max zero", `{"name":"x3","config":{"connector.class":"FileStreamSource","tasks.max":"0"}}`, "validate_config",
			"Connector configuration is invalid and contains the following 1 error(s):\nInvalid value 0 for configuration tasks.max: Value must be at least 1\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`", 400},
		{"control character", "{\"name\":\"x\\u0007y\",\"config\":{\"connector.class\":\"FileStreamSource\"}}", "validate_config",
			"Connector configuration is invalid and contains the following 1 error(s):\nInvalid value x\ay for configuration name: String may not contain control sequences but had the following ASCII chars: 7\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`", 400},
		{"empty offsets", `{"name":"x5","config":{"connector.class":"FileStreamSource","file":"a"},"initial_offsets":[]}`, "validate_offsets", "Partitions / offsets need to be provided for an alter offsets request", 400},
		{"sink partition missing", `{"name":"x6","config":{"connector.class":"FileStreamSink","topics":"t"},"initial_offsets":[{"offset":{"kafka_offset":1}}]}`, "validate_offsets", "The partition for a sink connector offset cannot be null or missing", 400},
		{"nested source offset", `{"name":"x7","config":{"connector.class":"com.example.Src"},"initial_offsets":[{"partition":{"a":"b"},"offset":{"o":{"n":1}}}]}`, "validate_offsets", "", 400},
		{"filestream without file", `{"name":"x8","config":{"connector.class":"FileStreamSource"},"initial_offsets":[{"partition":{"filename":"a"},"offset":{"position":1}}]}`, "validate_offsets",
			"Offsets cannot be modified if the 'file' configuration is unspecified. This is because stdin is used for input and offsets are not tracked.", 500},
		{"bad initial state", `{"name":"x9","config":{"connector.class":"FileStreamSource"},"initial_state":"RUNNING_FAST"}`, "validate_config", "", 400},
		{"sink topic missing", `{"name":"x10","config":{"connector.class":"FileStreamSink","topics":"nope"},"initial_offsets":[{"partition":{"kafka_topic":"nope","kafka_partition":0},"offset":{"kafka_offset":1}}]}`,
			"validate_offsets", "Topic nope of the sink connector's initial offsets does not exist", 400},
		{"not json", `{"name":`, "decode_request", "", 400},
		{"json array", `[1,2]`, "decode_request", "", 400},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		ids[i] = cl.publish(tc.body, events.RequestOptions{Key: "k"})
	}
	// A record that is no CloudEvent at all.
	cl.publishRaw(kafka.Message{Key: []byte("garbage"), Value: []byte{0xff, 0xfe}})
	okID := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := cl.waitResult(ids[i], resultWait)
			require.Equal(t, events.TypeCreateFailed, res.Type)
			require.Equal(t, tc.step, res.Data.FailedStep)
			require.Equal(t, tc.code, res.Data.ErrorCode, res.Data.Message)
			if tc.message != "" {
				require.Equal(t, tc.message, res.Data.Message)
			} else {
				require.NotEmpty(t, res.Data.Message)
			}
			require.NotNil(t, res.Data.Cleanup)
			require.Contains(t, res.Data.Cleanup.Summary, "nothing to undo")
		})
	}
	res := cl.waitResult(okID, resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type)
	all := cl.waitResults(len(cases)+2, resultWait)
	var garbage *result
	for i := range all {
		if all[i].Data.Name == "garbage" {
			garbage = &all[i]
		}
	}
	require.NotNil(t, garbage, "the undecodable record got a result")
	require.Equal(t, "decode_request", garbage.Data.FailedStep)
	require.Contains(t, garbage.Data.Message, cfg.RequestTopic+"/0@")
	// Only the valid request touched Connect's topics.
	require.Len(t, cl.readAll(cfg.ConfigTopic), 2)
	require.Equal(t, float64(len(cases)+1), a.metric(t, "offsetagent_requests_total", "result", "failed"))
	require.Equal(t, 3.0, a.failures(t, "decode_request"))
}

// A second request for an existing connector is a 409 with Connect's text and touches nothing.
func TestCreateExistingConnectorConflicts(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	first := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(first, resultWait).Type)
	second := cl.publish(strings.Replace(readFile(t, "testdata/file-src-1.json"), `"position": 30`, `"position": 31`, 1), events.RequestOptions{})
	res := cl.waitResult(second, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type)
	require.Equal(t, 409, res.Data.ErrorCode)
	require.Equal(t, "Connector file-src-1 already exists", res.Data.Message)
	require.Equal(t, map[string]liveRecord{`["file-src-1",{"filename":"test.txt"}]`: {Partition: 2, Value: `{"position":30}`}}, cl.live(cfg.OffsetsTopic))
}

// Requests published while no agent runs are processed when one starts (a new group begins at
// the earliest request), and a redelivered request (same source and id) is not run twice.
func TestRequestsBeforeStartAndDuplicates(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 3)
	body := readFile(t, "testdata/file-src-1.json")
	cl.publish(body, events.RequestOptions{ID: "req-1"})
	cl.publish(body, events.RequestOptions{ID: "req-1"}) // a producer retry
	a := startAgent(t, cfg, agent.Options{})
	res := cl.waitResult("req-1", resultWait)
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Eventually(t, func() bool { return a.metric(t, "offsetagent_requests_total", "result", "duplicate") == 1 }, resultWait, 20*time.Millisecond)
	a.stop(t)

	// A restarted agent remembers the result from the result topic.
	cl.publish(body, events.RequestOptions{ID: "req-1"})
	b := startAgent(t, cfg, agent.Options{})
	require.Eventually(t, func() bool { return b.metric(t, "offsetagent_requests_total", "result", "duplicate") == 1 }, resultWait, 20*time.Millisecond)
	require.Len(t, cl.allResults(), 1, "exactly one result for one request")
}
