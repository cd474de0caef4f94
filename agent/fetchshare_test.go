package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A record of the largest allowed size, fetched by one partition while every other assigned
// partition long-polls with its reservation, takes its weight at once: it does not wait for
// the other polls to end. (With more partitions than the budget holds minimal fetches beside
// such a record, some fetchers wait for their turn instead: not a case here.)
func TestFetchShareLeavesRoomForLargestRequest(t *testing.T) {
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
			// Every partition reserves its share and polls; one of them gets a record of the
			// largest size, gives its reservation back and takes the record's weight.
			for range tt.assigned {
				n, err := b.reserve(ctx, share)
				require.NoError(t, err)
				require.Equal(t, share, n)
			}
			b.settle(share, 0)
			actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			require.NoError(t, b.acquire(actx, tt.maxRequest),
				fmt.Sprintf("a %d-byte record waits behind %d idle polls of %d bytes", tt.maxRequest, tt.assigned-1, share))
		})
	}
}
