package agent

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// laneProbe is a process func that records which requests run, at most how many at once,
// and holds each until the test releases it.
type laneProbe struct {
	mu      sync.Mutex
	running map[string]int
	most    int
	started []string
	changed chan struct{}
	release chan struct{}
}

func newLaneProbe() *laneProbe {
	return &laneProbe{running: map[string]int{}, changed: make(chan struct{}, 1024), release: make(chan struct{})}
}

func (p *laneProbe) process(_ context.Context, j job) {
	name := string(j.msg.Key)
	p.mu.Lock()
	p.running[name]++
	total := 0
	for _, n := range p.running {
		total += n
	}
	p.most = max(p.most, total)
	p.started = append(p.started, fmt.Sprintf("%s/%d", name, j.msg.Offset))
	p.mu.Unlock()
	p.changed <- struct{}{}
	<-p.release
	p.mu.Lock()
	p.running[name]--
	p.mu.Unlock()
}

// waitStarted waits (at most 10 s) until n requests have started and returns how many did.
func (p *laneProbe) waitStarted(n int) int {
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		got := len(p.started)
		p.mu.Unlock()
		if got >= n {
			return got
		}
		select {
		case <-p.changed:
		case <-deadline:
			return got
		}
	}
}

// sameLaneKeys returns two connector names that a hash of the name into n fixed lanes (the
// lanes before requests were ordered by key) put in one lane.
func sameLaneKeys(n int) (string, string) {
	lane := func(s string) uint32 {
		h := fnv.New32a()
		_, _ = h.Write([]byte(s))
		return h.Sum32() % uint32(n)
	}
	first := "connector-0"
	for i := 1; ; i++ {
		if name := fmt.Sprintf("connector-%d", i); lane(name) == lane(first) {
			return first, name
		}
	}
}

// submitRecords hands records to the lanes as the fetcher does, each from its own goroutine
// so that a submit that blocks does not hold the test up; it returns a channel closed once
// every submit returned.
func submitRecords(t *testing.T, l *lanes, msgs ...kafka.Message) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, m := range msgs {
			l.submit(context.Background(), laneKeyOf(&m), job{msg: m})
		}
	}()
	return done
}

// TestLanesRunDistinctConnectorsAtOnce: requests for distinct connectors run at once, up to
// the concurrency, whatever their names hash to; a connector's own requests run one at a
// time, in order.
func TestLanesRunDistinctConnectorsAtOnce(t *testing.T) {
	const concurrency = 4
	a, b := sameLaneKeys(concurrency)
	p := newLaneProbe()
	l := newLanes(concurrency, p.process, context.Background())
	submitted := submitRecords(t, l,
		kafka.Message{Key: []byte(a), Offset: 0}, kafka.Message{Key: []byte(a), Offset: 1},
		kafka.Message{Key: []byte(b), Offset: 2})
	require.Equal(t, 2, p.waitStarted(2), "a request for %s and one for %s run at once (4 lanes, 2 connectors)", a, b)
	p.mu.Lock()
	require.ElementsMatch(t, []string{a + "/0", b + "/2"}, p.started, "the second request for %s waits for its first", a)
	p.mu.Unlock()
	<-submitted
	close(p.release)
	l.close()
	require.Equal(t, []string{a + "/0", b + "/2", a + "/1"}, p.started)
	require.Equal(t, 2, p.most)
}

// TestLanesBusyConnectorHoldsNoOther: many requests for one busy connector neither hold up
// the fetcher's hand-over nor a request for another connector behind them.
func TestLanesBusyConnectorHoldsNoOther(t *testing.T) {
	const concurrency, queued = 2, 40
	p := newLaneProbe()
	l := newLanes(concurrency, p.process, context.Background())
	var msgs []kafka.Message
	for i := range queued {
		msgs = append(msgs, kafka.Message{Key: []byte("busy"), Offset: int64(i)})
	}
	msgs = append(msgs, kafka.Message{Key: []byte("other"), Offset: queued})
	submitted := submitRecords(t, l, msgs...)
	require.Equal(t, 2, p.waitStarted(2), "the other connector's request runs beside the busy one's")
	select {
	case <-submitted:
	case <-time.After(10 * time.Second):
		t.Fatal("the hand-over of 41 requests still waits for the busy connector after 10 s")
	}
	close(p.release)
	l.close()
	require.Len(t, p.started, queued+1)
	require.Equal(t, concurrency, p.most)
	for i, s := range p.started[:2] {
		require.Contains(t, []string{"busy/0", fmt.Sprintf("other/%d", queued)}, s, "start %d", i)
	}
}

// TestLanesConcurrencyBound: no more requests run at once than the lanes' concurrency.
func TestLanesConcurrencyBound(t *testing.T) {
	const concurrency, n = 3, 12
	p := newLaneProbe()
	l := newLanes(concurrency, p.process, context.Background())
	var msgs []kafka.Message
	for i := range n {
		msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "c-%d", i), Offset: int64(i)})
	}
	<-submitRecords(t, l, msgs...)
	require.Equal(t, concurrency, p.waitStarted(concurrency))
	close(p.release)
	l.close()
	require.Len(t, p.started, n)
	require.Equal(t, concurrency, p.most)
}
