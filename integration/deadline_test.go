package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate"
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

// migrationPair is A with one source connector (file-src-1) and B whose agent made its topics
// and was stopped: requests published to B wait there until a test starts B's agent.
type migrationPair struct {
	cfgA, cfgB agent.Config
	clB        *client
}

func newMigrationPair(t *testing.T) *migrationPair {
	t.Helper()
	p := &migrationPair{cfgA: testConfig(startCluster(t)), cfgB: testConfig(startCluster(t))}
	agentA := startAgent(t, p.cfgA, agent.Options{})
	clA := newClient(t, p.cfgA)
	id := clA.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
	require.Equal(t, events.TypeCreateSucceeded, clA.waitResult(id, resultWait).Type)
	agentA.stop(t)
	startAgent(t, p.cfgB, agent.Options{}).stop(t)
	p.clB = newClient(t, p.cfgB)
	return p
}

func (p *migrationPair) options(t *testing.T) migrate.MigrateOptions {
	t.Helper()
	sel, err := migrate.NewSelection(migrate.SelectionFlags{})
	require.NoError(t, err)
	return migrate.MigrateOptions{
		Options: migrate.Options{
			Topics:    &migrate.TopicsSource{Brokers: p.cfgA.Brokers, ConfigTopic: p.cfgA.ConfigTopic, OffsetsTopic: p.cfgA.OffsetsTopic},
			Selection: sel, Logger: testLogger(t),
		},
		To: migrate.Target{Brokers: p.cfgB.Brokers, RequestTopic: p.cfgB.RequestTopic, ResultTopic: p.cfgB.ResultTopic,
			ConfigTopic: p.cfgB.ConfigTopic, OffsetsTopic: p.cfgB.OffsetsTopic},
		SelectionKey: t.Name(), Concurrency: 4,
	}
}

// "failed" means it will not happen: a connector whose request got no result by the run's
// timeout is reported failed, and B's agent, started afterwards, refuses the request (its
// deadline has passed) instead of creating the connector.
func TestMigrateFailedRequestIsNeverCarriedOut(t *testing.T) {
	p := newMigrationPair(t)
	o := p.options(t)
	o.Timeout, o.Grace = 15*time.Second, 500*time.Millisecond
	rep, err := migrate.Migrate(context.Background(), o)
	require.NoError(t, err)
	require.Len(t, rep.Connectors, 1)
	e := rep.Connectors[0]
	require.Equal(t, migrate.OutcomeFailed, e.Outcome, e.Message)
	require.Equal(t, "await_result", e.FailedStep, "the request was published: %s", e.Message)
	require.Contains(t, e.Message, "so it will not be created")

	startAgent(t, p.cfgB, agent.Options{})
	res := p.clB.waitResult(e.RequestID, resultWait)
	require.Equal(t, events.TypeCreateFailed, res.Type, "B's agent carried out a request reported failed: %s", res.Data.Message)
	require.Equal(t, 408, res.Data.ErrorCode)
	require.Empty(t, p.clB.live(p.cfgB.ConfigTopic), "nothing of the failed connector is on B")
}

// A run interrupted while its requests are in flight reports them pending, not failed: their
// deadline is ahead, and B's agent may still carry them out (and here does).
func TestMigrateInterruptedIsPending(t *testing.T) {
	p := newMigrationPair(t)
	o := p.options(t)
	o.Timeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once the request is on B's request topic.
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
	}()
	rep, err := migrate.Migrate(ctx, o)
	require.NoError(t, err)
	require.Len(t, rep.Connectors, 1)
	e := rep.Connectors[0]
	require.Equal(t, migrate.OutcomePending, e.Outcome, e.Message)
	require.Contains(t, e.Message, "run the same command again after")
	require.False(t, rep.OK())

	startAgent(t, p.cfgB, agent.Options{})
	require.Equal(t, events.TypeCreateSucceeded, p.clB.waitResult(e.RequestID, resultWait).Type, "pending was right: it was carried out")
	// The re-run learns the outcome.
	rep, err = migrate.Migrate(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(migrate.OutcomeSucceeded), fmt.Sprint(rep.Connectors[0].Outcome))
}
