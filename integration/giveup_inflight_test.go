package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/apply"
)

// heldWrite is a Produce request a slow broker held: when it arrived and the timeout it
// carried.
type heldWrite struct {
	arrived time.Time
	timeout time.Duration
}

// slowBrokerFor makes B's broker slow with the first write to topic (a record of a partition,
// not a permission probe): it takes the request up only once look is closed (migrate has
// looked at B), or once the request's own timeout has run out, whichever comes first, and
// then appends its records and answers. That is a broker that honours a Produce request's
// timeout_ms (Kafka's answers by then), but no sooner.
func slowBrokerFor(p *migrationPair, t *testing.T, topic string, look <-chan struct{}) <-chan heldWrite {
	fake := p.clusterB.requireFake(t)
	held := make(chan heldWrite, 1)
	var once sync.Once
	fake.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ProduceRequest)
		writes := false
		for _, tp := range req.Topics {
			for _, part := range tp.Partitions {
				writes = writes || (tp.Topic == topic && part.Partition >= 0)
			}
		}
		first := false
		if writes {
			once.Do(func() { first = true })
		}
		if !first {
			fake.KeepControl()
			return nil, nil, false
		}
		fake.DropControl()
		h := heldWrite{arrived: time.Now(), timeout: time.Duration(req.TimeoutMillis) * time.Millisecond}
		held <- h
		fake.SleepControl(func() {
			select {
			case <-look:
			case <-time.After(time.Until(h.arrived.Add(h.timeout))):
			case <-time.After(time.Minute): // bounded whatever the request says
			}
		})
		return nil, nil, false
	})
	return held
}

// A config write sent before the request's writes end (its giveup less the result's reserve)
// can reach B's config topic only within its Produce request's own timeout, which ends before
// the writes end, and the agent waits for it no longer: from the giveup on, when migrate looks
// at B's config topic for the requests without a result, no write of the request is in
// flight. Here B's broker holds the write that creates the connector as long as the request's
// timeout lets it. The request's result then agrees with B (the write was settled before the
// giveup), migrate reports what B holds, and nothing of the connector reaches B's config topic
// after migrate has reported on it: never "failed ... will not be created" with a connector
// record landing afterwards.
func TestNoConfigWriteLandsAfterTheGiveUpLook(t *testing.T) {
	t.Parallel() // waits out the run's timeout and grace: doc.go
	p := newMigrationPair(t)
	look := make(chan struct{})
	var lookOnce sync.Once
	defer lookOnce.Do(func() { close(look) })
	held := slowBrokerFor(p, t, p.cfgB.ConfigTopic, look)
	startAgent(t, p.cfgB, agent.Options{})

	o := p.options(t)
	o.Timeout, o.Grace = 6*time.Second, 2*time.Second
	_, e := p.migrateOne(t, context.Background(), o)
	reported := len(p.clB.readAll(p.cfgB.ConfigTopic))
	lookOnce.Do(func() { close(look) })

	var h heldWrite
	select {
	case h = <-held:
	default:
		t.Fatal("B's agent never wrote the connector's config records")
	}
	var giveUp time.Time
	for _, m := range p.clB.readAll(p.cfgB.RequestTopic) {
		if v, ok := events.Header(&m, "ce_"+events.ExtensionGiveUp); ok {
			var err error
			giveUp, err = time.Parse(time.RFC3339Nano, v)
			require.NoError(t, err)
		}
	}
	require.False(t, giveUp.IsZero(), "the request carries its giveup")
	// Not fatal: what follows shows what a write in flight past the giveup does.
	assert.True(t, h.arrived.Add(h.timeout).Before(giveUp),
		"the config write's Produce request may be in flight until %s (timeout %s), past the request's giveup %s",
		h.arrived.Add(h.timeout).Format(time.RFC3339Nano), h.timeout, giveUp.Format(time.RFC3339Nano))

	// Whatever became of the request, its result agrees with B, and nothing of it lands on B
	// after migrate reported.
	res := p.clB.waitResult(e.RequestID, resultWait)
	time.Sleep(500 * time.Millisecond) // a rollback's tombstones follow the result's cause, not the result
	records := p.clB.readAll(p.cfgB.ConfigTopic)
	for _, m := range records[reported:] {
		require.NotContains(t, []string{"connector-file-src-1", "target-state-file-src-1"}, string(m.Key),
			"B's config topic got a record of the connector (tombstone: %t) after migrate reported it %s: %s", m.Value == nil, e.Outcome, e.Message)
	}
	live := p.clB.live(p.cfgB.ConfigTopic)
	switch e.Outcome {
	case apply.OutcomeSucceeded:
		require.Equal(t, events.TypeCreateSucceeded, res.Type, res.Data.Message)
		require.Contains(t, live, "connector-file-src-1")
	case apply.OutcomeFailed:
		require.Equal(t, events.TypeCreateFailed, res.Type, res.Data.Message)
		require.NotContains(t, live, "connector-file-src-1", "migrate reported failed: %s", e.Message)
	default:
		require.Failf(t, "unexpected outcome", "%s: %s", e.Outcome, e.Message)
	}
}
