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
// cluster B with its agent, then the four verbs as a user runs them (migrate plan, apply and
// a re-run of apply, verify, rollback as a dry run and with --execute), each printed as a user
// sees it, and A's connectors at the end.
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
	// Each cluster's Connect REST API (internal/connectsim: no task runs, no worker commits):
	// A's stops the connectors for the move and takes them back; B's checks their plugins and
	// configs, and stops and deletes them on the way back.
	urlA, stopA, err := serveDemoConnect(ctx, a)
	if err != nil {
		return err
	}
	defer stopA()
	urlB, stopB, err := serveDemoConnect(ctx, b)
	if err != nil {
		return err
	}
	defer stopB()
	fmt.Fprintf(stdout, "== Connect cluster B: Kafka at %s, Connect topics %s and %s, its agent consumes %s\n",
		b.broker.Addr(), b.cfg.ConfigTopic, b.cfg.OffsetsTopic, b.cfg.RequestTopic)

	dir, err := os.MkdirTemp("", "offsetagent-demo-migrate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	planFile := filepath.Join(dir, "plan.yaml")
	cut := planFile + ".cutover.json" // apply's cutover report, by default beside the plan
	// legacy-src was STOPPED on A before: with --stop-source its state before the move is not
	// known (docs/migration.md, "Stopping on A and re-runs"), so it stays on A.
	planArgs := []string{"migrate", "plan", "-o", planFile, "--from-brokers", a.broker.Addr(), "--from-connect-url", urlA,
		"--to-brokers", b.broker.Addr(), "--to-connect-url", urlB, "--stop-source", "--exclude", "legacy-src"}
	// No Connect worker runs on B here: nothing would commit past the offsets placed, so apply
	// does not wait to verify; migrate verify does, once B has worked on.
	applyArgs := []string{"migrate", "apply", planFile, "--no-verify"}
	steps := []demoStep{
		{say: "plan: read A and B, run every check, ask B's agent to plan each connector, write the plan for review (nothing changes)\n" +
			"   (legacy-src, STOPPED on A by hand, is left out: with --stop-source its state before is not known)",
			args: planArgs, then: func() error { return demoExcerpt(stdout, planFile, demoPlanExcerpt) }},
		{say: "apply: exactly the plan; A and B read again (a connector that drifted since the plan is refused), each\n" +
			"   connector stopped on A (A's REST API), its offsets read at the stop, created on B; the cutover report beside the plan",
			args: applyArgs, then: func() error { return demoExcerpt(stdout, cut, demoCutoverExcerpt) }},
		{say: "apply again: the same migration continues; each connector already exists on B from it, nothing is written twice",
			args: applyArgs},
	}
	if err := demoSteps(stdout, steps...); err != nil {
		return err
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
	if err := demoWorkOnB(ctx, b, stdout); err != nil {
		return err
	}
	back := []string{"migrate", "rollback", cut, "--from-brokers", a.broker.Addr(), "--timeout", "20s"}
	steps = []demoStep{
		{say: "verify: does B continue from the offsets placed? Each partition's progress on B is read, the report written back\n" +
			"   (orders-src is PAUSED on B: it commits nothing, so it stays waiting, exit status 3)",
			args: []string{"migrate", "verify", cut, "--verify-timeout", "1s"}, want: exitWaiting},
		{say: "rollback, a dry run: what the way back would do per connector and partition, nothing changed", args: back},
		{say: "rollback --execute: stopped on B, B's progress carried to A (PATCH /connectors/NAME/offsets on A), resumed on A, deleted on B",
			args: append(slices.Clone(back), "--execute")},
	}
	if err := demoSteps(stdout, steps...); err != nil {
		return err
	}
	return demoShowA(ctx, urlA, stdout)
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

// demoStep is one command line of the demo: what it shows, its arguments, the exit status it
// must end with, and what is printed after it (a file it wrote).
type demoStep struct {
	say  string
	args []string
	want int
	then func() error
}

// demoSteps runs each step's command line in-process, both streams on stdout as a user sees
// them on a terminal, and fails on an exit status other than the step's.
func demoSteps(stdout io.Writer, steps ...demoStep) error {
	for _, s := range steps {
		fmt.Fprintf(stdout, "\n== %s\n$ offsetagent %s\n", s.say, strings.Join(s.args, " "))
		if code := run(s.args, strings.NewReader(""), stdout, stdout); code != s.want {
			return fmt.Errorf("offsetagent %s: exit status %d, want %d", strings.Join(s.args[:2], " "), code, s.want)
		}
		if s.then != nil {
			if err := s.then(); err != nil {
				return err
			}
		}
	}
	return nil
}

// demoExcerpt prints the lines of file that keep says to keep, as `cat FILE` would show
// them, with "..." where lines were left out.
func demoExcerpt(w io.Writer, file string, keep func(lines []string) []bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	kept := keep(lines)
	fmt.Fprintf(w, "$ cat %s   # an excerpt\n", filepath.Base(file))
	skipped := false
	for i, l := range lines {
		if !kept[i] {
			skipped = true
			continue
		}
		if skipped {
			fmt.Fprintln(w, "...")
			skipped = false
		}
		fmt.Fprintln(w, l)
	}
	if skipped {
		fmt.Fprintln(w, "...")
	}
	return nil
}

// demoPlanExcerpt keeps of a plan file what a reviewer reads first: its head, A's and B's
// Kafka cluster ids, the settings and selection given, the summary, and of the connector
// orders-sink its states, its config on B, its edits, its groups, its offsets now and its
// hazards.
func demoPlanExcerpt(lines []string) []bool {
	shown := []string{"target", "type", "state_on_a", "target_state", "exists_on_b", "config_on_b", "edits", "sink", "offsets_now", "hazards", "refused"}
	kept := make([]bool, len(lines))
	var section, key, field, connector string
	for i, l := range lines {
		switch {
		case !strings.HasPrefix(l, " "):
			section, _, _ = strings.Cut(l, ":")
			kept[i] = section != "created" && section != "created_by"
			continue
		case strings.HasPrefix(l, "  - name: "):
			connector, field = strings.TrimPrefix(l, "  - name: "), "name"
		case strings.HasPrefix(l, "    ") && !strings.HasPrefix(l, "     "):
			field, _, _ = strings.Cut(strings.TrimSpace(l), ":")
		case strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   "):
			key, _, _ = strings.Cut(strings.TrimSpace(l), ":")
		}
		switch section {
		case "from", "to":
			kept[i] = key == "kafka_cluster_id"
		case "settings":
			kept[i] = key == "stop_source"
		case "selection":
			kept[i] = key == "exclude"
		case "summary":
			kept[i] = true
		case "connectors":
			kept[i] = connector == "orders-sink" && (field == "name" || slices.Contains(shown, field))
		}
	}
	return kept
}

// demoCutoverExcerpt keeps of a cutover report its head: the migration, A's and B's
// identities, the topic holding the states before the move, and the counts of verdicts.
func demoCutoverExcerpt(lines []string) []bool {
	kept := make([]bool, len(lines))
	for i, l := range lines {
		if strings.HasPrefix(l, `  "connectors"`) {
			break
		}
		kept[i] = !strings.HasPrefix(l, `  "migration_started"`) && !strings.HasPrefix(l, `  "migration_finished"`)
	}
	return kept
}

// demoWorkOnB writes B's progress as B's Connect workers would commit it (no worker runs
// here): file-src-1's position in B's offsets topic and orders-sink's offsets in its group.
func demoWorkOnB(ctx context.Context, b *demoCluster, stdout io.Writer) error {
	const key, progress = `["file-src-1",{"filename":"test.txt"}]`, `{"position":55}`
	w := &kafka.Writer{Addr: kafka.TCP(b.cfg.Brokers...), Topic: b.cfg.OffsetsTopic, Balancer: kafka.Murmur2Balancer{Consistent: true},
		BatchTimeout: time.Millisecond, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	err := w.WriteMessages(ctx, kafka.Message{Key: []byte(key), Value: []byte(progress)})
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
	return nil
}

// demoShowA prints A's connectors with their states and offsets, as A's Connect REST API
// at urlA answers them.
func demoShowA(ctx context.Context, urlA string, stdout io.Writer) error {
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
