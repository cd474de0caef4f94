package rollback

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/connectsim"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/offsetstore"
)

const (
	configTopic  = "connect-configs"
	offsetsTopic = "connect-offsets"
	stateTopic   = "offsetagent-migration-states"
	migrationID  = "m-test"
	reqSource    = "/offsetagent/migrate/" + migrationID
)

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// calls is the order of the REST calls made to A and B ("A PUT /connectors/x/resume").
type calls struct {
	mu   sync.Mutex
	list []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, s)
}

// writes are the calls that change something, in order.
func (c *calls) writes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, s := range c.list {
		if len(s) > 2 && s[2:5] != "GET" {
			out = append(out, s)
		}
	}
	return out
}

// index is the position of call s in the list, -1 when it was not made.
func (c *calls) index(s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, v := range c.list {
		if v == s {
			return i
		}
	}
	return -1
}

func (c *calls) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = nil
}

// connectCluster is a Kafka cluster (kfake) with Connect's topics and a Connect REST API
// served over them by connectsim.
type connectCluster struct {
	brokers []string
	url     string
	rest    *connectrest.Client
	// dropResume answers PUT …/resume with 202 and does nothing: a resume that never shows.
	dropResume atomic.Bool
}

// fixture is A and B.
type fixture struct {
	a, b  *connectCluster
	calls *calls
}

func startConnect(t testing.TB, who string, log *calls, topics map[string]int32, version string) *connectCluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0)}
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	kc, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	c := &connectCluster{brokers: kc.ListenAddrs()}
	cl := &kafka.Client{Addr: kafka.TCP(c.brokers...)}
	require.NoError(t, offsetstore.CheckConnectTopics(testContext(t), cl, configTopic, offsetsTopic, true))
	sim, err := connectsim.New(connectsim.Config{Topics: offsetstore.Options{Brokers: c.brokers, ConfigTopic: configTopic, OffsetsTopic: offsetsTopic},
		WorkerID: "127.0.0.1:8083", Version: version})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.NoError(t, sim.WaitReady(testContext(t)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(who + " " + r.Method + " " + r.URL.Path)
		if c.dropResume.Load() && r.Method == http.MethodPut && len(r.URL.Path) > 7 && r.URL.Path[len(r.URL.Path)-7:] == "/resume" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	c.rest, err = connectrest.New(srv.URL, nil)
	require.NoError(t, err)
	return c
}

func newFixture(t testing.TB, topicsA, topicsB map[string]int32) *fixture {
	t.Helper()
	return newFixtureVersion(t, topicsA, topicsB, "")
}

// newFixtureVersion is newFixture with A's Connect at version ("" the newest).
func newFixtureVersion(t testing.TB, topicsA, topicsB map[string]int32, version string) *fixture {
	t.Helper()
	log := &calls{}
	return &fixture{a: startConnect(t, "A", log, topicsA, version), b: startConnect(t, "B", log, topicsB, ""), calls: log}
}

// write writes records to topic as a worker would.
func write(t testing.TB, brokers []string, topic string, recs ...offsetstore.Record) {
	t.Helper()
	s, err := offsetstore.New(offsetstore.Options{Brokers: brokers, ConfigTopic: "unused-config", OffsetsTopic: "unused-offsets"})
	require.NoError(t, err)
	require.NoError(t, s.Write(testContext(t), topic, recs))
}

// connector writes connector-<name> (marked with mark when not nil) and, when state is not
// RUNNING, its target state.
func connector(t testing.TB, c *connectCluster, name, props, state string, mark []kafka.Header) {
	t.Helper()
	recs := []offsetstore.Record{{Key: []byte("connector-" + name), Value: []byte(`{"properties":` + props + `}`), Partition: 0, Headers: mark}}
	if state != StateRunning {
		v := fmt.Sprintf(`{"state":"PAUSED","state.v2":"%s"}`, state)
		recs = append(recs, offsetstore.Record{Key: []byte("target-state-" + name), Value: []byte(v), Partition: 0, Headers: mark})
	}
	write(t, c.brokers, configTopic, recs...)
}

// sourceOffset writes a FileStream source's offset.
func sourceOffset(t testing.TB, c *connectCluster, name, file string, position int) {
	t.Helper()
	write(t, c.brokers, offsetsTopic, offsetstore.Record{Key: []byte(fmt.Sprintf(`[%q,{"filename":%q}]`, name, file)),
		Value: []byte(fmt.Sprintf(`{"position":%d}`, position)), Partition: -1})
}

// stateRecord writes the migration's state record of name on A, on B's cluster.
func writeStateRecord(t testing.TB, b *connectCluster, name, state string) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(b.brokers...)}
	require.NoError(t, kafkaio.EnsureTopic(testContext(t), cl, stateTopic, 1, map[string]string{"cleanup.policy": "compact"}))
	write(t, b.brokers, stateTopic, offsetstore.Record{Key: []byte(migrationID + "/" + name),
		Value: []byte(fmt.Sprintf(`{"migration_id":%q,"connector":%q,"state":%q,"from":"A","recorded":"2026-01-01T00:00:00Z"}`, migrationID, name, state)), Partition: 0})
}

func requestID(name string) string { return migrationID + "/" + name + "/1" }

func markOf(name string) []kafka.Header { return offsetstore.RequestMark(reqSource, requestID(name)) }

// moved sets up a connector moved by the migration with --stop-source: STOPPED on A with its
// state record, created on B (RUNNING) by the migration's request.
func moved(t testing.TB, f *fixture, name, props, propsB, before string) Connector {
	t.Helper()
	connector(t, f.a, name, props, StateStopped, nil)
	connector(t, f.b, name+"-b", propsB, StateRunning, markOf(name+"-b"))
	writeStateRecord(t, f.b, name, before)
	return Connector{Name: name, TargetName: name + "-b", StoppedOnA: true, StateOnA: before, MigrationID: migrationID,
		RequestSource: reqSource, RequestID: requestID(name + "-b")}
}

// movedSource is a FileStream source moved at position onA; B has gone on to onB.
func movedSource(t testing.TB, f *fixture, name string, onA, onB int) Connector {
	t.Helper()
	props := fmt.Sprintf(`{"connector.class":"FileStreamSource","file":"in.txt","topic":"t","name":%q}`, name)
	propsB := fmt.Sprintf(`{"connector.class":"FileStreamSource","file":"in.txt","topic":"t","name":"%s-b"}`, name)
	c := moved(t, f, name, props, propsB, StateRunning)
	c.Type = TypeSource
	sourceOffset(t, f.a, name, "in.txt", onA)
	sourceOffset(t, f.b, name+"-b", "in.txt", onB)
	c.Partitions = []Partition{{Partition: mapOf(t, `{"filename":"in.txt"}`), OnA: mapOf(t, fmt.Sprintf(`{"position":%d}`, onA)),
		Placed: mapOf(t, fmt.Sprintf(`{"position":%d}`, onA)), Translation: AsRead}}
	return c
}

// movedSink is a FileStream sink of topic t moved at offset onA; B's group has gone on to onB.
func movedSink(t testing.TB, f *fixture, name string, onA, onB int64) Connector {
	t.Helper()
	props := fmt.Sprintf(`{"connector.class":"FileStreamSink","file":"out.txt","topics":"t","name":%q}`, name)
	propsB := fmt.Sprintf(`{"connector.class":"FileStreamSink","file":"out.txt","topics":"t","name":"%s-b"}`, name)
	c := moved(t, f, name, props, propsB, StateRunning)
	c.Type, c.Group = TypeSink, "connect-"+name+"-b"
	kafkatest.CommitEntries(t, f.a.brokers, "connect-"+name, kafkatest.GroupEntry{Topic: "t", Partition: 0, Offset: onA, Epoch: -1})
	kafkatest.CommitEntries(t, f.b.brokers, c.Group, kafkatest.GroupEntry{Topic: "t", Partition: 0, Offset: onB, Epoch: -1})
	c.Partitions = []Partition{{Partition: mapOf(t, `{"kafka_topic":"t","kafka_partition":0}`), OnA: mapOf(t, fmt.Sprintf(`{"kafka_offset":%d}`, onA)),
		Placed: mapOf(t, fmt.Sprintf(`{"kafka_offset":%d}`, onA)), Translation: AsRead}}
	return c
}

func mapOf(t testing.TB, s string) jsonvalue.Map {
	t.Helper()
	m, err := jsonvalue.DecodeMap([]byte(s))
	require.NoError(t, err)
	return m
}

// options are Run's options over the fixture: a REST barrier on B, nothing pending.
func (f *fixture) options(execute bool) Options {
	return Options{A: f.a.rest, B: f.b.rest, BTopics: offsetstore.Options{Brokers: f.b.brokers, ConfigTopic: configTopic, OffsetsTopic: offsetsTopic},
		StateTopic: stateTopic, AKafka: kafkaio.Options{Brokers: f.a.brokers}, StopOnB: restBarrier(f.b.rest),
		Pending: func(context.Context, Connector) (bool, error) { return false, nil }, Execute: execute, MigrationID: migrationID,
		ResumeTimeout: 10 * time.Second, Poll: 20 * time.Millisecond}
}

// restBarrier stops a connector on B through its REST API and reads its offsets once its
// status is STOPPED (connectsim runs no task: nothing commits after the stop).
func restBarrier(b *connectrest.Client) Barrier {
	return func(ctx context.Context, c Connector) ([]events.ConnectorOffset, error) {
		if err := b.Stop(ctx, c.TargetName); err != nil {
			return nil, err
		}
		for range 200 {
			st, ok, err := b.Status(ctx, c.TargetName)
			if err != nil {
				return nil, err
			}
			if ok && st.Connector.State == StateStopped {
				return b.Offsets(ctx, c.TargetName)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil, fmt.Errorf("%s not STOPPED on B", c.TargetName)
	}
}

// topicBytes is every record of topic (key, value, headers), partition by partition.
func topicBytes(t testing.TB, brokers []string, topic string) []string {
	t.Helper()
	ctx := testContext(t)
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: brokers})
	n, err := kafkaio.PartitionCount(ctx, cl, topic)
	require.NoError(t, err)
	var out []string
	for p := range n {
		next := int64(0)
		for range 1000 {
			f, err := kafkaio.FetchPartition(ctx, cl, topic, p, next, 1<<20, time.Millisecond)
			require.NoError(t, err)
			for _, m := range f.Messages {
				out = append(out, fmt.Sprintf("%d/%d %q=%q %v", p, m.Offset, m.Key, m.Value, m.Headers))
			}
			if f.Next >= f.LastStable {
				break
			}
			next = f.Next
		}
	}
	return out
}

// produce writes records with their partitions as given.
func produce(t testing.TB, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(testContext(t), recs...).FirstErr())
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
