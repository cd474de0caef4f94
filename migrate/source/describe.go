package source

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// describer makes the Metadata requests of the sinks' checks (checkTopics) together: a call
// that comes while one request is in flight joins the next, which describes the topics of
// every call waiting for it, so that the sinks read at once (a wave's stop barriers, each
// reading its sink's offsets before and after its stable pause) cost a round trip to A
// together instead of one each; sinks share their topics. Each call's answer comes from a
// request made after the call began, as its own would, and holds its own topics only.
type describer struct {
	client *kafka.Client
	mu     sync.Mutex
	// busy: a request is in flight; next is the one the calls that came meanwhile wait for.
	busy bool
	next *describeCall
}

// describeCall is one Metadata request and the calls waiting for it.
type describeCall struct {
	topics  map[string]bool
	callers int
	done    chan struct{}
	parts   map[string][]int
	failed  map[string]error
	err     error
}

// describeTimeout bounds one joint request: the calls waiting for it have contexts of their
// own, none of which may cut it short for the others.
const describeTimeout = 30 * time.Second

// describe is kafkaio.DescribeTopics of topics, made together with the other calls of the
// moment.
func (d *describer) describe(ctx context.Context, topics []string) (map[string][]int, map[string]error, error) {
	d.mu.Lock()
	if d.next == nil {
		d.next = &describeCall{topics: map[string]bool{}, done: make(chan struct{})}
	}
	call := d.next
	call.callers++
	for _, t := range topics {
		call.topics[t] = true
	}
	if !d.busy {
		d.busy, d.next = true, nil
		go d.run(call)
	}
	d.mu.Unlock()
	select {
	case <-call.done:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if call.err != nil {
		return nil, nil, call.err
	}
	parts, failed := map[string][]int{}, map[string]error{}
	for _, t := range topics {
		if p, ok := call.parts[t]; ok {
			parts[t] = p
		}
		if e, ok := call.failed[t]; ok {
			failed[t] = e
		}
	}
	return parts, failed, nil
}

// run makes call's request, then each next one, until none waits.
func (d *describer) run(call *describeCall) {
	for call != nil {
		ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
		call.parts, call.failed, call.err = kafkaio.DescribeTopics(ctx, d.client, slices.Sorted(maps.Keys(call.topics)))
		cancel()
		close(call.done)
		d.mu.Lock()
		call, d.next = d.next, nil
		if call == nil {
			d.busy = false
		}
		d.mu.Unlock()
	}
}

// waiting is how many calls wait for the next request (not for the one in flight).
func (d *describer) waiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == nil {
		return 0
	}
	return d.next.callers
}
