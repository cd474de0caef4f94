package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// fleetPair is Connect cluster A's state for the migration tests, created through an agent on A
// (so every record is written by the project's own encoder, as Connect would write it), plus
// records written by hand for what an agent never writes (tombstones, bad input).
type fleetPair struct {
	cfgA, cfgB agent.Config
	clA, clB   *client
	own        string // a connector-specific offsets topic (on A and B)
	orders     string // the sinks' topic (on A and B)
	late       string // a sink topic that exists on A only, at first
	group      string // a sink's consumer.override.group.id
}

func newFleet(t *testing.T) *fleetPair {
	t.Helper()
	a, b := startCluster(t), startCluster(t)
	f := &fleetPair{cfgA: testConfig(a), cfgB: testConfig(b)}
	f.cfgA.AllowedOffsetsTopics, f.cfgB.AllowedOffsetsTopics = ".*", ".*"
	f.cfgA.AllowedGroups, f.cfgB.AllowedGroups = []string{"connect-.*", "custom-group-.*"}, []string{"connect-.*", "custom-group-.*"}
	suffix := strings.TrimPrefix(f.cfgA.ConfigTopic, "connect-configs-")
	f.own, f.orders, f.late, f.group = "own-offsets-"+suffix, "orders-"+suffix, "late-"+suffix, "custom-group-"+suffix
	f.clA, f.clB = newClient(t, f.cfgA), newClient(t, f.cfgB)
	for _, cl := range []*client{f.clA, f.clB} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, kafkaio.EnsureTopic(ctx, cl.kc, f.own, 25, map[string]string{"cleanup.policy": "compact"}))
		cancel()
		cl.createTopic(f.orders, 3)
	}
	f.clA.createTopic(f.late, 2)
	return f
}

const (
	fileSource = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	fileSink   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
	mm2Source  = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
)

// seed creates the dozen connectors on A and the records no agent writes.
func (f *fleetPair) seed(t *testing.T) {
	t.Helper()
	agentA := startAgent(t, f.cfgA, agent.Options{})
	mm2Offsets := func(n int) string {
		var es []string
		for i := range n {
			es = append(es, fmt.Sprintf(`{"partition":{"cluster":"src","topic":"t%d","partition":%d},"offset":{"offset":%d}}`, i%2, i, 1000+7*i))
		}
		return "[" + strings.Join(es, ",") + "]"
	}
	sinkOffsets := func(topic string, offs ...int) string {
		var es []string
		for p, o := range offs {
			es = append(es, fmt.Sprintf(`{"partition":{"kafka_topic":%q,"kafka_partition":%d},"offset":{"kafka_offset":%d}}`, topic, p, o))
		}
		return "[" + strings.Join(es, ",") + "]"
	}
	file := func(name, extra, state string, pos int) string {
		return fmt.Sprintf(`{"name":%q,"config":{"connector.class":%q,"file":"%s.txt","topic":"t","tasks.max":"1","db.password":"s3cret"%s}%s,"initial_offsets":[{"partition":{"filename":"%s.txt"},"offset":{"position":%d}}]}`,
			name, fileSource, name, extra, state, name, pos)
	}
	bodies := []string{
		file("file-src-1", "", "", 30),
		file("file-src-stopped", "", `,"initial_state":"STOPPED"`, 12),
		file("own-src", fmt.Sprintf(`,"offsets.storage.topic":%q`, f.own), "", 77),
		file("deleted-src", "", "", 5),
		file("excluded-src", "", "", 6),
		file("bad-pending", "", "", 7),
		file("bad-offsets", "", "", 8),
		`{"name":"dbz-mysql","config":{"connector.class":"io.debezium.connector.mysql.MySqlConnector","topic.prefix":"dbserver1","database.password":"pw"},"initial_offsets":[{"partition":{"server":"dbserver1"},"offset":{"ts_sec":1700000000,"file":"mysql-bin.000003","pos":154,"gtids":"3e11fa47:1-5","row":1,"server_id":223344,"event":2}}]}`,
		`{"name":"mm2-src","config":{"connector.class":"` + mm2Source + `","source.cluster.alias":"src","target.cluster.alias":"dst","topics":".*"},"initial_offsets":` + mm2Offsets(5) + `}`,
		`{"name":"mm2-paused","config":{"connector.class":"` + mm2Source + `","source.cluster.alias":"src","target.cluster.alias":"dst","topics":".*"},"initial_state":"PAUSED","initial_offsets":` + mm2Offsets(2) + `}`,
		`{"name":"sink-1","config":{"connector.class":"` + fileSink + `","file":"out.txt","topics":"` + f.orders + `"},"initial_offsets":` + sinkOffsets(f.orders, 10, 20, 30) + `}`,
		`{"name":"sink-override","config":{"connector.class":"` + fileSink + `","file":"out2.txt","topics":"` + f.orders + `","consumer.override.group.id":"` + f.group + `"},"initial_state":"PAUSED","initial_offsets":` + sinkOffsets(f.orders, 4, 5) + `}`,
		`{"name":"sink-late","config":{"connector.class":"` + fileSink + `","file":"out3.txt","topics":"` + f.late + `"},"initial_offsets":` + sinkOffsets(f.late, 3, 9) + `}`,
	}
	// A client of its own: f.clA's metadata cache predates the agent's topics.
	pub := newClient(t, f.cfgA)
	var ids []string
	for _, b := range bodies {
		ids = append(ids, pub.publish(b, events.RequestOptions{}))
	}
	for _, id := range ids {
		r := pub.waitResult(id, 60*time.Second)
		require.Equal(t, events.TypeCreateSucceeded, r.Type, "%s: %s", r.Data.Name, r.Data.Message)
	}
	agentA.stop(t)
	// Deleted on A: Connect tombstones both records; its offsets outlive it.
	f.clA.produce(f.cfgA.ConfigTopic,
		kafka.Message{Key: []byte("connector-deleted-src")}, kafka.Message{Key: []byte("target-state-deleted-src")},
		// A connector record Connect cannot read, and a task-config update not committed yet.
		kafka.Message{Key: []byte("connector-bad-config"), Value: []byte(`{"properties":{"name":`)},
		kafka.Message{Key: []byte("task-bad-pending-0"), Value: []byte(`{"properties":{"task.class":"x"}}`)})
	f.clA.produce(f.cfgA.OffsetsTopic, kafka.Message{Key: []byte(`["bad-offsets",{"filename":"other.txt"}]`), Value: []byte(`not json`)})
}

func (f *fleetPair) options(t *testing.T, sel source.SelectionFlags) migrate.MigrateOptions {
	t.Helper()
	s, err := source.NewSelection(sel)
	require.NoError(t, err)
	return migrate.MigrateOptions{
		Options: migrate.Options{
			Topics:    &source.TopicsSource{Brokers: f.cfgA.Brokers, ConfigTopic: f.cfgA.ConfigTopic, OffsetsTopic: f.cfgA.OffsetsTopic},
			Selection: s, Logger: testLogger(t),
		},
		To: target.Target{Brokers: f.cfgB.Brokers, RequestTopic: f.cfgB.RequestTopic, ResultTopic: f.cfgB.ResultTopic,
			ConfigTopic: f.cfgB.ConfigTopic, OffsetsTopic: f.cfgB.OffsetsTopic},
		SelectionKey: fmt.Sprint(sel), Concurrency: 3, Timeout: 2 * time.Minute,
	}
}

// outcomes maps each report entry to "target outcome step request-id".
func outcomes(rep *apply.Report) map[string]string {
	out := map[string]string{}
	for _, e := range rep.Connectors {
		out[e.Name] = strings.TrimSpace(fmt.Sprintf("%s %s %s %s", e.TargetName, e.Outcome, e.FailedStep, e.RequestID))
	}
	return out
}

// renameKey rewrites an offsets key of A for the connector's name on B.
func renameKey(t *testing.T, key, target string) string {
	t.Helper()
	_, partition, ok := offsetstore.DecodeKey([]byte(key))
	require.True(t, ok, key)
	return string(offsetstore.AppendKey(nil, target, partition))
}

// TestMigrateFleet moves a fleet between Connect clusters: A holds a dozen connectors; migrate with a
// rename, a --set and an --exclude leaves B's config topic, offsets topics and groups holding
// exactly the expected records; a failed connector is retried under its next attempt's id; a
// run after success changes nothing.
func TestMigrateFleet(t *testing.T) {
	f := newFleet(t)
	f.seed(t)
	startAgent(t, f.cfgB, agent.Options{})
	sel := source.SelectionFlags{
		Exclude: []string{"bad-.*", "excluded-src"},
		Rename:  []string{"file-src-(.*)=file-b-$1", "sink-(.*)=sink-b-$1"},
		Set:     []string{"errors.log.enable=true"},
	}
	opts := f.options(t, sel)
	ctx := context.Background()

	// First run: everything but the sink whose topic B lacks.
	rep, _, err := migrate.Migrate(ctx, opts)
	require.NoError(t, err)
	require.False(t, rep.OK())
	mid := rep.MigrationID
	require.Regexp(t, `^m-[0-9a-f]{16}$`, mid)
	id1 := func(target string) string { return mid + "/" + target + "/1" }
	want := map[string]string{
		"dbz-mysql":        "dbz-mysql succeeded  " + id1("dbz-mysql"),
		"file-src-1":       "file-b-1 succeeded  " + id1("file-b-1"),
		"file-src-stopped": "file-b-stopped succeeded  " + id1("file-b-stopped"),
		"mm2-paused":       "mm2-paused succeeded  " + id1("mm2-paused"),
		"mm2-src":          "mm2-src succeeded  " + id1("mm2-src"),
		"own-src":          "own-src succeeded  " + id1("own-src"),
		"sink-1":           "sink-b-1 succeeded  " + id1("sink-b-1"),
		"sink-override":    "sink-b-override succeeded  " + id1("sink-b-override"),
		"sink-late":        "sink-b-late failed validate_offsets " + id1("sink-b-late"),
	}
	require.Equal(t, want, outcomes(rep))
	// The requests went compressed with the default codec (kgo's compression type 2: snappy).
	codecs := requestCodecs(t, f.cfgB.Brokers, f.cfgB.RequestTopic, len(want))
	require.Equal(t, map[uint8]int{2: len(want)}, codecs)
	for _, e := range rep.Connectors {
		if e.Name == "sink-late" {
			require.Equal(t, "Topic "+f.late+" of the sink connector's initial offsets does not exist", e.Message.String())
		}
	}

	// The failed one is published again under attempt 2 once B has its topic; the others are not.
	f.clB.createTopic(f.late, 2)
	rep, _, err = migrate.Migrate(ctx, opts)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", outcomes(rep))
	want["sink-late"] = "sink-b-late succeeded  " + mid + "/sink-b-late/2"
	require.Equal(t, want, outcomes(rep))

	// B holds exactly the expected records.
	configB := f.clB.live(f.cfgB.ConfigTopic)
	wantStates := map[string]string{
		"file-b-1": "STARTED", "file-b-stopped": "STOPPED", "own-src": "STARTED", "dbz-mysql": "STARTED", "mm2-src": "STARTED",
		"mm2-paused": "PAUSED", "sink-b-1": "STARTED", "sink-b-override": "PAUSED", "sink-b-late": "STARTED",
	}
	targetOf := map[string]string{}
	for _, e := range rep.Connectors {
		targetOf[e.Name] = e.TargetName
	}
	configA := f.clA.live(f.cfgA.ConfigTopic)
	wantConfig := map[string]string{}
	for name, target := range targetOf {
		state := wantStates[target]
		v1 := state
		if state == "STOPPED" {
			v1 = "PAUSED"
		}
		wantConfig["target-state-"+target] = fmt.Sprintf(`{"state":%q,"state.v2":%q}`, v1, state)
		var rec struct {
			Properties map[string]string `json:"properties"`
		}
		require.NoError(t, json.Unmarshal([]byte(configA["connector-"+name].Value), &rec))
		rec.Properties["name"] = target
		rec.Properties["errors.log.enable"] = "true"
		wantConfig["connector-"+target] = mustJSON(t, rec)
	}
	gotConfig := map[string]string{}
	for k, r := range configB {
		if strings.HasPrefix(k, "connector-") {
			var rec struct {
				Properties map[string]string `json:"properties"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.Value), &rec))
			gotConfig[k] = mustJSON(t, rec)
			continue
		}
		gotConfig[k] = r.Value
	}
	require.Equal(t, wantConfig, gotConfig)
	require.Contains(t, configB["connector-file-b-1"].Value, `"db.password":"s3cret"`, "secrets reach Connect verbatim")

	// Offsets: A's records of the migrated sources, keyed by their names on B, byte for byte,
	// in the partition a Java producer would choose, in the global topic and the connector's own.
	for _, topic := range [][2]string{{f.cfgA.OffsetsTopic, f.cfgB.OffsetsTopic}, {f.own, f.own}} {
		wantOffsets := map[string]liveRecord{}
		for k, r := range f.clA.live(topic[0]) {
			name, _, ok := offsetstore.DecodeKey([]byte(k))
			target, migrated := targetOf[name]
			if !ok || !migrated {
				continue
			}
			nk := renameKey(t, k, target)
			wantOffsets[nk] = liveRecord{Partition: offsetstore.PartitionFor([]byte(nk), 25), Value: r.Value}
		}
		require.NotEmpty(t, wantOffsets)
		require.Equal(t, wantOffsets, f.clB.live(topic[1]), "topic %s", topic[1])
	}
	require.Len(t, f.clB.live(f.cfgB.OffsetsTopic), 1+1+1+1+5+2, "file-b-1, file-b-stopped, own-src (mirrored), dbz-mysql, mm2-src, mm2-paused")

	// Groups: the renamed sink's group follows its new name; the overridden one keeps its id.
	require.Equal(t, f.clA.groupOffsets("connect-sink-1"), f.clB.groupOffsets("connect-sink-b-1"))
	require.Equal(t, map[string]int64{f.orders + "/0": 10, f.orders + "/1": 20, f.orders + "/2": 30}, f.clB.groupOffsets("connect-sink-b-1"))
	require.Equal(t, map[string]int64{f.orders + "/0": 4, f.orders + "/1": 5}, f.clB.groupOffsets(f.group))
	require.Equal(t, map[string]int64{f.late + "/0": 3, f.late + "/1": 9}, f.clB.groupOffsets("connect-sink-b-late"))
	require.Empty(t, f.clB.groupOffsets("connect-sink-late"))
	// Committed as Connect's PATCH commits them (no leader epoch, empty metadata), whatever A's
	// entries carried: B's partitions have epochs of their own.
	require.Equal(t, kafkatest.PatchEntries(map[string]int64{f.orders + "/0": 10, f.orders + "/1": 20, f.orders + "/2": 30}), f.clB.groupEntries("connect-sink-b-1"))
	require.Equal(t, kafkatest.PatchEntries(map[string]int64{f.orders + "/0": 4, f.orders + "/1": 5}), f.clB.groupEntries(f.group))
	require.Equal(t, kafkatest.PatchEntries(map[string]int64{f.late + "/0": 3, f.late + "/1": 9}), f.clB.groupEntries("connect-sink-b-late"))

	// Running it again changes nothing and succeeds: no request is published.
	counts := func() map[string]int {
		out := map[string]int{}
		for _, topic := range []string{f.cfgB.ConfigTopic, f.cfgB.OffsetsTopic, f.own, f.cfgB.RequestTopic, f.cfgB.ResultTopic} {
			out[topic] = len(f.clB.readAll(topic))
		}
		return out
	}
	before := counts()
	rep, _, err = migrate.Migrate(ctx, opts)
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Equal(t, want, outcomes(rep))
	require.Equal(t, before, counts())
	require.Equal(t, configB, f.clB.live(f.cfgB.ConfigTopic))
}

// Bad input on A makes that connector skipped with the reason and never stops the others; a
// deleted connector is not selected at all (an --include of its name matches nothing:
// AllowEmpty goes on).
func TestExportSkipsBadInput(t *testing.T) {
	f := newFleet(t)
	f.seed(t)
	sel, err := source.NewSelection(source.SelectionFlags{Include: []string{"bad-.*", "deleted-src", "file-src-1"}})
	require.NoError(t, err)
	opts := migrate.Options{
		Topics:    &source.TopicsSource{Brokers: f.cfgA.Brokers, ConfigTopic: f.cfgA.ConfigTopic, OffsetsTopic: f.cfgA.OffsetsTopic},
		Selection: sel, Logger: slog.New(slog.DiscardHandler),
	}
	_, err = migrate.Export(context.Background(), opts)
	require.ErrorContains(t, err, `Include "deleted-src" matches no connector of A`)
	opts.AllowEmpty = true
	rep, err := migrate.Export(context.Background(), opts)
	require.NoError(t, err)
	require.False(t, rep.OK())
	got := map[string]string{}
	for _, e := range rep.Connectors {
		got[e.Name] = string(e.Outcome) + ": " + e.Message.String()
	}
	require.Equal(t, []string{"bad-config", "bad-offsets", "bad-pending", "file-src-1"}, sortedKeys(got))
	require.Equal(t, "planned: ", got["file-src-1"])
	require.Contains(t, got["bad-config"], "skipped: connector record at offset")
	require.Contains(t, got["bad-offsets"], "skipped: undecodable offsets record: topic")
	require.Equal(t, "skipped: 1 task config record(s) are not committed yet (a task-config update is pending)", got["bad-pending"])
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Refused prechecks return ErrPrecheck before anything is published.
func TestMigratePrechecks(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	cfgA, cfgB := testConfig(a), testConfig(b)
	clA, clB := newClient(t, cfgA), newClient(t, cfgB)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, clA.kc, cfgA.ConfigTopic, cfgA.OffsetsTopic, true))
	require.NoError(t, offsetstore.CheckConnectTopics(ctx, clB.kc, cfgB.ConfigTopic, cfgB.OffsetsTopic, true))
	clB.createTopic("two-partitions-"+cfgB.ConfigTopic, 2)
	sel, err := source.NewSelection(source.SelectionFlags{})
	require.NoError(t, err)
	base := migrate.MigrateOptions{
		Options: migrate.Options{
			Topics:    &source.TopicsSource{Brokers: cfgA.Brokers, ConfigTopic: cfgA.ConfigTopic, OffsetsTopic: cfgA.OffsetsTopic},
			Selection: sel,
		},
		To: target.Target{Brokers: cfgB.Brokers, RequestTopic: cfgB.RequestTopic, ResultTopic: cfgB.ResultTopic,
			ConfigTopic: cfgB.ConfigTopic, OffsetsTopic: cfgB.OffsetsTopic},
	}
	tests := []struct {
		name string
		edit func(o *migrate.MigrateOptions)
		want string
	}{
		{name: "B unreachable", edit: func(o *migrate.MigrateOptions) { o.To.Brokers = []string{"127.0.0.1:1"} }, want: "B's Kafka cluster is unreachable"},
		{name: "B without Connect topics", edit: func(o *migrate.MigrateOptions) { o.To.ConfigTopic = "missing-" + cfgB.ConfigTopic }, want: "B's Connect topics: check config topic"},
		{name: "B's config topic has two partitions", edit: func(o *migrate.MigrateOptions) { o.To.ConfigTopic = "two-partitions-" + cfgB.ConfigTopic },
			want: "is required to have a single partition in order to guarantee consistency of connector configurations, but found 2 partitions."},
		{name: "no agent on B", edit: func(o *migrate.MigrateOptions) {}, want: "is an agent running on B?"},
		{name: "A is B", edit: func(o *migrate.MigrateOptions) {
			o.To.Brokers, o.To.ConfigTopic, o.To.OffsetsTopic = cfgA.Brokers, cfgA.ConfigTopic, cfgA.OffsetsTopic
			o.To.RequestTopic, o.To.ResultTopic = cfgA.ConfigTopic, cfgA.OffsetsTopic // exist: the check after them refuses
		}, want: "A and B are the same Connect cluster"},
		{name: "A unreachable", edit: func(o *migrate.MigrateOptions) { o.Topics.Brokers = []string{"127.0.0.1:1"} }, want: "A's Kafka cluster"},
		{name: "bad migration id", edit: func(o *migrate.MigrateOptions) { o.MigrationID = "a/b" }, want: `MigrationID "a/b"`},
		{name: "stop source without a timeout", edit: func(o *migrate.MigrateOptions) {
			o.StopSource, o.ConnectURL, o.Timeout = true, "http://127.0.0.1:1", 0
		}, want: "StopSource with Timeout 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			topics := *base.Topics
			o.Topics = &topics
			tt.edit(&o)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep, _, err := migrate.Migrate(ctx, o)
			require.ErrorIs(t, err, fleet.ErrPrecheck)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, rep)
		})
	}
}

// A connector whose request is above kafka-go's default 1 MiB is migrated (the publisher's
// writer takes requests up to B's OFFSETAGENT_MAX_REQUEST_BYTES); one above that fails at
// publish_request alone, saying why, and the others of its batch are published.
func TestMigrateLargeRequests(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	cfgA, cfgB := testConfig(a), testConfig(b)
	cfgB.MaxRequestBytes = 4 << 20
	clA := newClient(t, cfgA)
	agentA := startAgent(t, cfgA, agent.Options{})
	w := &kafka.Writer{Addr: kafka.TCP(cfgA.Brokers...), Topic: cfgA.RequestTopic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchBytes: 32 << 20,
		Transport: &kafka.Transport{MetadataTTL: time.Second}}
	defer w.Close()
	// Each step has its own bound: one for the whole test ran out on a loaded host while the
	// connectors were still being created, and cut the migration short ("the run was
	// interrupted before its wave").
	sizes := map[string]int{"small-src": 3, "big-src": 30_000, "huge-src": 80_000} // ~70 bytes an offset
	for name, n := range sizes {
		var offs []string
		for k := range n {
			offs = append(offs, fmt.Sprintf(`{"partition":{"filename":"file-%06d.txt"},"offset":{"position":%d}}`, k, k))
		}
		body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":%q,"file":"f.txt","topic":"t","tasks.max":"1"},"initial_offsets":[%s]}`,
			name, fileSource, strings.Join(offs, ","))
		msg, err := events.RequestMessage("", []byte(body), events.RequestOptions{ID: name, Source: "/integration-test"})
		require.NoError(t, err)
		// Writing a request is less work than the agent's creating its connector, which the
		// test waits a minute for.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		require.NoError(t, w.WriteMessages(ctx, msg))
		cancel()
		require.Equal(t, events.TypeCreateSucceeded, clA.waitResult(name, time.Minute).Type, name)
	}
	agentA.stop(t)
	startAgent(t, cfgB, agent.Options{})

	sel, err := source.NewSelection(source.SelectionFlags{})
	require.NoError(t, err)
	// The run bounds itself: its prechecks and its wave by Timeout, the results by Grace after
	// the requests' deadline. The prechecks read back the 110,000 offsets A's agent wrote, which
	// the test gave up to three minutes (a minute a connector), and the wave has B's agent write
	// what A's wrote: a minute, as once was, ran out on a loaded host while the offsets were
	// being read ("read offsets topic ...: context deadline exceeded": small-src skipped).
	rep, _, err := migrate.Migrate(context.Background(), migrate.MigrateOptions{
		Options: migrate.Options{
			Topics:    &source.TopicsSource{Brokers: cfgA.Brokers, ConfigTopic: cfgA.ConfigTopic, OffsetsTopic: cfgA.OffsetsTopic},
			Selection: sel, Logger: testLogger(t),
		},
		To: target.Target{Brokers: cfgB.Brokers, RequestTopic: cfgB.RequestTopic, ResultTopic: cfgB.ResultTopic,
			ConfigTopic: cfgB.ConfigTopic, OffsetsTopic: cfgB.OffsetsTopic, MaxRequestBytes: cfgB.MaxRequestBytes},
		Concurrency: 3, Timeout: 3 * time.Minute,
	})
	require.NoError(t, err)
	got, why := map[string]string{}, map[string]string{}
	for _, e := range rep.Connectors {
		got[e.Name], why[e.Name] = strings.TrimSpace(fmt.Sprintf("%s %s", e.Outcome, e.FailedStep)), e.Message.String()
		if e.Name == "huge-src" {
			require.Contains(t, e.Message.String(), "above B's agents' OFFSETAGENT_MAX_REQUEST_BYTES (4194304)")
		}
	}
	require.Equal(t, map[string]string{"small-src": "succeeded", "big-src": "succeeded", "huge-src": "failed publish_request"}, got, "%v", why)
	byConnector := map[string]int{}
	for key := range newClient(t, cfgB).live(cfgB.OffsetsTopic) {
		name, _, ok := offsetstore.DecodeKey([]byte(key))
		require.True(t, ok, key)
		byConnector[name]++
	}
	require.Equal(t, map[string]int{"small-src": 3, "big-src": 30_000}, byConnector, "B's offsets")
}
