package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The budget serves waiters in order, lets a fetch reserve what is free, counts only what
// records hold in the gauge, and gives a record larger than the pool the whole pool.
func TestBudget(t *testing.T) {
	var gauge int64
	b := newBudget(100, 10, func(held int64) { gauge = held })
	ctx := testContext(t)

	n, err := b.reserve(ctx, 60)
	require.NoError(t, err)
	require.Equal(t, int64(60), n)
	require.Equal(t, int64(0), gauge, "a reservation is not held by records")
	b.settle(60, 25)
	require.Equal(t, int64(25), gauge)

	require.NoError(t, b.acquire(ctx, 70))
	require.Equal(t, int64(95), gauge)

	// Nothing fits now: a fetch waits, and a later acquire queues behind it.
	granted := make(chan int64, 1)
	go func() {
		n, _ := b.reserve(ctx, 50)
		granted <- n
	}()
	acquired := make(chan struct{})
	time.Sleep(20 * time.Millisecond)
	go func() {
		_ = b.acquire(ctx, 100) // larger than what is ever free while the fetch holds some
		close(acquired)
	}()
	time.Sleep(20 * time.Millisecond)
	b.release(70) // 75 free: the fetch takes 50
	require.Equal(t, int64(50), <-granted)
	select {
	case <-acquired:
		t.Fatal("acquire overtook or fit while the pool was in use")
	case <-time.After(20 * time.Millisecond):
	}
	b.settle(50, 0)
	b.release(25)
	<-acquired
	require.Equal(t, int64(100), gauge, "a record as large as the pool runs alone")
	b.release(100)
	require.Equal(t, int64(0), gauge)

	cctx, cancel := context.WithCancel(ctx)
	require.NoError(t, b.acquire(ctx, 100))
	done := make(chan error, 1)
	go func() { _, err := b.reserve(cctx, 10); done <- err }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	b.release(100)
	n, err = b.reserve(ctx, 1000)
	require.NoError(t, err)
	require.Equal(t, int64(100), n, "a cancelled waiter took nothing")
}
