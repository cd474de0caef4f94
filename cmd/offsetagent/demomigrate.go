package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/connectsim"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// The connectors of the migration demo's Connect cluster A: sources and a sink, running,
// paused and stopped, with offsets and without.
var demoFleet = []string{
	demoRequest, // file-src-1: a running source at position 30
	`{"name":"orders-src","config":{"connector.class":"FileStreamSource","file":"orders.txt","topic":"orders","tasks.max":"1"},` +
		`"initial_state":"PAUSED","initial_offsets":[{"partition":{"filename":"orders.txt"},"offset":{"position":4096}}]}`,
	`{"name":"orders-sink","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":"orders.out","topics":"orders"},` +
		`"initial_offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":120}},` +
		`{"partition":{"kafka_topic":"orders","kafka_partition":1},"offset":{"kafka_offset":75}}]}`,
	`{"name":"legacy-src","config":{"connector.class":"FileStreamSource","file":"legacy.txt","topic":"legacy"},"initial_state":"STOPPED"}`,
}

// demoTopic is the topic the demo's sink reads, on A and on B (MirrorMaker 2 would keep its
// name with the identity policy; across a copy that keeps offsets, --sink-offsets copy is right).
const demoTopic = "orders"

func cmdDemoMigrate(args []string, stdout, stderr io.Writer) int {
	if code, done := noFlags("demo-migrate", args, stdout, stderr); done {
		return code
	}
	if err := demoMigrate(context.Background(), stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "offsetagent demo-migrate: %v\n", err)
		return 1
	}
	return 0
}

// demoCluster is one Connect cluster of the demo: an embedded broker holding its Connect
// topics, and an agent on them.
type demoCluster struct {
	name   string
	broker *embeddedBroker
	cfg    agent.Config
	conns  *clientconfig.Connections
	stop   func()
}

// startDemoCluster starts an embedded broker with the sink's topic and an agent on it, and
// waits until the agent is ready (it consumes the request topic).
func startDemoCluster(ctx context.Context, name string, stderr io.Writer) (*demoCluster, error) {
	b, err := startEmbedded("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &demoCluster{name: name, broker: b, stop: b.Close}
	if c.cfg, err = loadConfig(ctx); err != nil {
		c.stop()
		return nil, err
	}
	c.cfg.Brokers, c.cfg.CreateConnectTopics = []string{b.Addr()}, true
	if c.conns, err = clientconfig.NewConnections(c.cfg.Security); err != nil {
		c.stop()
		return nil, err
	}
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: []string{b.Addr()}, Principal: c.cfg.Security.Principal()})
	cl.Timeout = 10 * time.Second
	if _, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: demoTopic, NumPartitions: 2, ReplicationFactor: 1}}}); err != nil {
		c.stop()
		return nil, fmt.Errorf("create topic %s on %s: %w", demoTopic, name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.stop()
		return nil, err
	}
	reg := newRegistry()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	a, err := agent.New(c.cfg, agent.Options{Logger: log, Registry: reg, Gatherer: reg, Version: version, Listener: ln})
	if err != nil {
		c.stop()
		return nil, err
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	c.stop = func() { cancel(); <-done; b.Close() }
	if err := waitAgentReady(ctx, "http://"+ln.Addr().String()+"/readyz", done); err != nil {
		c.stop()
		return nil, fmt.Errorf("%s's agent: %w", name, err)
	}
	return c, nil
}

// waitAgentReady polls readyz (at most 30 s) until it answers 200.
func waitAgentReady(ctx context.Context, readyz string, done <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-done:
			return fmt.Errorf("stopped: %v", err)
		case <-ctx.Done():
			return errors.New("not ready within 30s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// demoMigrate is `make demo-migrate`: Connect cluster A with a few connectors, Connect
// cluster B with its agent, then export, a dry run, the migration and a re-run, each printed
// as a user sees it, and what is on B at the end.
func demoMigrate(ctx context.Context, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	a, err := startDemoCluster(ctx, "A", stderr)
	if err != nil {
		return err
	}
	defer a.stop()
	fmt.Fprintf(stdout, "== Connect cluster A: Kafka at %s, Connect topics %s and %s\n", a.broker.Addr(), a.cfg.ConfigTopic, a.cfg.OffsetsTopic)
	for _, body := range demoFleet {
		res, err := publish(ctx, a.cfg, a.conns, []byte(body), events.RequestOptions{Source: "/offsetagent/demo"}, true, 30*time.Second)
		if err != nil {
			return fmt.Errorf("seed A: %w", err)
		}
		if res.Type != events.TypeCreateSucceeded {
			return fmt.Errorf("seed A: %s: %s", res.Subject, res.Data.Message)
		}
		written := 0
		if res.Data.OffsetsWritten != nil {
			written = *res.Data.OffsetsWritten
		}
		fmt.Fprintf(stdout, "   %-12s %s, %s, %d offsets\n", res.Subject, res.Data.Type, res.Data.InitialState, written)
	}
	b, err := startDemoCluster(ctx, "B", stderr)
	if err != nil {
		return err
	}
	defer b.stop()
	fmt.Fprintf(stdout, "== Connect cluster B: Kafka at %s, Connect topics %s and %s, its agent consumes %s\n",
		b.broker.Addr(), b.cfg.ConfigTopic, b.cfg.OffsetsTopic, b.cfg.RequestTopic)

	dir, err := os.MkdirTemp("", "offsetagent-demo-migrate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// A's Connect REST API, which stops A's connectors for the move and takes them back.
	urlA, stopA, err := serveDemoConnect(ctx, a)
	if err != nil {
		return err
	}
	defer stopA()
	cut := filepath.Join(dir, "cutover.json")
	from, to := []string{"--from-brokers", a.broker.Addr()}, []string{"--to-brokers", b.broker.Addr()}
	// legacy-src was STOPPED on A before: with --stop-source its state before the move is not
	// known (docs/migration.md, "Stopping on A and re-runs"), so it stays on A.
	move := []string{"--from-connect-url", urlA, "--stop-source", "--exclude", "legacy-src", "--no-verify", "--cutover-report", cut}
	steps := []struct {
		say  string
		args []string
		want int
	}{
		{"export: one KIP-995 body per connector of A (the file is 0600: bodies hold secrets)",
			append(append([]string{"export"}, from...), "-o", filepath.Join(dir, "bodies.jsonl")), 0},
		{"a selection that matches nothing is an error, not an empty success",
			append(append(append([]string{"migrate"}, from...), to...), "--include", "order-.*"), 1},
		{"the dry run: B's agent plans each connector and changes nothing",
			append(append(append([]string{"migrate"}, from...), to...), "--dry-run"), 0},
		// No Connect worker runs on B here: nothing would follow the offsets placed.
		{"the migration: each connector stopped on A (A's REST API), its offsets read at the stop, created on B\n" +
			"   (legacy-src, STOPPED on A by hand, stays: the state it had before is not known)",
			append(append(append([]string{"migrate"}, from...), to...), move...), 0},
		{"again: each connector already exists on B from this migration, nothing is written twice",
			append(append(append([]string{"migrate"}, from...), to...), move...), 0},
	}
	for _, s := range steps {
		fmt.Fprintf(stdout, "\n== %s\n$ offsetagent %s\n", s.say, strings.Join(s.args, " "))
		// As a user sees it: both streams on the terminal.
		if code := run(s.args, strings.NewReader(""), stdout, stdout); code != s.want {
			return fmt.Errorf("offsetagent %s: exit status %d, want %d", s.args[0], code, s.want)
		}
		if s.args[0] == "export" {
			bodies, err := os.ReadFile(filepath.Join(dir, "bodies.jsonl"))
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "$ cat bodies.jsonl\n%s", bodies)
		}
	}
	fmt.Fprintf(stdout, "\n== now on B: the records of %s and %s, as a Connect worker would have written them\n", b.cfg.ConfigTopic, b.cfg.OffsetsTopic)
	for _, topic := range []string{b.cfg.ConfigTopic, b.cfg.OffsetsTopic} {
		fmt.Fprintf(stdout, "-- %s\n", topic)
		if err := dumpTopic(ctx, b.cfg, b.conns, topic, stdout); err != nil {
			return err
		}
	}
	if err := demoSinkGroup(ctx, b, "connect-orders-sink", stdout); err != nil {
		return err
	}
	return demoRollback(ctx, a, b, urlA, cut, stdout)
}

// serveDemoConnect serves a Connect REST API over c's Connect topics (internal/connectsim: no
// task runs) on a loopback port, and returns its URL and what stops it.
func serveDemoConnect(ctx context.Context, c *demoCluster) (string, func(), error) {
	sim, err := connectsim.New(connectsim.Config{Topics: offsetstore.Options{Brokers: c.cfg.Brokers, ConfigTopic: c.cfg.ConfigTopic,
		OffsetsTopic: c.cfg.OffsetsTopic, Principal: c.cfg.Security.Principal(), Transport: &kafka.Transport{MetadataTTL: time.Second}}})
	if err != nil {
		return "", nil, fmt.Errorf("%s's Connect REST API: %w", c.name, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sim.Run(sctx) }()
	stop := func() { cancel(); <-done }
	if err := sim.WaitReady(ctx); err != nil {
		stop()
		return "", nil, fmt.Errorf("%s's Connect REST API: %w", c.name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stop()
		return "", nil, err
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close(); stop() }, nil
}

// demoRollback is the demo's way back: B works on (file-src-1 reads on), then `migrate
// rollback` of the cutover report cut, a dry run and then --execute, and A's connectors with
// their states and offsets after.
func demoRollback(ctx context.Context, a, b *demoCluster, urlA, cut string, stdout io.Writer) error {
	urlB, stopB, err := serveDemoConnect(ctx, b)
	if err != nil {
		return err
	}
	defer stopB()
	// No Connect worker runs on B here: its progress is written as B's workers would commit
	// it, file-src-1's position in its offsets topic and orders-sink's offsets in its group.
	const key, progress = `["file-src-1",{"filename":"test.txt"}]`, `{"position":55}`
	w := &kafka.Writer{Addr: kafka.TCP(b.cfg.Brokers...), Topic: b.cfg.OffsetsTopic, Balancer: kafka.Murmur2Balancer{Consistent: true},
		BatchTimeout: time.Millisecond, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	err = w.WriteMessages(ctx, kafka.Message{Key: []byte(key), Value: []byte(progress)})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("B's progress: %w", err)
	}
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: b.cfg.Brokers, Principal: b.cfg.Security.Principal()})
	cl.Timeout = 10 * time.Second
	resp, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: "connect-orders-sink", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{demoTopic: {{Partition: 0, Offset: 160}, {Partition: 1, Offset: 90}}}})
	if err == nil {
		for _, p := range resp.Topics[demoTopic] {
			if p.Error != nil {
				err = p.Error
			}
		}
	}
	if err != nil {
		return fmt.Errorf("B's progress of connect-orders-sink: %w", err)
	}
	fmt.Fprintf(stdout, "\n== B works on: file-src-1 commits %s on B, orders-sink's group consumes %s to offsets 160 and 90\n", progress, demoTopic)
	args := []string{"migrate", "rollback", cut, "--to-connect-url", urlB, "--from-brokers", a.broker.Addr(), "--timeout", "20s"}
	for _, s := range []struct {
		say  string
		args []string
	}{
		{"the way back, a dry run: what rollback would do per connector and partition, nothing changed", args},
		{"the way back: stopped on B, B's progress carried to A (PATCH /connectors/NAME/offsets on A), resumed on A, deleted on B",
			append(args, "--execute")},
	} {
		fmt.Fprintf(stdout, "\n== %s\n$ offsetagent %s\n", s.say, strings.Join(s.args, " "))
		if code := run(s.args, strings.NewReader(""), stdout, stdout); code != 0 {
			return fmt.Errorf("offsetagent migrate rollback: exit status %d, want 0", code)
		}
	}
	restA, err := connectrest.New(urlA, nil)
	if err != nil {
		return err
	}
	names, err := restA.Names(ctx)
	if err != nil {
		return fmt.Errorf("A's connectors: %w", err)
	}
	slices.Sort(names)
	fmt.Fprintf(stdout, "\n== now on A (GET /connectors/NAME/status and /offsets)\n")
	for _, n := range names {
		st, _, err := restA.Status(ctx, n)
		if err != nil {
			return fmt.Errorf("A's %s: %w", n, err)
		}
		offs, err := restA.Offsets(ctx, n)
		if err != nil {
			return fmt.Errorf("A's %s: %w", n, err)
		}
		var parts []string
		for _, o := range offs {
			parts = append(parts, jsonvalue.SortedText(o.Partition)+" "+jsonvalue.SortedText(o.Offset))
		}
		if len(parts) == 0 {
			parts = []string{"no offsets"}
		}
		fmt.Fprintf(stdout, "   %-12s %-8s %s\n", n, st.Connector.State, strings.Join(parts, ", "))
	}
	return nil
}

// demoSinkGroup prints the committed offsets of group on c's topic demoTopic.
func demoSinkGroup(ctx context.Context, c *demoCluster, group string, w io.Writer) error {
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: c.cfg.Brokers, Principal: c.cfg.Security.Principal()})
	cl.Timeout = 10 * time.Second
	resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{demoTopic: {0, 1}}})
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	if err != nil {
		return fmt.Errorf("read group %s on B: %w", group, err)
	}
	fmt.Fprintf(w, "-- group %s (the sink's offsets)\n", group)
	for _, p := range resp.Topics[demoTopic] {
		fmt.Fprintf(w, "  %s partition %d: offset %d\n", demoTopic, p.Partition, p.CommittedOffset)
	}
	return nil
}
