package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
)

// cluster is the Kafka protocol peer a test runs against: the in-process kfake broker by
// default, an external cluster with OFFSETAGENT_TEST_BROKERS, or testcontainers' Kafka with
// OFFSETAGENT_TEST_DOCKER=1. fake is nil unless it is kfake (fault injection needs it).
type cluster struct {
	brokers []string
	fake    *kfake.Cluster
}

// topicSeq makes topic and group names unique per test so that an external cluster can be
// shared by every test.
var topicSeq atomic.Int64

func startCluster(t *testing.T) *cluster {
	t.Helper()
	if b := os.Getenv("OFFSETAGENT_TEST_BROKERS"); b != "" {
		return &cluster{brokers: strings.Split(b, ",")}
	}
	if os.Getenv("OFFSETAGENT_TEST_DOCKER") == "1" {
		return &cluster{brokers: startContainer(t)}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &cluster{brokers: c.ListenAddrs(), fake: c}
}

func (c *cluster) requireFake(t *testing.T) *kfake.Cluster {
	t.Helper()
	if c.fake == nil {
		t.Skip("fault injection needs the embedded kfake broker")
	}
	return c.fake
}

// testConfig is an agent configuration with unique topic names on c.
func testConfig(c *cluster) agent.Config {
	n := topicSeq.Add(1)
	suffix := fmt.Sprintf("%d-%s", n, uuid.NewString()[:8])
	return agent.Config{
		Brokers:                c.brokers,
		RequestTopic:           "requests-" + suffix,
		ResultTopic:            "results-" + suffix,
		GroupID:                "offsetagent-" + suffix,
		ConfigTopic:            "connect-configs-" + suffix,
		OffsetsTopic:           "connect-offsets-" + suffix,
		IntentTopic:            "intents-" + suffix,
		CreateConnectTopics:    true,
		RequestTopicPartitions: 3,
		HTTPAddr:               "127.0.0.1:0",
		LogLevel:               "info",
		LogFormat:              "json",
		Concurrency:            4,
		MaxRequestBytes:        16 << 20,
		ShutdownTimeout:        10 * time.Second,
	}
}

// runningAgent is an agent started in-process by a test.
type runningAgent struct {
	*agent.Agent
	reg    *prometheus.Registry
	url    string
	cancel context.CancelFunc
	done   chan error
}

func startAgent(t *testing.T, cfg agent.Config, opts agent.Options) *runningAgent {
	t.Helper()
	r := launchAgent(t, cfg, opts)
	require.Eventually(t, func() bool {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("agent stopped early: %v", err)
		default:
		}
		return r.Ready()
	}, 30*time.Second, 20*time.Millisecond, "agent never became ready")
	return r
}

// launchAgent starts an agent in-process without waiting until it is ready (a test of an
// agent that must not become ready).
func launchAgent(t *testing.T, cfg agent.Config, opts agent.Options) *runningAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	opts.Registry, opts.Gatherer, opts.Listener = reg, reg, ln
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	a, err := agent.New(cfg, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningAgent{Agent: a, reg: reg, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop shuts the agent down and waits for it (idempotent).
func (r *runningAgent) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			require.NoError(t, err)
			close(r.done)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s")
	}
}

func (r *runningAgent) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(r.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("OFFSETAGENT_TEST_LOGS") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// client is what tests use to talk to the cluster directly.
type client struct {
	t   *testing.T
	cfg agent.Config
	kc  *kafka.Client
	w   *kafka.Writer

	mu   sync.Mutex
	read map[string]map[int][]kafka.Message // what readAll read so far, by topic and partition
}

func newClient(t *testing.T, cfg agent.Config) *client {
	t.Helper()
	// An own transport with a short metadata TTL: kafka-go's shared default caches metadata for
	// 6 s and would not see topics the agent creates after the test's first call. Not shorter:
	// kafka-go also gives each metadata refresh the TTL as its timeout, and when the first one
	// times out (a busy machine: 100 ms did) the transport answers every request with that
	// error until a refresh succeeds.
	tr := &kafka.Transport{MetadataTTL: time.Second}
	c := &client{t: t, cfg: cfg,
		kc: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 10 * time.Second, Transport: tr},
		w:  &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: tr},
	}
	t.Cleanup(func() { _ = c.w.Close(); tr.CloseIdleConnections() })
	awaitLayout(t, c.kc)
	return c
}

// awaitLayout returns once kc's transport knows the cluster's layout. Until its first metadata
// refresh succeeds, kafka-go's transport answers Metadata with that refresh's error and routes
// every request to a broker or the controller from an empty layout: a CreateTopics fails with
// "[8] Broker Not Available". A refresh that fails later keeps the layout it had. On a loaded
// host the first refresh can outlast its timeout (the TTL); the next one comes within a TTL,
// so this waits for that event, bounded by 30 s.
func awaitLayout(t *testing.T, kc *kafka.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, err := kc.Metadata(ctx, &kafka.MetadataRequest{})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			require.NoError(t, err, "metadata of %v", kc.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// publish sends a request body and returns its CloudEvent id.
func (c *client) publish(body string, opts events.RequestOptions) string {
	c.t.Helper()
	if opts.ID == "" {
		opts.ID = uuid.NewString()
	}
	if opts.Source == "" {
		opts.Source = "/integration-test"
	}
	msg, err := events.RequestMessage(c.cfg.RequestTopic, []byte(body), opts)
	require.NoError(c.t, err)
	c.publishRaw(msg)
	return opts.ID
}

// publishRaw sends a record as is.
func (c *client) publishRaw(msg kafka.Message) {
	c.t.Helper()
	msg.Topic = c.cfg.RequestTopic
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The client may have loaded the cluster's layout before the agent created the request
	// topic: its transport then routes the write from a layout without the topic until the
	// next refresh, within a MetadataTTL (a second).
	for {
		err := c.w.WriteMessages(ctx, msg)
		if err == nil || !unknownTopic(err) || ctx.Err() != nil {
			require.NoError(c.t, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unknownTopic tells a write refused because the topic is not in the layout the writer used.
func unknownTopic(err error) bool {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e != nil && !errors.Is(e, kafka.UnknownTopicOrPartition) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, kafka.UnknownTopicOrPartition)
}

// result is a decoded result event and its record.
type result struct {
	Type string
	Data *events.Result
	Msg  kafka.Message
}

// readAll returns every record of topic, in partition then offset order.
func (c *client) readAll(topic string) []kafka.Message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A topic that does not exist (yet) is an error, never an empty topic: a test must not pass
	// by reading nothing.
	md, err := c.topicMetadata(ctx, topic, time.Now().Add(5*time.Second))
	require.NoError(c.t, err)
	require.Len(c.t, md.Topics, 1)
	require.NoError(c.t, md.Topics[0].Error, "topic %s", topic)
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.LastOffsetOf(p.ID))
	}
	lo, err := c.kc.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	require.NoError(c.t, err)
	ends := map[int]int64{}
	for _, p := range lo.Topics[topic] {
		ends[p.Partition] = p.LastOffset
	}
	// Records once written stay: each call reads on from where the last one stopped (a
	// topic whose end went back was deleted and created again: read from the start).
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read == nil {
		c.read = map[string]map[int][]kafka.Message{}
	}
	if c.read[topic] == nil {
		c.read[topic] = map[int][]kafka.Message{}
	}
	seen := c.read[topic]
	var out []kafka.Message
	for p := 0; p < len(md.Topics[0].Partitions); p++ {
		msgs := seen[p]
		next := int64(0)
		if len(msgs) > 0 {
			next = msgs[len(msgs)-1].Offset + 1
		}
		if ends[p] < next {
			msgs, next = nil, 0
		}
		if ends[p] > next {
			msgs = append(msgs, readRange(c.t, kafka.DefaultDialer, c.cfg.Brokers, topic, p, next, ends[p])...)
		}
		seen[p] = msgs
		out = append(out, msgs...)
	}
	return out
}

// answerWait bounds the wait for each answer of readRange: for a fetch, for a connection.
const answerWait = 30 * time.Second

// readRange reads the records of partition p of topic from offset from (kafka.FirstOffset: the
// log start) up to end, which the partition holds. Its bound is on each answer, not on the
// whole range: a broker answers a fetch of records it holds at once, however short its long
// poll (MaxWait), and on a loaded host a large topic takes what it takes while each fetch
// brings records; it fails once no record came for answerWait. A failed fetch (a broken
// connection, a leader moving) is made again on a new connection. kafka-go's Reader is not
// used: it makes its MaxWait the deadline of the whole fetch answer, so a short one (50 ms was)
// times out on a loaded host and it dials and fetches again, and again, and a long one makes
// its Close wait for the long poll it starts past end.
func readRange(t *testing.T, dialer *kafka.Dialer, brokers []string, topic string, p int, from, end int64) []kafka.Message {
	t.Helper()
	var out []kafka.Message
	progress := time.Now()
	for offset := from; offset < end; {
		got, next, err := fetchRange(dialer, brokers, topic, p, offset, end)
		out = append(out, got...)
		if len(got) > 0 {
			progress = time.Now()
		}
		offset = next
		if err != nil {
			if time.Since(progress) > answerWait {
				require.NoError(t, err, "read partition %d of %s at offset %d (up to %d): no record for %s", p, topic, offset, end, answerWait)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out
}

// fetchRange is one connection of readRange: the records from offset up to end, and the
// offset after the last one it returns.
func fetchRange(dialer *kafka.Dialer, brokers []string, topic string, p int, offset, end int64) ([]kafka.Message, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), answerWait)
	defer cancel()
	var conn *kafka.Conn
	var err error
	for _, b := range brokers {
		if conn, err = dialer.DialLeader(ctx, "tcp", b, topic, p); err == nil {
			break
		}
	}
	if err != nil {
		return nil, offset, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(answerWait)); err != nil {
		return nil, offset, err
	}
	// As kafka-go's Reader: an offset before the log start (kafka.FirstOffset, or records
	// deleted since) reads from the log start.
	first, _, err := conn.ReadOffsets()
	if err != nil {
		return nil, offset, err
	}
	offset = max(offset, first)
	if _, err := conn.Seek(offset, kafka.SeekAbsolute); err != nil {
		return nil, offset, err
	}
	var out []kafka.Message
	for offset < end {
		if err := conn.SetDeadline(time.Now().Add(answerWait)); err != nil {
			return out, offset, err
		}
		batch := conn.ReadBatchWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
		before := offset
		for offset < end {
			m, err := batch.ReadMessage()
			if err != nil {
				break
			}
			out = append(out, m)
			offset = m.Offset + 1
		}
		if err := batch.Close(); err != nil {
			return out, offset, err
		}
		if offset == before {
			return out, offset, fmt.Errorf("fetch of partition %d of %s at offset %d below %d: no record", p, topic, offset, end)
		}
	}
	return out, offset, nil
}

// awaitTopic waits, until deadline, for topic to exist: a wait for a result may start before
// the agent created the result topic (a loaded host took more than readAll's 5 s to start
// one). Past deadline it returns, and readAll reports the topic missing.
func (c *client) awaitTopic(topic string, deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	_, _ = c.topicMetadata(ctx, topic, deadline)
}

// topicMetadata asks for topic's metadata until the answer has it or until passes. A failed
// or stale answer (the transport's refresh timed out, the topic is not in its cache yet, or
// not created yet) is asked again; the last answer is returned.
func (c *client) topicMetadata(ctx context.Context, topic string, until time.Time) (*kafka.MetadataResponse, error) {
	for {
		md, err := c.kc.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err == nil && len(md.Topics) == 1 && md.Topics[0].Error == nil || !time.Now().Before(until) || ctx.Err() != nil {
			return md, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// results returns every result event so far.
func (c *client) allResults() []result {
	c.t.Helper()
	var out []result
	for _, m := range c.readAll(c.cfg.ResultTopic) {
		typ, res, err := events.DecodeResult(&m)
		require.NoError(c.t, err)
		out = append(out, result{Type: typ, Data: res, Msg: m})
	}
	return out
}

// waitResults waits until the result topic holds n results and returns them.
func (c *client) waitResults(n int, timeout time.Duration) []result {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	c.awaitTopic(c.cfg.ResultTopic, deadline)
	for {
		rs := c.allResults()
		if len(rs) >= n || time.Now().After(deadline) {
			require.Len(c.t, rs, n, "results in %s; requests with more than one: %v", c.cfg.ResultTopic, repeated(rs))
			return rs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// repeated names the requests that have more than one result in rs: the type, partition and
// offset of each, and the agent (its process id header, when it wrote one) behind it.
func repeated(rs []result) map[string][]string {
	by := map[string][]string{}
	for _, r := range rs {
		by[r.Data.RequestID] = append(by[r.Data.RequestID], fmt.Sprintf("%s p%d@%d %s", r.Type, r.Msg.Partition, r.Msg.Offset, r.Msg.Time.Format("15:04:05.000")))
	}
	for id, l := range by {
		if len(l) < 2 {
			delete(by, id)
		}
	}
	return by
}

// waitResult waits for the result of request id.
func (c *client) waitResult(id string, timeout time.Duration) result {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	c.awaitTopic(c.cfg.ResultTopic, deadline)
	for {
		for _, r := range c.allResults() {
			if r.Data.RequestID == id {
				return r
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no result for request %s within %s", id, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// liveRecords is a compacted topic's live state: key -> (partition, value), tombstones removed.
type liveRecord struct {
	Partition int
	Value     string
}

func (c *client) live(topic string) map[string]liveRecord {
	c.t.Helper()
	out := map[string]liveRecord{}
	for _, m := range c.readAll(topic) {
		if m.Value == nil {
			delete(out, string(m.Key))
			continue
		}
		out[string(m.Key)] = liveRecord{Partition: m.Partition, Value: string(m.Value)}
	}
	return out
}

// groupOffsets returns a consumer group's committed offsets as "topic/partition" -> offset.
func (c *client) groupOffsets(group string) map[string]int64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	of, err := c.kc.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group})
	require.NoError(c.t, err)
	out := map[string]int64{}
	for topic, ps := range of.Topics {
		for _, p := range ps {
			if p.CommittedOffset >= 0 {
				out[fmt.Sprintf("%s/%d", topic, p.Partition)] = p.CommittedOffset
			}
		}
	}
	return out
}

// groupEntries reads the committed offsets of group with franz-go's OffsetFetch (v5+, the
// versions that return the committed leader epoch), as "topic/partition" → "offset=N epoch=E
// metadata=M": what a consumer that joins the group resumes from.
func (c *client) groupEntries(group string) map[string]string {
	c.t.Helper()
	return kafkatest.GroupEntries(c.t, c.cfg.Brokers, group)
}

// createTopic creates a plain topic (e.g. a sink connector's source topic).
func (c *client) createTopic(topic string, partitions int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}}})
	require.NoError(c.t, err)
}

// produce writes records with explicit keys/values to a topic partition chosen by murmur2,
// as a Connect worker would (used to seed existing offsets).
func (c *client) produce(topic string, msgs ...kafka.Message) {
	c.t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(c.cfg.Brokers...), Balancer: kafka.Murmur2Balancer{Consistent: true}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: c.kc.Transport}
	defer w.Close()
	for i := range msgs {
		msgs[i].Topic = topic
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The transport's metadata may predate the topic (a busy machine's refresh is slow): an
	// unknown topic is asked again until the deadline.
	for {
		err := w.WriteMessages(ctx, msgs...)
		if !errors.Is(err, kafka.UnknownTopicOrPartition) || ctx.Err() != nil {
			require.NoError(c.t, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
