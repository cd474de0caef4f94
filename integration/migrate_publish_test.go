package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
)

// fileSourceBody is a file source connector's body with one offset; extra is appended to
// its config.
func fileSourceBody(name, extra string) string {
	return fmt.Sprintf(`{"name":%q,"config":{"connector.class":%q,"file":"%s.txt","topic":"t","tasks.max":"1"%s},"initial_offsets":[{"partition":{"filename":"%s.txt"},"offset":{"position":7}}]}`,
		name, fileSource, name, extra, name)
}

// newSourcesPair is newMigrationPair with the connectors of bodies on A; prepareB, when not
// nil, may edit B's agent configuration and prepare B's cluster before B's agent makes its
// topics. B's agent is stopped on return.
func newSourcesPair(t *testing.T, bodies []string, prepareB func(c *cluster, cfg *agent.Config)) (*migrationPair, *cluster) {
	t.Helper()
	b := startCluster(t)
	p := &migrationPair{cfgA: testConfig(startCluster(t)), cfgB: testConfig(b)}
	if prepareB != nil {
		prepareB(b, &p.cfgB)
	}
	agentA := startAgent(t, p.cfgA, agent.Options{})
	clA := newClient(t, p.cfgA)
	var ids []string
	for _, body := range bodies {
		ids = append(ids, clA.publish(body, events.RequestOptions{}))
	}
	for _, id := range ids {
		r := clA.waitResult(id, resultWait)
		require.Equal(t, events.TypeCreateSucceeded, r.Type, "%s: %s", r.Data.Name, r.Data.Message)
	}
	agentA.stop(t)
	startAgent(t, p.cfgB, agent.Options{}).stop(t)
	p.clB = newClient(t, p.cfgB)
	return p, b
}

// outcomeSteps maps each report entry to "outcome step".
func outcomeSteps(rep *apply.Report) map[string]string {
	out := map[string]string{}
	for _, e := range rep.Connectors {
		out[e.Name] = strings.TrimSpace(fmt.Sprintf("%s %s", e.Outcome, e.FailedStep))
	}
	return out
}

// A batch of requests of which B refuses one is not failed as a whole: here the five
// requests go to one partition of B's request topic in one record batch, which is above the
// topic's max.message.bytes because of one of them. Only that connector fails at
// publish_request; the others are written on their own and created.
func TestMigrateBatchRefusesOneRequest(t *testing.T) {
	payload := make([]byte, 6000)
	_, err := rand.Read(payload)
	require.NoError(t, err)
	names := []string{"small-1", "small-2", "small-3", "small-4"}
	var bodies []string
	for _, n := range names {
		bodies = append(bodies, fileSourceBody(n, ""))
	}
	// Random hex: no codec makes it fit.
	bodies = append(bodies, fileSourceBody("big-src", fmt.Sprintf(`,"payload":%q`, hex.EncodeToString(payload))))
	p, _ := newSourcesPair(t, bodies, func(_ *cluster, cfg *agent.Config) {
		cfg.RequestTopicPartitions = 1
		createTopicWith(t, newClient(t, *cfg), cfg.RequestTopic, 1, map[string]string{"max.message.bytes": "8000"})
	})
	startAgent(t, p.cfgB, agent.Options{})
	o := p.options(t)
	o.Concurrency, o.Timeout = 16, time.Minute
	rep, _, err := migrate.Migrate(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"small-1": "succeeded", "small-2": "succeeded", "small-3": "succeeded", "small-4": "succeeded",
		"big-src": "failed publish_request"}, outcomeSteps(rep))
	for _, e := range rep.Connectors {
		if e.Name == "big-src" {
			require.Contains(t, e.Message.String(), "[10] Message Size Too Large")
		}
	}
	live := p.clB.live(p.cfgB.ConfigTopic)
	require.NotContains(t, live, "connector-big-src")
	for _, n := range names {
		require.Contains(t, live, "connector-"+n)
	}
}

// A request whose write ends without knowing whether B appended it (here B answers
// REQUEST_TIMED_OUT, after appending, every time the writer tries one partition) is not
// failed: it stays in flight, its result arrives, and it succeeded. The requests on the
// other partitions of the same call are not failed either.
func TestMigrateUnknownWriteIsPending(t *testing.T) {
	t.Parallel() // waits out the writes' timeouts: doc.go
	var names, bodies []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("src-%d", i))
		bodies = append(bodies, fileSourceBody(names[i], ""))
	}
	p, b := newSourcesPair(t, bodies, nil)
	fake := b.requireFake(t)
	part := func(name string) int { return (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(name)}, 0, 1, 2) }
	timedOut := part(names[0])
	others := 0
	for _, n := range names {
		if part(n) != timedOut {
			others++
		}
	}
	require.Positive(t, others, "the other requests go to other partitions")
	h := fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: p.cfgB.RequestTopic, Partitions: []int32{int32(timedOut)},
		Err: kerr.RequestTimedOut, Count: -1, When: notProbe})
	defer h.Remove()
	startAgent(t, p.cfgB, agent.Options{})
	o := p.options(t)
	o.Concurrency, o.Timeout = 16, 2*time.Minute
	rep, _, err := migrate.Migrate(context.Background(), o)
	require.NoError(t, err)
	require.Positive(t, h.Hits(), "the fault answered the writes")
	want := map[string]string{}
	for _, n := range names {
		want[n] = "succeeded"
	}
	require.Equal(t, want, outcomeSteps(rep))
}

// An offsets-only request (into a Strimzi-managed B) does not stand for a creation: after a
// --to-strimzi-cluster run, a plain run of the same selection creates the connector, and a
// run after that publishes nothing.
func TestMigrateOffsetsOnlyThenCreate(t *testing.T) {
	p := newMigrationPair(t)
	startAgent(t, p.cfgB, agent.Options{})
	o := p.options(t)
	o.Timeout = time.Minute
	o.Strimzi = &strimzi.Target{Cluster: "connect-b", Dir: t.TempDir()}
	rep, _, err := migrate.Migrate(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"file-src-1": "succeeded"}, outcomeSteps(rep))
	require.NotContains(t, p.clB.live(p.cfgB.ConfigTopic), "connector-file-src-1", "offsets only")

	o = p.options(t)
	o.Timeout = time.Minute
	rep, _, err = migrate.Migrate(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"file-src-1": "succeeded"}, outcomeSteps(rep))
	require.Contains(t, p.clB.live(p.cfgB.ConfigTopic), "connector-file-src-1", "the plain run created the connector")

	requests := len(p.clB.readAll(p.cfgB.RequestTopic))
	rep, _, err = migrate.Migrate(context.Background(), o)
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Len(t, p.clB.readAll(p.cfgB.RequestTopic), requests, "nothing published again")
}

// waitRecorder is a apply.Progress that keeps what it is told while results are awaited.
type waitRecorder struct {
	mu    sync.Mutex
	waits []apply.Wait
}

func (r *waitRecorder) Start(int)         {}
func (r *waitRecorder) Done(*apply.Entry) {}
func (r *waitRecorder) Finish()           {}
func (r *waitRecorder) Waiting(w apply.Wait) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, w)
}

// While results are awaited, the progress says every WaitReport how many are in, how many
// are awaited and how long is left: a --result-topic that B's agents do not write shows as
// no result coming, not as silence.
func TestMigrateWaitProgress(t *testing.T) {
	p := newMigrationPair(t)
	// B's agent holds its result back for a while: the run waits with no result in.
	startAgent(t, p.cfgB, agent.Options{Fault: func(point, _ string) {
		if point == "before:publish" {
			time.Sleep(2 * time.Second)
		}
	}})
	o := p.options(t)
	o.Timeout, o.Grace, o.WaitReport = 6*time.Second, 500*time.Millisecond, 500*time.Millisecond
	waits := &waitRecorder{}
	o.Progress = waits
	rep, _, err := migrate.Migrate(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"file-src-1": "succeeded"}, outcomeSteps(rep))
	require.NotEmpty(t, waits.waits, "told while no result is in")
	w := waits.waits[0]
	require.Equal(t, p.cfgB.ResultTopic, w.Topic)
	require.Equal(t, 0, w.In)
	require.Equal(t, 1, w.Awaited)
	require.Positive(t, w.Left)
}

// A dry run creates nothing: interrupted before its plan arrived, it is not pending ("may
// still create"): its plan was not received.
func TestMigrateInterruptedDryRunIsNotPending(t *testing.T) {
	p := newMigrationPair(t)
	o := p.options(t)
	o.Timeout, o.DryRun = time.Hour, true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.interruptOncePublished(ctx, cancel)
	rep, e := p.migrateOne(t, ctx, o)
	require.NotEqual(t, apply.OutcomePending, e.Outcome, e.Message)
	require.Equal(t, apply.OutcomeFailed, e.Outcome, e.Message)
	require.Contains(t, e.Message.String(), "no plan received")
	require.NotContains(t, e.Message.String(), "may still")
	require.False(t, rep.OK())
}

// An --include, --exclude or --rename that has no effect on A's connectors is named, and the
// run refused before anything is stopped or published, unless AllowEmpty; with it, a
// selection that matches nothing is an empty report.
func TestSelectionFlagsMatchingNothing(t *testing.T) {
	p := newMigrationPair(t)
	export := func(flags source.SelectionFlags, allowEmpty bool) (*apply.Report, error) {
		sel, err := source.NewSelection(flags)
		require.NoError(t, err)
		return migrate.Export(context.Background(), migrate.Options{
			Topics:    &source.TopicsSource{Brokers: p.cfgA.Brokers, ConfigTopic: p.cfgA.ConfigTopic, OffsetsTopic: p.cfgA.OffsetsTopic},
			Selection: sel, Logger: testLogger(t), AllowEmpty: allowEmpty,
		})
	}
	tests := []struct {
		name  string
		flags source.SelectionFlags
		want  string
	}{
		{name: "misspelt exclude", flags: source.SelectionFlags{Exclude: []string{"file-scr-1"}},
			want: `Exclude "file-scr-1" matches no selected connector`},
		{name: "one of two includes", flags: source.SelectionFlags{Include: []string{"file-src-.*", "fle-src-2"}},
			want: `Include "fle-src-2" matches no connector of A`},
		{name: "misspelt rename", flags: source.SelectionFlags{Rename: []string{"fil-src-(.*)=b-$1"}},
			want: `Rename "fil-src-(.*)=b-$1" renames no selected connector`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := export(tc.flags, false)
			require.ErrorContains(t, err, tc.want)
			var unmatched *source.UnmatchedError
			require.True(t, errors.As(err, &unmatched), "%T", err)
			require.Nil(t, rep)

			rep, err = export(tc.flags, true)
			require.NoError(t, err)
			require.Equal(t, map[string]string{"file-src-1": "planned"}, outcomeSteps(rep))
		})
	}
	_, err := export(source.SelectionFlags{Include: []string{"nothing"}}, false)
	var none *source.NoneSelectedError
	require.True(t, errors.As(err, &none), "%v", err)
	rep, err := export(source.SelectionFlags{Include: []string{"nothing"}}, true)
	require.NoError(t, err)
	require.Empty(t, rep.Connectors)
	require.True(t, rep.OK())
}
