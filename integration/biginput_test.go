package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// mm2Body is a MirrorSourceConnector request with n initial offsets, one per source partition
// of topic t.
func mm2Body(name string, n int) []byte {
	var b strings.Builder
	b.Grow(n * 90)
	fmt.Fprintf(&b, `{"name":%q,"config":{"connector.class":"MirrorSourceConnector","source.cluster.alias":"A"},"initial_offsets":[`, name)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"partition":{"cluster":"A","topic":"t","partition":%d},"offset":{"offset":%d}}`, i, i+1)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// publishLarge writes one request record of up to 16 MiB (the client's writer batches at most
// kafka-go's default 1 MiB).
func publishLarge(t *testing.T, cfg agent.Config, msg kafka.Message) {
	t.Helper()
	// A Transport of its own: kafka.DefaultTransport may cache metadata from before the agent
	// created the request topic and refuse the write as "Unknown Topic Or Partition".
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.RequestTopic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchBytes: 32 << 20,
		Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg.Topic = ""
	require.NoError(t, w.WriteMessages(ctx, msg))
}

// liveKeys counts a compacted topic's live keys that start with prefix, and returns the values
// of the first and last source partition's keys. It fetches whole partitions with the
// low-level Fetch API and keeps only keys: a kafka.Reader hands records over one at a time,
// which for 100,000 records under -race costs tens of seconds.
func liveKeys(t *testing.T, cl *client, topic, prefix string) (int, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	md, err := cl.kc.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	require.NoError(t, err)
	require.Len(t, md.Topics, 1)
	require.NoError(t, md.Topics[0].Error)
	live := map[string]struct{}{}
	samples := map[string]string{}
	for _, p := range md.Topics[0].Partitions {
		for offset, end := int64(0), int64(1); offset < end; {
			res, err := cl.kc.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: p.ID, Offset: offset, MinBytes: 1, MaxBytes: 32 << 20, MaxWait: 100 * time.Millisecond})
			require.NoError(t, err)
			require.NoError(t, res.Error)
			end = res.HighWatermark
			for {
				rec, err := res.Records.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				offset = rec.Offset + 1
				key, err := io.ReadAll(rec.Key)
				require.NoError(t, err)
				k := string(key)
				if !strings.HasPrefix(k, prefix) {
					continue
				}
				if rec.Value == nil {
					delete(live, k)
					delete(samples, k)
					continue
				}
				live[k] = struct{}{}
				if strings.Contains(k, `"partition":0,`) || strings.Contains(k, `"partition":99999,`) {
					v, err := io.ReadAll(rec.Value)
					require.NoError(t, err)
					samples[k] = string(v)
				}
			}
		}
	}
	return len(live), samples
}

// One request with 100,000 MirrorMaker 2 initial offsets (about 8.5 MB, under the 16 MiB
// default limit) goes through the running agent, through a request topic the agent created
// (sized for MaxRequestBytes), and the offsets topic ends with 100,000 live keys for it.
func TestHundredThousandInitialOffsets(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 offsets")
	}
	const n = 100_000
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	a := startAgent(t, cfg, agent.Options{})
	cl := newFreshClient(t, cfg)

	body := mm2Body("mm2-big", n)
	require.Less(t, len(body), cfg.MaxRequestBytes)
	require.Greater(t, len(body), 8<<20, "the request is far larger than a broker's 1 MiB default")
	id := uuid.NewString()
	msg, err := events.RequestMessage(cfg.RequestTopic, body, events.RequestOptions{ID: id, Source: "/integration-test"})
	require.NoError(t, err)
	start := time.Now()
	publishLarge(t, cfg, msg)
	res := cl.waitResult(id, 2*time.Minute)
	t.Logf("%d offsets (%d bytes) created in %s", n, len(body), time.Since(start))
	require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
	require.Equal(t, n, *res.Data.OffsetsWritten)

	start = time.Now()
	count, samples := liveKeys(t, cl, cfg.OffsetsTopic, `["mm2-big",`)
	t.Logf("offsets topic read in %s", time.Since(start))
	require.Equal(t, n, count, "live offsets of the connector")
	require.Equal(t, map[string]string{
		`["mm2-big",{"cluster":"A","partition":0,"topic":"t"}]`:     `{"offset":1}`,
		`["mm2-big",{"cluster":"A","partition":99999,"topic":"t"}]`: `{"offset":100000}`,
	}, samples)
	require.Contains(t, cl.live(cfg.ConfigTopic), "connector-mm2-big")
	require.Equal(t, 1.0, a.metric(t, "offsetagent_requests_total", "result", "succeeded"))
	require.Equal(t, float64(n), a.metric(t, "offsetagent_offsets_written_total", "type", "source"))
}

// badInput is one malformed record and the failed result it must get.
type badInput struct {
	name string
	msg  kafka.Message
	// id is the request id the result carries; empty when the record has no ce_id header
	// (structured mode), and the result is then found by key.
	id, key string
	step    string
	code    int
	message string // a substring of the result's message
}

func binaryRequest(t *testing.T, cfg agent.Config, key string, body []byte) (kafka.Message, string) {
	t.Helper()
	id := uuid.NewString()
	msg, err := events.RequestMessage(cfg.RequestTopic, body, events.RequestOptions{ID: id, Source: "/integration-test", Key: key})
	require.NoError(t, err)
	return msg, id
}

func setHeader(msg *kafka.Message, key, value string) {
	for i := range msg.Headers {
		if msg.Headers[i].Key == key {
			msg.Headers[i].Value = []byte(value)
		}
	}
}

// Malformed input through the running agent: each record gets exactly one failed result
// naming the right step, and the single request partition keeps flowing (a valid request
// right after the oversize record, and one after all of them, succeed).
func TestBadInputKeepsPartitionFlowing(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cfg.MaxRequestBytes = 64 << 10
	a := startAgent(t, cfg, agent.Options{})
	cl := newFreshClient(t, cfg)

	var cases []badInput
	add := func(tc badInput) { cases = append(cases, tc) }

	big := fmt.Sprintf(`{"name":"oversize","config":{"connector.class":"FileStreamSource","file":"f","padding":%q}}`, strings.Repeat("x", 70<<10))
	msg, id := binaryRequest(t, cfg, "oversize", []byte(big))
	add(badInput{name: "oversize record", msg: msg, id: id, key: "oversize", step: "decode_request", code: 400,
		message: fmt.Sprintf("more than the limit of %d bytes", cfg.MaxRequestBytes)})

	wrongVersion := `{"specversion":"0.3","id":"sv-1","source":"/integration-test","type":"` + events.TypeCreateRequest +
		`","datacontenttype":"application/json","data":{"name":"sv","config":{"connector.class":"FileStreamSource"}}}`
	add(badInput{name: "structured wrong specversion", key: "sv", step: "decode_request", code: 400, message: "specversion",
		msg: kafka.Message{Key: []byte("sv"), Value: []byte(wrongVersion),
			Headers: []kafka.Header{{Key: events.HeaderContentType, Value: []byte("application/cloudevents+json; charset=UTF-8")}}}})

	msg, id = binaryRequest(t, cfg, "unknown-type", []byte(`{"name":"unknown-type","config":{"connector.class":"FileStreamSource"}}`))
	setHeader(&msg, events.HeaderPrefix+"type", "offsetagent.connector.delete.request")
	add(badInput{name: "unknown event type", msg: msg, id: id, key: "unknown-type", step: "decode_request", code: 400,
		message: `event type "offsetagent.connector.delete.request" is not handled`})

	msg, id = binaryRequest(t, cfg, "utf8-binary", []byte("{\"name\":\"utf8-binary\xff\",\"config\":{\"connector.class\":\"FileStreamSource\"}}"))
	add(badInput{name: "invalid UTF-8 in binary data", msg: msg, id: id, key: "utf8-binary", step: "decode_request", code: 400,
		message: "not valid UTF-8"})

	// Not JSON, so structured mode carries it as data_base64, which the value's check cannot see.
	id = uuid.NewString()
	msg, err := events.RequestMessage(cfg.RequestTopic, []byte("utf8-structured \xff\xfe"),
		events.RequestOptions{ID: id, Source: "/integration-test", Key: "utf8-structured", Mode: events.ModeStructured})
	require.NoError(t, err)
	add(badInput{name: "invalid UTF-8 in structured data_base64", msg: msg, key: "utf8-structured", step: "decode_request", code: 400,
		message: "event data is not valid UTF-8"})

	msg, id = binaryRequest(t, cfg, "ctl", []byte(`{"name":"ctl\u001b[31mred","config":{"connector.class":"FileStreamSource"}}`))
	add(badInput{name: "name with an escape character", msg: msg, id: id, step: "validate_config", code: 400,
		message: "String may not contain control sequences but had the following ASCII chars: 27"})

	msg, id = binaryRequest(t, cfg, "ctl2", []byte(`{"name":"line\nbreak\u0000","config":{"connector.class":"FileStreamSource"}}`))
	add(badInput{name: "name with newline and NUL", msg: msg, id: id, step: "validate_config", code: 400,
		message: "String may not contain control sequences but had the following ASCII chars: 10, 0"})

	// The oversize record first, then a valid request on the same partition, then the rest.
	cl.publishRaw(cases[0].msg)
	afterOversize := cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	for _, tc := range cases[1:] {
		cl.publishRaw(tc.msg)
	}
	last := cl.publish(strings.ReplaceAll(readFile(t, "testdata/file-src-1.json"), "file-src-1", "file-src-2"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(last, resultWait).Type, "the partition still flows")

	all := cl.waitResults(len(cases)+2, resultWait)
	find := func(t *testing.T, tc badInput) result {
		t.Helper()
		var found []result
		for _, r := range all {
			if (tc.id != "" && r.Data.RequestID == tc.id) || (tc.id == "" && r.Data.Name == tc.key) {
				found = append(found, r)
			}
		}
		require.Len(t, found, 1, "exactly one result")
		return found[0]
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := find(t, tc)
			require.Equal(t, events.TypeCreateFailed, res.Type)
			require.Equal(t, tc.step, res.Data.FailedStep, res.Data.Message)
			require.Equal(t, tc.code, res.Data.ErrorCode)
			require.Contains(t, res.Data.Message, tc.message)
			require.NotNil(t, res.Data.Cleanup)
			require.Contains(t, res.Data.Cleanup.Summary, "nothing to undo")
			if tc.key != "" {
				require.Equal(t, tc.key, string(res.Msg.Key), "the result is keyed like the request")
			}
		})
	}
	res := find(t, badInput{id: afterOversize})
	require.Equal(t, events.TypeCreateSucceeded, res.Type, "the request after the oversize record: %s", res.Data.Message)

	// Only the two valid requests wrote anything.
	configs := cl.live(cfg.ConfigTopic)
	require.Len(t, configs, 4)
	require.Contains(t, configs, "connector-file-src-1")
	require.Contains(t, configs, "connector-file-src-2")
	require.Equal(t, float64(len(cases)), a.metric(t, "offsetagent_requests_total", "result", "failed"))
	require.Equal(t, 5.0, a.failures(t, "decode_request"))
	require.Equal(t, 2.0, a.failures(t, "validate_config"))
	require.Eventually(t, func() bool {
		return cl.groupOffsets(cfg.GroupID)[cfg.RequestTopic+"/0"] == int64(len(cases)+2)
	}, resultWait, 20*time.Millisecond, "every record committed")
}
