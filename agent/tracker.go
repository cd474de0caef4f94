package agent

import (
	"sync"
	"sync/atomic"
	"time"
)

// Item states. An item is queued when fetched, started when a lane picks it up, done once its
// result is acknowledged, abandoned when its partition was revoked before it started.
const (
	stateQueued int32 = iota
	stateStarted
	stateDone
	stateAbandoned
)

// item is one fetched request record.
type item struct {
	offset int64
	state  atomic.Int32
	tr     *tracker
}

// start moves a queued item to started; false if it was abandoned.
func (it *item) start() bool { return it.state.CompareAndSwap(stateQueued, stateStarted) }

// done marks the item's result as acknowledged.
func (it *item) done() {
	it.state.Store(stateDone)
	it.tr.signal()
}

// tracker keeps one partition's fetched items in offset order and says how far the partition
// may be committed: up to the first item that is not done. The committed offset therefore
// never passes a request whose result is not yet acknowledged.
type tracker struct {
	mu            sync.Mutex
	items         []*item
	next          int64 // offset after the last done item of the finished prefix (-1: none)
	lastCommitted int64
	changed       chan struct{}
}

func newTracker() *tracker {
	return &tracker{next: -1, lastCommitted: -1, changed: make(chan struct{}, 1)}
}

func (t *tracker) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// add records a fetched offset.
func (t *tracker) add(offset int64) *item {
	it := &item{offset: offset, tr: t}
	t.mu.Lock()
	t.items = append(t.items, it)
	t.mu.Unlock()
	return it
}

// abandon marks an item that will not run here.
func (t *tracker) abandon(it *item) { it.state.CompareAndSwap(stateQueued, stateAbandoned) }

// abandonQueued abandons every item that has not started.
func (t *tracker) abandonQueued() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, it := range t.items {
		it.state.CompareAndSwap(stateQueued, stateAbandoned)
	}
}

// waitStarted waits until no item is running, at most timeout; false on timeout.
func (t *tracker) waitStarted(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		running := false
		t.mu.Lock()
		for _, it := range t.items {
			if it.state.Load() == stateStarted {
				running = true
				break
			}
		}
		t.mu.Unlock()
		if !running {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// committable pops the finished prefix and returns the offset to commit (the one after the
// last finished item) when it moved past the last commit.
func (t *tracker) committable() (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := 0
	for ; i < len(t.items) && t.items[i].state.Load() == stateDone; i++ {
		t.next = t.items[i].offset + 1
	}
	t.items = t.items[i:]
	if t.next < 0 || t.next == t.lastCommitted {
		return 0, false
	}
	t.lastCommitted = t.next
	return t.next, true
}

// uncommit forgets the last commit after it failed, so the next call commits again.
func (t *tracker) uncommit() {
	t.mu.Lock()
	t.lastCommitted = -1
	t.mu.Unlock()
}
