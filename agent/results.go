package agent

import (
	"sync"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/offsetstore"
)

// maxRemembered bounds the dedupe memory: the request identities of the newest results.
const maxRemembered = 1_000_000

// resultLog remembers which requests already have a result out, rebuilt from the result topic
// itself, so the memory survives restarts and is shared by every replica: a redelivered
// request (after a crash, a rebalance or a producer retry) whose result is in the topic is
// not run again.
type resultLog struct {
	log *offsetstore.Log

	mu    sync.Mutex
	seenM map[requestKey]struct{}
	order []requestKey // FIFO for eviction
}

type requestKey struct{ source, id string }

func newResultLog(opts offsetstore.Options, topic string) (*resultLog, error) {
	r := &resultLog{seenM: make(map[requestKey]struct{})}
	l, err := offsetstore.NewLog(opts, topic, r.apply)
	if err != nil {
		return nil, err
	}
	r.log = l
	return r, nil
}

func (r *resultLog) apply(msgs []kafka.Message) {
	for i := range msgs {
		var k requestKey
		for _, h := range msgs[i].Headers {
			switch h.Key {
			case "ce_requestid":
				k.id = string(h.Value)
			case "ce_requestsource":
				k.source = string(h.Value)
			}
		}
		if k.id != "" {
			r.add(k.source, k.id)
		}
	}
}

func (r *resultLog) add(source, id string) {
	k := requestKey{source, id}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seenM[k]; ok {
		return
	}
	r.seenM[k] = struct{}{}
	r.order = append(r.order, k)
	if len(r.order) > maxRemembered {
		delete(r.seenM, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *resultLog) seen(source, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.seenM[requestKey{source, id}]
	return ok
}
