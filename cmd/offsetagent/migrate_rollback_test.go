package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/connectsim"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/kafkatest"
	"github.com/offsetagent/offsetagent/migrate/rollback"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// serveConnect serves a Connect REST API over the Connect topics on brokers (connectsim) and
// returns its URL and a client of it.
func serveConnect(t *testing.T, brokers string) (string, *connectrest.Client) {
	t.Helper()
	sim, err := connectsim.New(connectsim.Config{Topics: offsetstore.Options{Brokers: []string{brokers}, ConfigTopic: "connect-configs", OffsetsTopic: "connect-offsets",
		// Not kafka-go's shared transport: it caches metadata for 6 s, from before the agent created the topics.
		Transport: &kafka.Transport{MetadataTTL: time.Second}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	require.NoError(t, sim.WaitReady(wctx))
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	c, err := connectrest.New(srv.URL, nil)
	require.NoError(t, err)
	return srv.URL, c
}

// topicRecords is every record of topic on brokers, as text, for a before/after comparison.
func topicRecords(t *testing.T, brokers, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: []string{brokers}, Transport: &kafka.Transport{MetadataTTL: time.Second}})
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

// A FileStream source and sink moved with --stop-source go back with `migrate rollback`: the
// dry run changes nothing on A or B and says what it would do; --execute leaves A running them
// at B's progress (the source's position, the sink's committed offset), B with neither, and
// exits 0; a name the report does not hold is refused (exit 1) and left alone.
func TestMigrateRollbackCommand(t *testing.T) {
	a, b := twoClusters(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, br := range []string{a, b} {
		cl := kafkaio.NewClient(kafkaio.Options{Brokers: []string{br}})
		require.NoError(t, kafkaio.EnsureTopic(ctx, cl, "orders", 1, nil))
		w := &kafka.Writer{Addr: kafka.TCP(br), Topic: "orders", BatchTimeout: time.Millisecond}
		var msgs []kafka.Message
		for i := range 40 {
			msgs = append(msgs, kafka.Message{Value: []byte(fmt.Sprint(i))})
		}
		require.NoError(t, w.WriteMessages(ctx, msgs...))
		require.NoError(t, w.Close())
	}
	cmd := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	// A's connectors, created by an agent on A: a source at position 30, a sink at offset 10.
	stopA := startTestAgent(t, a)
	bodies := []string{
		`{"name":"file-src","config":{"connector.class":"FileStreamSource","file":"in.txt","topic":"orders"},"initial_offsets":[{"partition":{"filename":"in.txt"},"offset":{"position":30}}]}`,
		`{"name":"file-sink","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":"out.txt","topics":"orders"},` +
			`"initial_offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":10}}]}`,
	}
	for _, body := range bodies {
		publishUntilAccepted(t, body)
	}
	stopA()
	t.Cleanup(startTestAgent(t, b))
	urlA, restA := serveConnect(t, a)

	dir := t.TempDir()
	cut := filepath.Join(dir, "cutover.json")
	migrateArgs := []string{"migrate", "--from-brokers", a, "--from-connect-url", urlA, "--to-brokers", b,
		"--stop-source", "--no-verify", "--cutover-report", cut, "--timeout", "60s"}
	var code int
	var out, stderr string
	for attempt := 0; ; attempt++ { // B's agent creates its topics as it starts
		code, out, stderr = cmd(migrateArgs...)
		if code != 2 || attempt >= 50 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, 0, code, stderr+out)
	urlB, restB := serveConnect(t, b)
	// The migration ran without B's REST API: the rollback is given it.
	for _, n := range []string{"file-src", "file-sink"} {
		st, ok, err := restA.Status(ctx, n)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "STOPPED", st.Connector.State, n)
	}

	// B works on: its source reads on to position 55, its sink consumes to offset 25.
	w := &kafka.Writer{Addr: kafka.TCP(b), Balancer: kafka.Murmur2Balancer{Consistent: true}, BatchTimeout: time.Millisecond,
		Transport: &kafka.Transport{MetadataTTL: time.Second}}
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Topic: "connect-offsets", Key: []byte(`["file-src",{"filename":"in.txt"}]`), Value: []byte(`{"position":55}`)}))
	require.NoError(t, w.Close())
	kafkatest.CommitEntries(t, []string{b}, "connect-file-sink", kafkatest.GroupEntry{Topic: "orders", Partition: 0, Offset: 25, Epoch: -1})

	snapshot := func() []string {
		var all []string
		for _, br := range []string{a, b} {
			for _, topic := range []string{"connect-configs", "connect-offsets"} {
				all = append(all, topicRecords(t, br, topic)...)
			}
		}
		return all
	}
	rollbackArgs := []string{"migrate", "rollback", cut, "--to-connect-url", urlB, "--from-brokers", a, "--timeout", "20s"}

	// The dry run: what it would do, nothing changed.
	before := snapshot()
	report := filepath.Join(dir, "rollback.json")
	require.NoError(t, os.WriteFile(report, []byte("old"), 0o644))
	code, out, stderr = cmd(append(rollbackArgs, "--report", report)...)
	require.Equal(t, 0, code, stderr+out)
	require.Contains(t, out, "2 connectors: 0 rolled back, 2 would roll back, 0 refused")
	require.Contains(t, out, "(a dry run: nothing was changed; --execute rolls back)")
	require.Regexp(t, `file-src\s+\{"filename":"in.txt"\}\s+\{"position":55\}\s+\{"position":55\}\s+carried`, out)
	require.Regexp(t, `file-sink\s+\{"kafka_partition":0,"kafka_topic":"orders"\}\s+\{"kafka_offset":25\}\s+\{"kafka_offset":25\}\s+carried`, out)
	require.Equal(t, before, snapshot(), "a dry run changes nothing on A or B")
	fi, err := os.Stat(report)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// A connector the report does not hold is refused, the others not touched.
	code, out, stderr = cmd(append(rollbackArgs, "--include", "file-src", "--include", "hand-made")...)
	require.Equal(t, 1, code, stderr+out)
	require.Regexp(t, `hand-made\s+-\s+-\s+refused\s+-\s+no\s+not moved by this report`, out)
	require.Equal(t, before, snapshot())

	// --execute: A runs both at B's progress, B has neither.
	code, out, stderr = cmd(append(rollbackArgs, "--execute", "--report", report)...)
	require.Equal(t, 0, code, stderr+out)
	require.Contains(t, out, "2 connectors: 2 rolled back, 0 would roll back, 0 refused, 0 failed, 0 kept on B; partitions: 2 carried, 0 not carried, 0 skip")
	for n, want := range map[string]string{"file-src": `{"position":55}`, "file-sink": `{"kafka_offset":25}`} {
		st, ok, err := restA.Status(ctx, n)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "RUNNING", st.Connector.State, n)
		offs, err := restA.Offsets(ctx, n)
		require.NoError(t, err)
		require.Len(t, offs, 1, n)
		b, err := json.Marshal(offs[0].Offset)
		require.NoError(t, err)
		require.JSONEq(t, want, string(b), n)
	}
	names, err := restB.Names(ctx)
	require.NoError(t, err)
	require.Empty(t, names, "nothing left on B")
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	var rep rollback.Report
	require.NoError(t, json.Unmarshal(data, &rep))
	require.Equal(t, 2, rep.Counts[rollback.RolledBack])

	// Again: already rolled back, nothing to do.
	code, out, stderr = cmd(append(rollbackArgs, "--execute")...)
	require.Equal(t, 0, code, stderr+out)
	require.Contains(t, out, "already rolled back")
}

// `migrate rollback --help` (verbHelps, writeUsage) lists its own flags only, each in exactly
// one group; a bad flag or a missing REPORT is status 2 pointing at the help.
func TestMigrateRollbackHelp(t *testing.T) {
	cmd := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := cmd("migrate", "rollback", "--help")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut)
	require.True(t, strings.HasPrefix(out, "usage: offsetagent migrate rollback REPORT [--execute]"), out)

	fs := flag.NewFlagSet("migrate rollback", flag.ContinueOnError)
	var f rollbackFlags
	f.register(fs)
	seen := map[string]string{}
	groups := verbHelps["migrate rollback"].groups // rendered by writeUsage, as every verb's
	require.NotEmpty(t, groups)
	for _, g := range groups {
		require.Contains(t, out, "\n"+g.title+":\n")
		for _, name := range g.flags {
			require.NotNil(t, fs.Lookup(name), "group %q names --%s, which rollback does not register", g.title, name)
			require.NotContains(t, seen, name, "--%s is in groups %q and %q", name, seen[name], g.title)
			seen[name] = g.title
		}
	}
	fs.VisitAll(func(fl *flag.Flag) {
		require.Contains(t, seen, fl.Name, "--%s is in no help group", fl.Name)
		require.Contains(t, out, "\n  --"+fl.Name)
	})
	for _, notOurs := range []string{"--to-config-topic", "--stop-source", "--dry-run", "--rename", "--cutover-report"} {
		require.NotContains(t, out, notOurs, "the shortcut's flags are not rollback's")
	}
	require.Contains(t, out, "  --from-connect-config FILE\n")
	require.Contains(t, out, "  --timeout DURATION  (default 2m0s)\n")

	code, out, errOut = cmd("migrate", "rollback", "--frobnicate")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "run 'offsetagent migrate rollback --help' for usage")
	code, _, errOut = cmd("migrate", "rollback", "--execute")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "give the cutover report of the migration to roll back")
	code, _, errOut = cmd("migrate", "rollback", "a.json", "b.json")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unexpected argument "b.json"`)
	code, _, errOut = cmd("migrate", "rollback", filepath.Join(t.TempDir(), "none.json"))
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "offsetagent migrate rollback: ")
}
