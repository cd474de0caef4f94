package agent

import (
	"context"
	"sync"
)

// budget is OFFSETAGENT_MAX_INFLIGHT_BYTES as a pool of bytes. A fetch takes its share before
// it asks the broker for records (reserve) and keeps what the records it got weigh (settle);
// each record gives its weight back once it is processed. A record weighs what its request
// holds in memory while it is processed (recordWeight), not only its own bytes. Records fetched and queued for a
// lane therefore count, and fetching pauses while the pool is used up: a backlog of large
// requests waits in the broker, not in memory. Waiters are served in the order they asked,
// so that no partition's fetcher starves behind the others.
//
// A broker returns a first record batch larger than asked for (KIP-74). Records beyond what
// their fetch reserved keep only what the pool has free right now (tryAcquire); the others
// are dropped and fetched again once the pool can take them (reserve with their weight as
// least). What the agent keeps of fetched records never weighs more than the pool (one record
// larger than the pool counts as the pool, and so runs alone); a dropped record is garbage at
// once.
//
// Compressed records are weighed inflated, and a fetch's reservation covers their inflation
// too: a fetch asks the broker for reserved/requestMemoryFactor bytes and inflates its
// response no further than that many record bytes (kafkaio.FetchBounds.TotalMax), so a
// response of a few compressed KiB cannot inflate to many times its reservation before settle
// sees it. Only its first record batch may go beyond (the broker sends it whatever its size,
// as above), and that one is bounded by requestInflateMax; of its records beyond the
// reservation only the first comes back. So what a fetch returns is at most its reservation's
// record bytes or one record, whichever is more (inflating a batch of several large records
// still takes the batch's size for a moment; docs/operations.md, "The soft memory limit").
// requestMemoryFactor is what a request holds in memory while it is processed, as a multiple of
// its record's size: the record until it is decoded, the decoded request (about twice the
// record for tens of thousands of offsets), the Connect records built from it (about once)
// and a dry run's plan (about once more), partly at the same time. Measured with 5 MiB
// requests of 62,000 MirrorMaker 2 offsets, one at a time: about 21 MB of live heap each.
// Counting records at this weight makes MaxInflightBytes bound the memory of the requests
// being worked on, not only of their records.
const requestMemoryFactor = 4

type budget struct {
	size int64
	// minFetch is the least a fetch waits for: asking for much less than a record only
	// makes the broker send it anyway.
	minFetch int64
	onChange func(used int64)

	mu sync.Mutex
	// used counts every byte taken; reserved the part of it that fetches in flight reserved.
	used, reserved int64
	waiters        []*budgetWaiter
}

type budgetWaiter struct {
	// least and want: the waiter is served once least bytes are free, and takes up to want.
	least, want int64
	grant       chan int64 // receives what was taken for the waiter
}

func newBudget(size, minFetch int64, onChange func(int64)) *budget {
	return &budget{size: size, minFetch: min(minFetch, size), onChange: onChange}
}

// reserve waits its turn until least bytes (at least minFetch, at most the size) are free
// and takes up to want of them for a fetch; it returns how many it took, or ctx's error. The
// bytes count as reserved, not held, until settle. A fetch that must get a record it dropped
// before asks for the record's weight as least.
func (b *budget) reserve(ctx context.Context, least, want int64) (int64, error) {
	least = min(max(least, b.minFetch), b.size)
	return b.wait(ctx, least, max(want, least))
}

// tryAcquire holds n bytes (at most the size) for a record beyond its fetch's reservation if
// the records held leave room for it now and nobody waits before it; it reports whether it
// did. The other fetches' reservations do not stand in its way: a long poll that has not
// returned holds no record yet, and what it brings back must then fit beside this one
// (settle). A record of the largest allowed size that one partition fetches therefore runs at
// once instead of waiting for the idle polls of every other partition to end.
func (b *budget) tryAcquire(n int64) bool {
	n = min(n, b.size)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) > 0 || b.size-(b.used-b.reserved) < n {
		return false
	}
	b.used += n
	b.reportLocked()
	return true
}

func (b *budget) wait(ctx context.Context, least, want int64) (int64, error) {
	b.mu.Lock()
	w := &budgetWaiter{least: least, want: want, grant: make(chan int64, 1)}
	b.waiters = append(b.waiters, w)
	b.grantLocked()
	b.mu.Unlock()
	select {
	case n := <-w.grant:
		return n, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, o := range b.waiters {
		if o == w {
			b.waiters = append(b.waiters[:i:i], b.waiters[i+1:]...)
			b.grantLocked()
			return 0, ctx.Err()
		}
	}
	// Granted meanwhile: give it back.
	n := <-w.grant
	b.used -= n
	b.reserved -= n
	b.changedLocked()
	return 0, ctx.Err()
}

// settle ends a fetch's reservation of reserved bytes and holds the weights of its first
// records, in order, while they fit in the reservation and beside the records held (a record
// that took the room of reservations meanwhile, see tryAcquire, comes first); it returns how
// many it holds. The rest of the reservation goes back.
func (b *budget) settle(reserved int64, weights []int64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved -= reserved
	b.used -= reserved
	var held int64
	k := 0
	for ; k < len(weights); k++ {
		w := min(weights[k], b.size)
		if held+w > reserved || b.used+held+w-b.reserved > b.size {
			break
		}
		held += w
	}
	b.used += held
	b.changedLocked()
	return k
}

// release gives n held bytes back.
func (b *budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.changedLocked()
}

// changedLocked serves the waiters that fit now and reports the bytes held.
func (b *budget) changedLocked() { b.grantLocked() }

// reportLocked tells onChange the bytes held by records (reservations of fetches in flight
// are not records yet).
func (b *budget) reportLocked() {
	if b.onChange != nil {
		b.onChange(b.used - b.reserved)
	}
}

// grantLocked serves waiters in order while the first one fits.
func (b *budget) grantLocked() {
	for len(b.waiters) > 0 {
		free := b.size - b.used
		if free < b.waiters[0].least {
			break
		}
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		n := min(free, w.want)
		b.used += n
		b.reserved += n
		w.grant <- n
	}
	b.reportLocked()
}
