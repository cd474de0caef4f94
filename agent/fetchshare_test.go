package agent

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A record of the largest allowed size, fetched by one partition while every other assigned
// partition long-polls with its reservation, takes its weight at once: it does not wait for
// the other polls to end. What those polls then bring back is kept only beside it, within the
// bound, and a poll that comes back empty gives its reservation back.
func TestLargeRecordDoesNotWaitForIdlePolls(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name             string
		size, maxRequest int64
		assigned         int
	}{
		{name: "defaults, 6 partitions", size: 32 * mib, maxRequest: 16 * mib, assigned: 6},
		{name: "defaults, 1 partition", size: 32 * mib, maxRequest: 16 * mib, assigned: 1},
		{name: "defaults, 16 partitions", size: 32 * mib, maxRequest: 16 * mib, assigned: 16},
		{name: "large budget", size: 256 * mib, maxRequest: 16 * mib, assigned: 12},
		{name: "small requests", size: 16 * mib, maxRequest: 2 * mib, assigned: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			share := fetchShare(tt.size, tt.maxRequest, tt.assigned)
			require.GreaterOrEqual(t, share, int64(minFetchBytes))
			b := newBudget(tt.size, minFetchBytes, nil)
			ctx := testContext(t)
			// Every partition reserves its share and polls.
			for range tt.assigned {
				n, err := b.reserve(ctx, 0, share)
				require.NoError(t, err)
				require.Equal(t, share, n)
			}
			// One of them gets a record of the largest size: it keeps it beside the others'
			// reservations.
			large := requestMemoryFactor * tt.maxRequest
			kept := b.settle(share, []int64{large})
			if kept == 0 {
				require.True(t, b.tryAcquire(large),
					fmt.Sprintf("a %d-byte record waits behind %d idle polls of %d bytes", large, tt.assigned-1, share))
			}
			held := min(large, tt.size)
			// Another poll brings back records of its share: it keeps only what fits beside.
			if tt.assigned > 1 {
				w := share / 2
				k := b.settle(share, []int64{w, w})
				require.LessOrEqual(t, held+int64(k)*w, tt.size, "records held never weigh more than the bound")
				held += int64(k) * w
				// The rest poll back empty.
				for range tt.assigned - 2 {
					b.settle(share, nil)
				}
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			require.Equal(t, held, b.used, "only records are held once the polls are over")
			require.Zero(t, b.reserved)
		})
	}
}
