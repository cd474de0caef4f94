package agent

import (
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// resultLog remembers which requests already have a result out, rebuilt from the result topic
// itself, so the memory survives restarts and is shared by every replica: a redelivered
// request (after a crash, a rebalance or a producer retry) whose result is in the topic is
// not run again.
type resultLog struct {
	log *kafkaio.Log

	// window and max bound the memory: results older than window (by record time) and all but
	// the newest max are forgotten.
	window time.Duration
	max    int

	mu    sync.Mutex
	seenM map[requestKey]struct{}
	order []remembered // FIFO for eviction
}

type requestKey struct{ source, id string }

type remembered struct {
	key requestKey
	at  time.Time
}

func newResultLog(opts offsetstore.Options, topic string, window time.Duration, max int) (*resultLog, error) {
	r := &resultLog{seenM: make(map[requestKey]struct{}), window: window, max: max}
	l, err := kafkaio.NewLog(opts.Cluster(), topic, r.apply)
	if err != nil {
		return nil, err
	}
	// This replica remembers its own results as it publishes them (add); others' results
	// matter once it owns their partitions, and it reads the topic to its end then (each
	// assignment), or for a claim (Claim): the results it publishes need not wake the view's
	// fetch loops.
	l.QuietTail()
	r.log = l
	return r, nil
}

func (r *resultLog) apply(msgs []kafka.Message) {
	for i := range msgs {
		if own, ok := msgs[i].WriterData.(ownResult); ok {
			r.addAt(own.source, own.id, own.at) // this replica's own result (written)
			continue
		}
		var k requestKey
		k.id, k.source = events.RequestIdentity(&msgs[i])
		if k.id != "" {
			r.addAt(k.source, k.id, msgs[i].Time)
		}
	}
}

// ownResult is the decoded form of a result this replica published (kafkaio.Record.Decoded).
type ownResult struct {
	source, id string
	at         time.Time
}

// written hands the result record msg of res, acknowledged as w, to the log, which applies it
// at its place in the partition: the log's position moves past the replica's own results, and
// its fetch loops never bring them back to be decoded again.
func (r *resultLog) written(w *kafkaio.Pending, msg *kafka.Message, res *events.Result) {
	rec := kafkaio.Record{Key: msg.Key, Value: msg.Value, Headers: msg.Headers,
		Decoded: ownResult{source: res.RequestSource, id: res.RequestID, at: time.Now()}}
	r.log.Written(w.Partition(0), w.Offset(0), []kafkaio.Record{rec}, kafkaio.InOrder(1))
}

// add remembers a result published now.
func (r *resultLog) add(source, id string) { r.addAt(source, id, time.Now()) }

// addAt remembers a result published at t, unless it is already outside the window.
func (r *resultLog) addAt(source, id string, t time.Time) {
	k := requestKey{source, id}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seenM[k]; ok || (r.window > 0 && !t.IsZero() && now.Sub(t) > r.window) {
		return
	}
	r.seenM[k] = struct{}{}
	r.order = append(r.order, remembered{key: k, at: t})
	for len(r.order) > 0 && ((r.max > 0 && len(r.order) > r.max) || (r.window > 0 && now.Sub(r.order[0].at) > r.window)) {
		delete(r.seenM, r.order[0].key)
		r.order[0] = remembered{}
		r.order = r.order[1:]
	}
}

// size is how many requests are remembered.
func (r *resultLog) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seenM)
}

func (r *resultLog) seen(source, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.seenM[requestKey{source, id}]
	return ok
}
