package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The budget serves waiters in order, lets a fetch reserve what is free, counts only what
// records hold in the gauge, lets records beyond a reservation take only what is free now
// (and never before a waiter), and gives a record larger than the pool the whole pool.
func TestBudget(t *testing.T) {
	var gauge int64
	b := newBudget(100, 10, func(held int64) { gauge = held })
	ctx := testContext(t)

	n, err := b.reserve(ctx, 0, 60)
	require.NoError(t, err)
	require.Equal(t, int64(60), n)
	require.Equal(t, int64(0), gauge, "a reservation is not held by records")
	require.Equal(t, 1, b.settle(60, []int64{25, 40}), "the second record is beyond the reservation")
	require.Equal(t, int64(25), gauge)

	require.True(t, b.tryAcquire(70))
	require.Equal(t, int64(95), gauge)
	require.False(t, b.tryAcquire(6), "only 5 bytes are free")
	require.Equal(t, int64(95), gauge)

	// Nothing fits now: a fetch waits, and a fetch that needs a record of 100 bytes queues
	// behind it; tryAcquire does not overtake them.
	granted := make(chan int64, 1)
	go func() {
		n, _ := b.reserve(ctx, 0, 50)
		granted <- n
	}()
	time.Sleep(20 * time.Millisecond)
	large := make(chan int64, 1)
	go func() {
		n, _ := b.reserve(ctx, 1000, 0) // larger than the pool: waits for all of it
		large <- n
	}()
	time.Sleep(20 * time.Millisecond)
	require.False(t, b.tryAcquire(1), "a waiter comes first")
	b.release(70) // 75 free: the first fetch takes 50
	require.Equal(t, int64(50), <-granted)
	select {
	case <-large:
		t.Fatal("the large reservation overtook or fit while the pool was in use")
	case <-time.After(20 * time.Millisecond):
	}
	b.settle(50, nil)
	b.release(25)
	require.Equal(t, int64(100), <-large, "a record as large as the pool runs alone")
	require.Equal(t, 1, b.settle(100, []int64{1000}), "the pool's worth")
	require.Equal(t, int64(100), gauge)
	b.release(100)
	require.Equal(t, int64(0), gauge)

	cctx, cancel := context.WithCancel(ctx)
	require.True(t, b.tryAcquire(1000), "more than the pool holds the pool")
	require.Equal(t, int64(100), gauge)
	done := make(chan error, 1)
	go func() { _, err := b.reserve(cctx, 0, 10); done <- err }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	b.release(100)
	n, err = b.reserve(ctx, 0, 1000)
	require.NoError(t, err)
	require.Equal(t, int64(100), n, "a cancelled waiter took nothing")
}
