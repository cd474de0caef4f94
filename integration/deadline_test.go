package integration

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/target"
)

// A request read at or after its deadline (the deadline extension) is answered failed, 408,
// and writes nothing; one whose deadline is ahead runs.
func TestRequestDeadlineHonoured(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	startAgent(t, cfg, agent.Options{})
	cl := newClient(t, cfg)
	body := readFile(t, "testdata/file-src-1.json")
	late := cl.publish(body, events.RequestOptions{Deadline: time.Now().Add(-time.Second)})
	res := cl.waitResult(late, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type, res.Data.Message)
	require.Equal(t, 408, res.Data.ErrorCode)
	require.Equal(t, "decode_request", res.Data.FailedStep)
	require.Contains(t, res.Data.Message, "nothing was written")
	require.Empty(t, cl.live(cfg.ConfigTopic), "a request past its deadline writes nothing")

	ok := cl.publish(body, events.RequestOptions{Deadline: time.Now().Add(time.Hour)})
	require.Equal(t, events.TypeCreateSucceeded, cl.waitResult(ok, resultWait).Type)
}

// Retriable produce errors that outlast a request's giveup (its deadline plus its sender's
// grace, events.ExtensionGiveUp) end its write phase there: the request fails 408 at the stage
// that was writing, what it wrote is rolled back, and nothing of it appears once the broker
// takes writes again. REQUEST_TIMED_OUT is answered after the records were appended: the
// config records land unacknowledged, and must be rolled back too (tombstoned: a worker that
// read the connector record runs the connector until a tombstone says otherwise).
//
// The config topic's faults are installed before the request is sent (at ""): with a fault
// hook the agent would write a stage's records in two halves around the point "mid:<step>"
// (Creator.stepWrite), and faults installed at "before:write_config" would reach the target
// state only, never the connector record. Without one it writes both in one produce request,
// as in production, and both land unacknowledged.
func TestWritesPastGiveUpRolledBack(t *testing.T) {
	t.Parallel() // waits out the requests' giveups: doc.go
	cases := []struct {
		name string
		// at is the fault point at which the faults are installed; "" is before the request.
		at    string
		step  string
		topic func(cfg agent.Config) string
		err   *kerr.Error
		// landed are the config keys whose records the broker appended unacknowledged: each
		// must end tombstoned. The connector's other config keys must have no record at all.
		landed []string
	}{
		{name: "config topic request timed out", step: "write_config",
			topic: func(cfg agent.Config) string { return cfg.ConfigTopic }, err: kerr.RequestTimedOut,
			landed: []string{"target-state-file-src-1", "connector-file-src-1"}},
		{name: "config topic not enough replicas", step: "write_config",
			topic: func(cfg agent.Config) string { return cfg.ConfigTopic }, err: kerr.NotEnoughReplicas},
		{name: "offsets topic request timed out", at: "before:write_offsets", step: "write_offsets",
			topic: func(cfg agent.Config) string { return cfg.OffsetsTopic }, err: kerr.RequestTimedOut},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each case has its own broker and agent and spends its time waiting for the
			// giveup: the cases wait side by side.
			t.Parallel()
			r := newFaultRig(t)
			const grace = 2 * time.Second
			deadline := time.Now().Add(5 * time.Second)
			giveUp := deadline.Add(grace)
			arm := func(cfg agent.Config) []kfake.Fault {
				// The faults outlast the giveup by a second.
				time.AfterFunc(time.Until(giveUp.Add(time.Second)), r.remove)
				return []kfake.Fault{produceFault(tc.topic(cfg), tc.err, -1)}
			}
			r.start(t, tc.at, arm)
			if tc.at == "" {
				r.install(arm(r.cfg)...)
			}
			seedSource(t, r.cl, r.cfg)
			offsetsBefore := r.cl.live(r.cfg.OffsetsTopic)

			id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{Deadline: deadline, GiveUp: giveUp})
			res := r.cl.waitResult(id, resultWait)
			require.Equal(t, events.TypeCreateFailed, res.Type, "a request whose writes ran past its giveup succeeded: %s", res.Data.Message)
			require.Equal(t, 408, res.Data.ErrorCode, res.Data.Message)
			require.Equal(t, tc.step, res.Data.FailedStep, res.Data.Message)
			require.Contains(t, res.Data.Message, "rolled back")
			require.Positive(t, r.hits(), "the faults were hit")
			cu := res.Data.Cleanup
			require.NotNil(t, cu)
			require.Empty(t, cu.Error, cu.Summary)
			require.Empty(t, cu.Left, cu.Summary)
			require.Equal(t, 2, cu.OffsetsRestored, cu.Summary)

			// Nothing of the request appears later: the broker takes writes again, and the
			// agent answered once.
			time.Sleep(time.Until(giveUp.Add(2 * time.Second)))
			live := r.cl.live(r.cfg.ConfigTopic)
			require.NotContains(t, live, "connector-file-src-1")
			require.NotContains(t, live, "target-state-file-src-1")
			history := configHistory(r.cl, r.cfg.ConfigTopic, "file-src-1")
			for _, key := range []string{"target-state-file-src-1", "connector-file-src-1"} {
				if slices.Contains(tc.landed, key) {
					requireLandedThenTombstoned(t, history[key], key)
				} else {
					require.Empty(t, history[key], "%s: records of a write refused before its append", key)
				}
			}
			require.Equal(t, offsetsBefore, r.cl.live(r.cfg.OffsetsTopic), "offsets topic ends as before")
			require.Len(t, r.cl.allResults(), 1)
		})
	}
}

// configHistory is, for each config key of connector name (its target state and its
// config), what the config topic holds of it in order: "value" for a record, "tombstone" for
// a tombstone. A rollback must be seen as tombstones: the live view alone cannot tell a
// record rolled back from one that never landed.
func configHistory(cl *client, topic, name string) map[string][]string {
	out := map[string][]string{}
	for _, m := range cl.readAll(topic) {
		key := string(m.Key)
		if key != "connector-"+name && key != "target-state-"+name {
			continue
		}
		if m.Value == nil {
			out[key] = append(out[key], "tombstone")
		} else {
			out[key] = append(out[key], "value")
		}
	}
	return out
}

// requireLandedThenTombstoned checks a key's history (configHistory): it landed (a record
// with a value) and its last record is a tombstone.
func requireLandedThenTombstoned(t *testing.T, history []string, key string) {
	t.Helper()
	require.Contains(t, history, "value", "%s: the late record never landed, so its rollback was never tried: %v", key, history)
	require.Equal(t, "tombstone", history[len(history)-1], "%s: the late record was not tombstoned: %v", key, history)
}

// migrationPair is A with one source connector (file-src-1) and B whose agent made its topics
// and was stopped: requests published to B wait there until a test starts B's agent.
type migrationPair struct {
	cfgA, cfgB agent.Config
	clB        *client
	// clusterB is B's cluster (its kfake broker, for faults).
	clusterB *cluster
}

func newMigrationPair(t *testing.T) *migrationPair {
	t.Helper()
	p := &migrationPair{cfgA: testConfig(startCluster(t)), clusterB: startCluster(t)}
	p.cfgB = testConfig(p.clusterB)
	agentA := startAgent(t, p.cfgA, agent.Options{})
	clA := newClient(t, p.cfgA)
	id := clA.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, clA.waitResult(id, resultWait).Type)
	agentA.stop(t)
	startAgent(t, p.cfgB, agent.Options{}).stop(t)
	p.clB = newClient(t, p.cfgB)
	return p
}

// migrateOne runs a migration of the pair's one connector and returns the report and its entry.
func (p *migrationPair) migrateOne(t *testing.T, ctx context.Context, o migrate.MigrateOptions) (*apply.Report, *apply.Entry) {
	t.Helper()
	rep, _, err := migrate.Migrate(ctx, o)
	require.NoError(t, err)
	require.Len(t, rep.Connectors, 1)
	return rep, rep.Connectors[0]
}

// interruptOncePublished cancels the run (cancel) once its request is on B's request topic,
// checking for up to 30 s.
func (p *migrationPair) interruptOncePublished(ctx context.Context, cancel context.CancelFunc) {
	for range 600 {
		if ctx.Err() != nil {
			return
		}
		if len(p.clB.readAll(p.cfgB.RequestTopic)) > 0 {
			cancel()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *migrationPair) options(t *testing.T) migrate.MigrateOptions {
	t.Helper()
	sel, err := source.NewSelection(source.SelectionFlags{})
	require.NoError(t, err)
	return migrate.MigrateOptions{
		Options: migrate.Options{
			Topics:    &source.TopicsSource{Brokers: p.cfgA.Brokers, ConfigTopic: p.cfgA.ConfigTopic, OffsetsTopic: p.cfgA.OffsetsTopic},
			Selection: sel, Logger: testLogger(t),
		},
		To: target.Target{Brokers: p.cfgB.Brokers, RequestTopic: p.cfgB.RequestTopic, ResultTopic: p.cfgB.ResultTopic,
			ConfigTopic: p.cfgB.ConfigTopic, OffsetsTopic: p.cfgB.OffsetsTopic},
		SelectionKey: t.Name(), Concurrency: 4,
	}
}

// "failed" means it will not happen: a connector whose request got no result by the run's
// timeout is reported failed, and B's agent, started afterwards, refuses the request (its
// deadline has passed) instead of creating the connector.
func TestMigrateFailedRequestIsNeverCarriedOut(t *testing.T) {
	t.Parallel() // waits out the run's timeout: doc.go
	p := newMigrationPair(t)
	o := p.options(t)
	o.Timeout, o.Grace = 15*time.Second, 500*time.Millisecond
	_, e := p.migrateOne(t, context.Background(), o)
	require.Equal(t, apply.OutcomeFailed, e.Outcome, e.Message)
	require.Equal(t, "await_result", e.FailedStep, "the request was published: %s", e.Message)
	require.Contains(t, e.Message.String(), "so it will not be created")

	startAgent(t, p.cfgB, agent.Options{})
	res := p.clB.waitResult(e.RequestID, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type, "B's agent carried out a request reported failed: %s", res.Data.Message)
	require.Equal(t, 408, res.Data.ErrorCode)
	require.Empty(t, p.clB.live(p.cfgB.ConfigTopic), "nothing of the failed connector is on B")
}

// "failed" stays true when B's agent took the request up in time but B's config topic keeps
// failing its writes (retriable errors) past the run's grace: the agent rolls the request back
// at its giveup and answers 408, and nothing of the connector appears on B once the broker
// takes writes again.
func TestMigrateFailedStaysTrueWhenWritesRunPastGrace(t *testing.T) {
	t.Parallel() // waits out the run's timeout and grace: doc.go
	p := newMigrationPair(t)
	fake := p.clusterB.requireFake(t)
	var (
		mu      sync.Mutex
		handles []*kfake.FaultHandle
	)
	var once sync.Once
	startAgent(t, p.cfgB, agent.Options{Fault: func(point, _ string) {
		if point == "before:write_config" {
			once.Do(func() {
				mu.Lock()
				defer mu.Unlock()
				handles = append(handles, fake.Fault(produceFault(p.cfgB.ConfigTopic, kerr.RequestTimedOut, -1)))
			})
		}
	}})
	o := p.options(t)
	o.Timeout, o.Grace = 8*time.Second, 2*time.Second
	_, e := p.migrateOne(t, context.Background(), o)
	require.Equal(t, apply.OutcomeFailed, e.Outcome, e.Message)
	require.Contains(t, e.Message.String(), "so it will not be created")

	// The faults outlast the grace by a second.
	time.Sleep(time.Second)
	mu.Lock()
	require.Len(t, handles, 1, "B's agent reached write_config")
	require.Positive(t, handles[0].Hits())
	handles[0].Remove()
	mu.Unlock()

	res := p.clB.waitResult(e.RequestID, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type, "B's agent carried out a request reported failed: %s", res.Data.Message)
	require.Equal(t, 408, res.Data.ErrorCode, res.Data.Message)
	require.Equal(t, "write_config", res.Data.FailedStep)
	time.Sleep(2 * time.Second)
	live := p.clB.live(p.cfgB.ConfigTopic)
	require.NotContains(t, live, "connector-file-src-1", "the connector reported failed exists on B")
	require.NotContains(t, live, "target-state-file-src-1")
	require.Empty(t, p.clB.live(p.cfgB.OffsetsTopic), "no offset of the failed connector is on B")
}

// A run interrupted while its requests are in flight reports them pending, not failed: their
// deadline is ahead, and B's agent may still carry them out (and here does).
func TestMigrateInterruptedIsPending(t *testing.T) {
	p := newMigrationPair(t)
	o := p.options(t)
	o.Timeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.interruptOncePublished(ctx, cancel)
	rep, e := p.migrateOne(t, ctx, o)
	require.Equal(t, apply.OutcomePending, e.Outcome, e.Message)
	require.Contains(t, e.Message.String(), "run the same command again after")
	require.False(t, rep.OK())

	startAgent(t, p.cfgB, agent.Options{})
	require.Equal(t, events.TypeCreateSucceeded, p.clB.waitResult(e.RequestID, resultWait).Type, "pending was right: it was carried out")
	// The re-run learns the outcome.
	_, e = p.migrateOne(t, context.Background(), o)
	require.Equal(t, apply.OutcomeSucceeded, e.Outcome, e.Message)
}

// delayProduceOnce holds the first produce request that writes to topic (a record of a
// partition, not a permission probe) until the time until returns has passed, then lets the
// broker append it and answer as usual: an acknowledgement that comes late. It reports on hit
// when the request arrived.
func delayProduceOnce(fake *kfake.Cluster, topic string, until func() time.Time) (hit <-chan struct{}) {
	arrived := make(chan struct{})
	var once sync.Once
	fake.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ProduceRequest)
		writes := false
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				writes = writes || (t.Topic == topic && p.Partition >= 0)
			}
		}
		first := false
		if writes {
			once.Do(func() { first = true })
		}
		if !first {
			return nil, nil, false
		}
		fake.DropControl()
		close(arrived)
		fake.SleepControl(func() { time.Sleep(time.Until(until())) })
		return nil, nil, false
	})
	return arrived
}

// The write that creates the connector must be acknowledged, and its result published, before
// the request's giveup: the agent keeps a reserve before it for the result. A write
// acknowledged within the reserve (just before the giveup) is rolled back and answered 408,
// whatever else is slow (here the result's own write, which would have landed after the
// giveup, after the request's sender reported it failed); a stage that ends within the reserve
// leaves the connector's config records unwritten: no record of the connector ever appears.
func TestFinalWriteKeepsResultReserve(t *testing.T) {
	t.Parallel() // waits out the requests' giveups: doc.go
	cases := []struct {
		name string
		// slow is the topic whose first write is acknowledged just before the giveup.
		slow func(cfg agent.Config) string
		step string
		// configWritten: the connector record was written, and then tombstoned.
		configWritten bool
	}{
		{name: "config write acknowledged just before the giveup", slow: func(cfg agent.Config) string { return cfg.ConfigTopic },
			step: "write_config", configWritten: true},
		{name: "offsets write acknowledged just before the giveup", slow: func(cfg agent.Config) string { return cfg.OffsetsTopic },
			step: "write_offsets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // as TestWritesPastGiveUpRolledBack's cases
			r := newFaultRig(t)
			r.start(t, "", nil)
			const grace = 2 * time.Second
			deadline := time.Now().Add(4 * time.Second)
			giveUp := deadline.Add(grace)
			slow := delayProduceOnce(r.fake, tc.slow(r.cfg), func() time.Time { return giveUp.Add(-300 * time.Millisecond) })
			// The result's write takes a second: out after the giveup.
			delayProduceOnce(r.fake, r.cfg.ResultTopic, func() time.Time { return time.Now().Add(time.Second) })

			id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{Deadline: deadline, GiveUp: giveUp})
			res := r.cl.waitResult(id, resultWait)
			seen := time.Since(giveUp).Round(100 * time.Millisecond)
			select {
			case <-slow:
			default:
				t.Fatal("the slow write never came")
			}
			require.Equal(t, events.TypeCreateFailed, res.Type, "a request whose write ended within the result's reserve succeeded, its result read %s after the giveup", seen)
			require.Equal(t, 408, res.Data.ErrorCode, res.Data.Message)
			require.Equal(t, tc.step, res.Data.FailedStep, res.Data.Message)
			require.Contains(t, res.Data.Message, "rolled back")
			require.NotNil(t, res.Data.Cleanup)
			require.Empty(t, res.Data.Cleanup.Left, res.Data.Cleanup.Summary)

			live := r.cl.live(r.cfg.ConfigTopic)
			require.NotContains(t, live, "connector-file-src-1", "the connector exists on B")
			require.NotContains(t, live, "target-state-file-src-1")
			history := configHistory(r.cl, r.cfg.ConfigTopic, "file-src-1")
			if tc.configWritten {
				// The late write appended both records (one produce request); the rollback
				// tombstoned both.
				for _, key := range []string{"target-state-file-src-1", "connector-file-src-1"} {
					require.Equal(t, []string{"value", "tombstone"}, history[key], "%s: written late, then tombstoned", key)
				}
			} else {
				require.Empty(t, history["connector-file-src-1"], "the connector's record was written, within the reserve")
			}
			require.Empty(t, r.cl.live(r.cfg.OffsetsTopic), "no offset of the failed request is left")
		})
	}
}

// "failed" is never reported for a request that created its connector: B's agent created it
// in time, but B refuses its result (here until the run has ended). At the giveup, with no
// result, migrate looks at B's config topic, finds the connector record this request wrote,
// and reports the connector pending, saying it exists on B, instead of "it will not be
// created". Once the result goes out, the same command reports it succeeded.
func TestMigrateCreatedWithoutResultIsPending(t *testing.T) {
	t.Parallel() // waits out the run's timeout and grace: doc.go
	p := newMigrationPair(t)
	fake := p.clusterB.requireFake(t)
	refused := fake.Fault(produceFault(p.cfgB.ResultTopic, kerr.TopicAuthorizationFailed, -1))
	startAgent(t, p.cfgB, agent.Options{})
	o := p.options(t)
	o.Timeout, o.Grace = 6*time.Second, 2*time.Second
	_, e := p.migrateOne(t, context.Background(), o)
	require.Positive(t, refused.Hits(), "B refused the result")
	require.Contains(t, p.clB.live(p.cfgB.ConfigTopic), "connector-file-src-1", "B's agent created the connector")
	require.Equal(t, apply.OutcomePending, e.Outcome, "a connector that exists on B reported %s: %s", e.Outcome, e.Message)
	require.Contains(t, e.Message.String(), "exists on B")
	require.Contains(t, e.Message.String(), e.RequestID)

	refused.Remove()
	require.Equal(t, events.TypeCreateSucceeded, p.clB.waitResult(e.RequestID, resultWait).Type)
	_, e = p.migrateOne(t, context.Background(), o)
	require.Equal(t, apply.OutcomeSucceeded, e.Outcome, e.Message)
}

// A request whose writes before the connector's config records end within the reserve kept
// for its result (its offsets' write acknowledged just before its giveup, see also
// TestFinalWriteKeepsResultReserve) begins no write of the config records: B's config topic
// never holds a record of the connector, not even one tombstoned later, and the request fails
// 408 with its offsets rolled back.
func TestNoConnectorRecordWithinReserve(t *testing.T) {
	t.Parallel() // waits out the request's giveup: doc.go
	r := newFaultRig(t)
	const grace = 2 * time.Second
	deadline := time.Now().Add(4 * time.Second)
	giveUp := deadline.Add(grace)
	r.start(t, "after:write_offsets", func(agent.Config) []kfake.Fault {
		time.Sleep(time.Until(giveUp.Add(-300 * time.Millisecond)))
		return nil
	})
	seedSource(t, r.cl, r.cfg)
	offsetsBefore := r.cl.live(r.cfg.OffsetsTopic)
	id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{Deadline: deadline, GiveUp: giveUp})
	res := r.cl.waitResult(id, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type, "a request that began its last write within the result's reserve succeeded")
	require.Equal(t, 408, res.Data.ErrorCode, res.Data.Message)
	require.Equal(t, "write_config", res.Data.FailedStep, res.Data.Message)
	require.Contains(t, res.Data.Message, "rolled back")
	for _, m := range r.cl.readAll(r.cfg.ConfigTopic) {
		require.NotContains(t, []string{"connector-file-src-1", "target-state-file-src-1"}, string(m.Key),
			"B's config topic got a record of the connector (tombstone: %t)", m.Value == nil)
	}
	require.Equal(t, offsetsBefore, r.cl.live(r.cfg.OffsetsTopic), "offsets topic ends as before")
}

// A request without a result at the giveup is failed only when B shows that it did not create
// its connector: when B's config topic cannot be read (here the run's Read on it is refused
// once the requests are out, and no Connect REST API of B is given), it is pending, with what
// to check on B.
func TestMigrateUnknownOnBIsPending(t *testing.T) {
	t.Parallel() // waits out the run's timeout and grace: doc.go
	p := newMigrationPair(t)
	fake := p.clusterB.requireFake(t)
	o := p.options(t)
	o.Timeout, o.Grace = 5*time.Second, 500*time.Millisecond
	from := time.Now().Add(3 * time.Second) // after the prechecks, before the giveup
	refused := fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Metadata}, Topic: p.cfgB.ConfigTopic, Err: kerr.TopicAuthorizationFailed, Count: -1,
		When: func(kmsg.Request) bool { return time.Now().After(from) }})
	_, e := p.migrateOne(t, context.Background(), o)
	require.Positive(t, refused.Hits(), "the run asked B's config topic")
	require.Equal(t, apply.OutcomePending, e.Outcome, "reported %s though B could not be read: %s", e.Outcome, e.Message)
	require.Contains(t, e.Message.String(), "is not known")
	require.Contains(t, e.Message.String(), "Read")
	require.Contains(t, e.Message.String(), e.RequestID)
}
