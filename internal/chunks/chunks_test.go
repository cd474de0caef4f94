package chunks

import (
	"runtime"
	"sync"
	"testing"
)

func TestEachCoversInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, tc := range []struct{ n, minItems, parts int }{
		{0, 10, 1}, {5, 10, 1}, {19, 10, 1}, {20, 10, 2}, {1000, 10, 4}, {1000, 0, 4}, {3, 1, 3},
	} {
		var mu sync.Mutex
		seen := make([]int, tc.n)
		ranges := map[int][2]int{}
		Each(tc.n, tc.minItems, func(i, lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			ranges[i] = [2]int{lo, hi}
			for k := lo; k < hi; k++ {
				seen[k]++
			}
		})
		if len(ranges) != tc.parts || Count(tc.n, tc.minItems) != tc.parts {
			t.Fatalf("n=%d min=%d: %d ranges (Count %d), want %d", tc.n, tc.minItems, len(ranges), Count(tc.n, tc.minItems), tc.parts)
		}
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("n=%d: item %d covered %d times", tc.n, k, c)
			}
		}
		for i := 1; i < len(ranges); i++ {
			if ranges[i][0] != ranges[i-1][1] {
				t.Fatalf("n=%d: range %d %v does not follow %v", tc.n, i, ranges[i], ranges[i-1])
			}
		}
	}
}
