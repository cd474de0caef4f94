package tier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// Record is one record of a topic.
type Record struct {
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte // nil for a tombstone
}

func (r Record) String() string {
	v := "null"
	if r.Value != nil {
		v = string(r.Value)
	}
	return fmt.Sprintf("p%d key=%s value=%s", r.Partition, r.Key, v)
}

// KafkaClient is a client of the Env's brokers.
func (e *Env) KafkaClient() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(e.Brokers...), Timeout: 10 * time.Second, Transport: e.transport}
}

// ReadTopic returns every record of every partition of topic up to its current end.
func (e *Env) ReadTopic(t testing.TB, topic string) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := e.KafkaClient()
	require.Eventually(t, func() bool { return e.Exists(t, topic) }, 30*time.Second, 100*time.Millisecond, "topic %s", topic)
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
	var out []Record
	for _, po := range lo.Topics[topic] {
		require.NoError(t, po.Error)
		if po.LastOffset == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.Brokers, Topic: topic, Partition: po.Partition,
			MaxWait: 100 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			require.NoError(t, err, "read %s[%d]", topic, po.Partition)
			out = append(out, Record{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value})
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

// OffsetRecords returns the records of an offsets topic whose key belongs to connector name.
func (e *Env) OffsetRecords(t testing.TB, topic, name string) []Record {
	t.Helper()
	prefix, _ := json.Marshal(name)
	prefix = append(append([]byte("["), prefix...), ',')
	var out []Record
	for _, r := range e.ReadTopic(t, topic) {
		if bytes.HasPrefix(r.Key, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// WaitValues waits until topic holds at least n records and returns their values.
func (e *Env) WaitValues(t testing.TB, topic string, n int) []string {
	t.Helper()
	var vals []string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if e.Exists(t, topic) {
			vals = vals[:0]
			for _, r := range e.ReadTopic(t, topic) {
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

// Exists reports whether topic exists with at least one partition.
func (e *Env) Exists(t testing.TB, topic string) bool {
	t.Helper()
	md, err := e.KafkaClient().Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return false
	}
	return len(md.Topics) == 1 && md.Topics[0].Error == nil && len(md.Topics[0].Partitions) > 0
}

// CreateTopic creates a topic (compacted when compact is true).
func (e *Env) CreateTopic(t testing.TB, topic string, partitions int, compact bool) {
	t.Helper()
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}
	if compact {
		tc.ConfigEntries = []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}
	}
	res, err := e.KafkaClient().CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	require.NoError(t, err)
	if err := res.Errors[topic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return e.Exists(t, topic) }, 30*time.Second, 100*time.Millisecond)
}

// Produce writes values to partition 0 of topic, in order.
func (e *Env) Produce(t testing.TB, topic string, values ...string) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(e.Brokers...), Topic: topic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: e.transport}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, msgs...))
}

// Numbered returns format applied to 0..n-1.
func Numbered(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// Lines returns n lines "<prefix>-<i>" from first, and their byte length with newlines.
func Lines(prefix string, first, n int) (string, int) {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%s-%02d\n", prefix, i)
	}
	return b.String(), b.Len()
}

// WriteFile writes content to a new file in the run's folder and returns its path.
func (e *Env) WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	d, err := e.Subdir("files")
	require.NoError(t, err)
	p := filepath.Join(d, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// AppendFile appends content to the file at path.
func AppendFile(t testing.TB, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// JSONString is s as a JSON string, as the JsonConverter writes a string value without schema.
func JSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// MustJSON marshals v or fails.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// GroupOffsets returns the committed offsets of group on topic, as "offset metadata=<m>" by
// partition.
func (e *Env) GroupOffsets(t testing.TB, group, topic string) map[int]string {
	t.Helper()
	res, err := e.KafkaClient().OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group,
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

// ValuesFrom returns n JSON string values "<prefix>-<i>" from first.
func ValuesFrom(prefix string, first, n int) []string {
	s, _ := Lines(prefix, first, n)
	out := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range out {
		out[i] = JSONString(out[i])
	}
	return out
}

// CreateTopicOn creates a new topic on brokers.
func CreateTopicOn(t testing.TB, brokers []string, topic string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}}})
	require.NoError(t, err)
	require.NoError(t, resp.Errors[topic])
}

// ProduceTo writes values to partition 0 of topic on brokers, in order.
func ProduceTo(t testing.TB, brokers []string, topic string, values ...string) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.WriteMessages(ctx, msgs...))
}

// TopicValues returns the values of partition 0 of topic on brokers (none when it does not
// exist yet).
func TopicValues(t testing.TB, brokers []string, topic string) []string {
	t.Helper()
	var out []string
	for _, m := range TopicMessages(t, brokers, topic) {
		out = append(out, string(m.Value))
	}
	return out
}

// TopicMessages returns the records of partition 0 of topic on brokers (none when it does not
// exist yet).
func TopicMessages(t testing.TB, brokers []string, topic string) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}})
	if err != nil || len(lo.Topics[topic]) == 0 || lo.Topics[topic][0].Error != nil || lo.Topics[topic][0].LastOffset == 0 {
		return nil
	}
	end := lo.Topics[topic][0].LastOffset
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var out []kafka.Message
	for {
		m, err := r.ReadMessage(ctx)
		require.NoError(t, err)
		out = append(out, m)
		if m.Offset+1 >= end {
			return out
		}
	}
}

// WaitTopic waits until topic holds at least n records.
func WaitTopic(t testing.TB, brokers []string, topic string, n int) []string {
	t.Helper()
	var vals []string
	require.Eventually(t, func() bool { vals = TopicValues(t, brokers, topic); return len(vals) >= n }, 90*time.Second, 250*time.Millisecond)
	return vals
}

// FileLines returns the lines of a FileStream sink's file (none before it exists).
func FileLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return slices.Clip(strings.Split(s, "\n"))
}
