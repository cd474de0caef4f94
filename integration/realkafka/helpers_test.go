package realkafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
)

// rest calls the worker's REST API and returns the status and the body.
func rest(t *testing.T, w *realkafka.Worker, method, path string, body any) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, resp, err := w.Do(ctx, method, path, body)
	require.NoError(t, err, "%s %s", method, path)
	return status, string(resp)
}

// restOK calls the worker's REST API and requires a 2xx answer.
func restOK(t *testing.T, w *realkafka.Worker, method, path string, body any) string {
	t.Helper()
	status, resp := rest(t, w, method, path, body)
	require.True(t, status/100 == 2, "%s %s: %d %s", method, path, status, resp)
	return resp
}

// connectorStatus is GET /connectors/NAME/status.
type connectorStatus struct {
	Connector struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
	Type string `json:"type"`
}

// waitState waits until the worker reports the connector and its tasks in state (see tasksIn).
func waitState(t *testing.T, w *realkafka.Worker, name, state string) connectorStatus {
	t.Helper()
	var last connectorStatus
	var lastBody string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		status, body := rest(t, w, http.MethodGet, "/connectors/"+name+"/status", nil)
		lastBody = body
		if status == http.StatusOK {
			last = connectorStatus{}
			require.NoError(t, json.Unmarshal([]byte(body), &last))
			if last.Connector.State == "FAILED" {
				t.Fatalf("connector %s failed: %s", name, body)
			}
			if last.Connector.State == state && tasksIn(last, state) {
				return last
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("connector %s never reached %s; last status: %s", name, state, lastBody)
	return last
}

// tasksIn: a STOPPED connector has no tasks; a RUNNING one has at least one, all RUNNING; a
// connector created PAUSED has none yet (its tasks are configured when it is resumed, also when
// Connect's own POST /connectors creates it PAUSED), and any it has are PAUSED.
func tasksIn(s connectorStatus, state string) bool {
	switch state {
	case "STOPPED":
		return len(s.Tasks) == 0
	case "RUNNING":
		if len(s.Tasks) == 0 {
			return false
		}
	}
	for _, tk := range s.Tasks {
		if tk.State != state {
			return false
		}
	}
	return true
}

// offsetsOf is GET /connectors/NAME/offsets, as returned.
func offsetsOf(t *testing.T, w *realkafka.Worker, name string) string {
	t.Helper()
	return restOK(t, w, http.MethodGet, "/connectors/"+name+"/offsets", nil)
}

// requireOffsets requires GET /connectors/NAME/offsets to equal want (JSON, entries in any order).
func requireOffsets(t *testing.T, w *realkafka.Worker, name, want string) {
	t.Helper()
	require.Equal(t, sortedOffsets(t, want), sortedOffsets(t, offsetsOf(t, w, name)), "GET /connectors/%s/offsets", name)
}

func sortedOffsets(t *testing.T, s string) []string {
	t.Helper()
	var v struct {
		Offsets []json.RawMessage `json:"offsets"`
	}
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	out := make([]string, len(v.Offsets))
	for i, e := range v.Offsets {
		var x any
		require.NoError(t, json.Unmarshal(e, &x))
		b, _ := json.Marshal(x) // sorted keys
		out[i] = string(b)
	}
	sort.Strings(out)
	return out
}

// record is one record of a topic.
type record struct {
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte // nil for a tombstone
}

func (r record) String() string {
	v := "null"
	if r.Value != nil {
		v = string(r.Value)
	}
	return fmt.Sprintf("p%d key=%s value=%s", r.Partition, r.Key, v)
}

// transport refreshes metadata every second: kafka-go's shared default caches it for 6 s and
// would not see the topics the agents and the worker create meanwhile.
var transport = &kafka.Transport{MetadataTTL: time.Second}

func kafkaClient() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(peers.brokers...), Timeout: 10 * time.Second, Transport: transport}
}

// readTopic returns every record of every partition of topic up to its current end.
func readTopic(t *testing.T, topic string) []record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := kafkaClient()
	require.Eventually(t, func() bool { return exists(t, topic) }, 30*time.Second, 100*time.Millisecond, "topic %s", topic)
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	require.NoError(t, err)
	require.Len(t, md.Topics, 1)
	require.NoError(t, md.Topics[0].Error, "topic %s", topic)
	req := map[string][]kafka.OffsetRequest{}
	for _, p := range md.Topics[0].Partitions {
		req[topic] = append(req[topic], kafka.LastOffsetOf(p.ID))
	}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: req})
	require.NoError(t, err)
	var out []record
	for _, po := range lo.Topics[topic] {
		require.NoError(t, po.Error)
		if po.LastOffset == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: peers.brokers, Topic: topic, Partition: po.Partition,
			MaxWait: 100 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			require.NoError(t, err, "read %s[%d]", topic, po.Partition)
			out = append(out, record{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value})
			if m.Offset >= po.LastOffset-1 {
				break
			}
		}
		r.Close()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// offsetRecords returns the records of an offsets topic whose key belongs to connector name.
func offsetRecords(t *testing.T, topic, name string) []record {
	t.Helper()
	prefix, _ := json.Marshal(name)
	prefix = append(append([]byte("["), prefix...), ',')
	var out []record
	for _, r := range readTopic(t, topic) {
		if bytes.HasPrefix(r.Key, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// waitValues waits until topic holds exactly n records and returns their values.
func waitValues(t *testing.T, topic string, n int) []string {
	t.Helper()
	var vals []string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if exists(t, topic) {
			vals = vals[:0]
			for _, r := range readTopic(t, topic) {
				vals = append(vals, string(r.Value))
			}
			if len(vals) >= n {
				return vals
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("topic %s has %d records, want %d: %q", topic, len(vals), n, vals)
	return nil
}

func exists(t *testing.T, topic string) bool {
	t.Helper()
	md, err := kafkaClient().Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return false
	}
	return len(md.Topics) == 1 && md.Topics[0].Error == nil && len(md.Topics[0].Partitions) > 0
}

// createTopic creates a topic (compacted when compact is true).
func createTopic(t *testing.T, topic string, partitions int, compact bool) {
	t.Helper()
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}
	if compact {
		tc.ConfigEntries = []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}
	}
	res, err := kafkaClient().CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	require.NoError(t, err)
	if err := res.Errors[topic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return exists(t, topic) }, 30*time.Second, 100*time.Millisecond)
}

// produce writes values to partition 0 of topic, in order.
func produce(t *testing.T, topic string, values ...string) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(peers.brokers...), Topic: topic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: transport}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, msgs...))
}

// numbered returns format applied to 0..n-1.
func numbered(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// lines returns n lines "<prefix>-<i>" from first, and their byte length with newlines.
func lines(prefix string, first, n int) (string, int) {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%s-%02d\n", prefix, i)
	}
	return b.String(), b.Len()
}

// writeFile writes content to a new file in the run's folder and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	d, err := subdir("files")
	require.NoError(t, err)
	p := filepath.Join(d, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// jsonString is s as a JSON string, as the JsonConverter writes a string value without schema.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// eachJSON marshals v or fails.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// groupOffsets returns the committed offsets of group on topic, as "offset metadata=<m>" by partition.
func groupOffsets(t *testing.T, group, topic string) map[int]string {
	t.Helper()
	res, err := kafkaClient().OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group,
		Topics: map[string][]int{topic: {0, 1, 2}}})
	require.NoError(t, err)
	require.NoError(t, res.Error)
	out := map[int]string{}
	for _, p := range res.Topics[topic] {
		require.NoError(t, p.Error)
		if p.CommittedOffset >= 0 {
			out[p.Partition] = fmt.Sprintf("%d metadata=%q", p.CommittedOffset, p.Metadata)
		}
	}
	return out
}
