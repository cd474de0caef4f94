package main

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// migrateConcurrency is migrate's --concurrency in the scenario: as many requests in flight as
// the burst has, so that both measure the agents, not the pacing (the default, 16, paces a
// production migration; each request is a few produce round trips, so the rate grows with it).
const migrateConcurrency = 1000

// migrateScenario measures migrate's rate target: moving N connectors (10 offsets each) from one Connect
// cluster's topics with migrate, against the many-connectors burst of the same requests
// published directly (scenario 3's measurement): at least 0.8x its rate. Agents run with the
// shipped defaults. Each is measured twice, in the order burst, migrate, migrate, burst, and
// the better run counts: on a shared machine the order and the neighbours' load move single
// runs by 2x.
func migrateScenario(ctx context.Context, e *env) ([]row, error) {
	const sc = "5 migrate"
	n := e.scaled(1000, 40)
	defaults, err := agentDefaults(ctx)
	if err != nil {
		return nil, err
	}
	cfgA, err := e.fillConnectTopics(ctx, n)
	if err != nil {
		return nil, err
	}
	var burst, rate, whole float64
	for _, step := range []string{"burst", "migrate", "migrate", "burst"} {
		if step == "burst" {
			r, _, err := e.burstRun(ctx, "burst", n, defaults.Concurrency, defaults.RequestTopicPartitions, 3*time.Minute)
			if err != nil {
				return nil, fmt.Errorf("burst: %w", err)
			}
			e.progress("burst: %.0f requests/s", r)
			burst = max(burst, r)
			continue
		}
		r, w, err := e.migrateRun(ctx, cfgA, defaults, n)
		if err != nil {
			return nil, err
		}
		e.progress("migrate: %.0f connectors/s publishing, %.0f/s with reading A", r, w)
		rate, whole = max(rate, r), max(whole, w)
	}
	return []row{
		ratioRow(sc, fmt.Sprintf("%d connectors x 10 offsets, first request->last result (connectors/s)", n), rate, burst, "%.1f", ">=", 0.8),
		ratioRow(sc, "the same, whole run: reading A, prechecks, B's results (connectors/s)", whole, burst, "%.1f", "", 0),
	}, nil
}

// fillConnectTopics writes Connect topics holding n MirrorMaker 2 source connectors with 10
// offsets each, as a worker wrote them, and returns their configuration (cluster A).
func (e *env) fillConnectTopics(ctx context.Context, n int) (agent.Config, error) {
	cfgA := e.config("from")
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: e.brokers, Transport: freshTransport()}) // the bench's brokers know no users
	cl.Timeout = 30 * time.Second
	if err := offsetstore.CheckConnectTopics(ctx, cl, cfgA.ConfigTopic, cfgA.OffsetsTopic, true); err != nil {
		return cfgA, err
	}
	var configs, offsets []kafka.Message
	for i := range n {
		name := fmt.Sprintf("mm2-%05d", i)
		configs = append(configs, kafka.Message{Key: []byte("connector-" + name),
			Value: fmt.Appendf(nil, `{"properties":{"connector.class":%q,"source.cluster.alias":"src","target.cluster.alias":"dst","topics":".*","tasks.max":"4","name":%q}}`, mm2Class, name)})
		offsets = append(offsets, mm2Records("", name, 10)...)
	}
	for topic, msgs := range map[string][]kafka.Message{cfgA.ConfigTopic: configs, cfgA.OffsetsTopic: offsets} {
		w := bareWriter(e.brokers, topic)
		err := w.WriteMessages(ctx, msgs...)
		_ = w.Close()
		if err != nil {
			return cfgA, fmt.Errorf("fill %q: %w", topic, err)
		}
	}
	return cfgA, nil
}

// migrateRun migrates every connector of cfgA's topics to a fresh agent and returns the rate
// from the first request to the last result, and over the whole run.
func (e *env) migrateRun(ctx context.Context, cfgA, defaults agent.Config, n int) (float64, float64, error) {
	cfgB := e.config("to")
	cfgB.Concurrency, cfgB.RequestTopicPartitions = defaults.Concurrency, defaults.RequestTopicPartitions
	b, err := e.startAgent(ctx, cfgB, nil)
	if err != nil {
		return 0, 0, err
	}
	defer b.stop()
	sel, err := source.NewSelection(source.SelectionFlags{})
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	rep, _, err := migrate.Migrate(ctx, migrate.MigrateOptions{
		Options: migrate.Options{Topics: &source.TopicsSource{Brokers: e.brokers, ConfigTopic: cfgA.ConfigTopic, OffsetsTopic: cfgA.OffsetsTopic},
			Selection: sel},
		To: target.Target{Brokers: e.brokers, RequestTopic: cfgB.RequestTopic, ResultTopic: cfgB.ResultTopic,
			ConfigTopic: cfgB.ConfigTopic, OffsetsTopic: cfgB.OffsetsTopic},
		Concurrency: migrateConcurrency, Timeout: 3 * time.Minute,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("migrate: %w", err)
	}
	whole := time.Since(t0)
	if !rep.OK() || len(rep.Connectors) != n {
		return 0, 0, fmt.Errorf("migrate: %d of %d connectors, not all succeeded", len(rep.Connectors), n)
	}
	return float64(n) / rep.Finished.Sub(rep.Publishing).Seconds(), float64(n) / whole.Seconds(), nil
}

// burstRun publishes n requests for distinct connectors (10 offsets each) in one write to an
// in-process agent with the given concurrency and request-topic partitions, and returns the
// results' rate and publish->result latencies, as the migrate scenario's agent runs: its
// baseline. Results missing after budget are left out.
func (e *env) burstRun(ctx context.Context, tag string, n, concurrency, partitions int, budget time.Duration) (float64, []time.Duration, error) {
	cfg := e.config(tag)
	cfg.Concurrency, cfg.RequestTopicPartitions = concurrency, partitions
	a, err := e.startAgent(ctx, cfg, nil)
	if err != nil {
		return 0, nil, err
	}
	defer a.stop()
	pub := newPublisher(e.brokers, cfg.RequestTopic)
	defer pub.Close()
	if _, err := roundTrip(ctx, a.watcher, pub, mm2Body(tag+"-warmup", 1), tag+"-warmup", 30*time.Second); err != nil {
		return 0, nil, fmt.Errorf("warm-up: %w", err)
	}
	msgs := make([]kafka.Message, n)
	ids := make([]string, n)
	for i := range msgs {
		ids[i] = fmt.Sprintf("%s-%d", tag, i)
		if msgs[i], err = requestMsg(mm2Body(ids[i], 10), ids[i]); err != nil {
			return 0, nil, err
		}
	}
	t0 := time.Now()
	if err := pub.WriteMessages(ctx, msgs...); err != nil {
		return 0, nil, fmt.Errorf("publish %d requests: %w", n, err)
	}
	got := a.watcher.wait(ctx, ids, budget)
	if len(got) == 0 {
		return 0, nil, fmt.Errorf("no result within %s", budget)
	}
	for id, r := range got {
		if err := checkResults(map[string]resultInfo{id: r}, 1); err != nil {
			return 0, nil, err
		}
	}
	lat := make([]time.Duration, 0, len(got))
	var last time.Time
	for _, r := range got {
		lat = append(lat, r.at.Sub(t0))
		if r.at.After(last) {
			last = r.at
		}
	}
	return float64(len(got)) / last.Sub(t0).Seconds(), lat, nil
}
