package agent

import (
	"context"
	"sync"

	"github.com/segmentio/kafka-go"
)

// Lanes run the fetched requests, Concurrency at a time, in the order they were fetched for
// each key: a request waits only for the requests of its own connector (the record key) that
// came before it, never for another connector's. The lanes used to be Concurrency fixed
// workers chosen by a hash of the key, each with a queue of 16: connectors whose names hashed
// alike waited for each other while other workers idled, and a full queue held up the
// fetcher, and with it every other connector of its partition. Here a worker takes the
// oldest connector whose next request is ready, runs that one request and goes back for the
// next: a burst for distinct connectors keeps every worker busy until it is done. What the
// queues may hold is bounded by MaxInflightBytes (budget.go): a record is handed over only
// once its weight is reserved.

// laneKey is what orders requests: the record's key (the connector name), or, for a record
// without one, its partition (such records run in partition order, as before).
type laneKey struct {
	key       string
	partition int
	keyed     bool
}

// laneKeyOf returns the lane key of a request record.
func laneKeyOf(m *kafka.Message) laneKey {
	if len(m.Key) > 0 {
		return laneKey{key: string(m.Key), keyed: true}
	}
	return laneKey{partition: m.Partition}
}

// laneQueue holds one key's requests not yet started.
type laneQueue struct {
	jobs []job
	// running: a worker runs one of the key's requests; ready: the key waits in lanes.ready.
	// A key is in at most one of the two states at once.
	running, ready bool
}

type lanes struct {
	process func(context.Context, job)
	work    context.Context

	mu   sync.Mutex
	cond *sync.Cond
	// queues holds the keys with a request running or waiting; ready the keys with a request
	// waiting and none running, oldest first (ready[head:]).
	queues map[laneKey]*laneQueue
	ready  []laneKey
	head   int
	closed bool
	wg     sync.WaitGroup
}

// newLanes starts n workers that run process(work, j) for the jobs submitted.
func newLanes(n int, process func(context.Context, job), work context.Context) *lanes {
	l := &lanes{process: process, work: work, queues: map[laneKey]*laneQueue{}}
	l.cond = sync.NewCond(&l.mu)
	for range n {
		l.wg.Go(l.worker)
	}
	return l
}

// submit queues j behind the requests of key not yet finished; false when ctx ended first.
// It does not block: the budget bounds what is queued.
func (l *lanes) submit(ctx context.Context, key laneKey, j job) bool {
	if ctx.Err() != nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queues[key]
	if q == nil {
		q = &laneQueue{}
		l.queues[key] = q
	}
	q.jobs = append(q.jobs, j)
	if !q.running && !q.ready {
		q.ready = true
		l.ready = append(l.ready, key)
		l.cond.Signal()
	}
	return true
}

// worker runs the next ready key's oldest request, one at a time, until the lanes are closed
// and nothing is left to run.
func (l *lanes) worker() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for l.head == len(l.ready) && !l.closed {
			l.cond.Wait()
		}
		if l.head == len(l.ready) {
			return // closed, and nothing waits
		}
		key := l.ready[l.head]
		l.ready[l.head] = laneKey{}
		l.head++
		if l.head == len(l.ready) {
			l.ready, l.head = l.ready[:0], 0
		}
		q := l.queues[key]
		j := q.jobs[0]
		q.jobs[0] = job{}
		q.jobs = q.jobs[1:]
		q.ready, q.running = false, true
		l.mu.Unlock()
		l.process(l.work, j)
		l.mu.Lock()
		q.running = false
		if len(q.jobs) > 0 {
			// The key's next request goes behind the keys that waited meanwhile.
			q.ready = true
			l.ready = append(l.ready, key)
		} else {
			delete(l.queues, key)
		}
	}
}

// close runs what is queued (process skips the requests abandoned meanwhile) and waits for
// the workers to finish. Nothing may be submitted afterwards.
func (l *lanes) close() {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	l.wg.Wait()
}
