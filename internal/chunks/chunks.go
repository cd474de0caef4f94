// Package chunks splits work on a large slice across the available cores.
package chunks

import (
	"runtime"
	"sync"
)

// Range is the items [Lo, Hi) of a slice.
type Range struct{ Lo, Hi int }

// Split cuts [0, n) into Count(n, minItems) contiguous ranges, in order.
func Split(n, minItems int) []Range {
	parts := Count(n, minItems)
	rs := make([]Range, parts)
	for i := range rs {
		rs[i] = Range{Lo: i * n / parts, Hi: (i + 1) * n / parts}
	}
	return rs
}

// Run calls fn(i, rs[i]) for every range, in parallel when there is more than one, and returns
// when every call has returned.
func Run(rs []Range, fn func(i int, r Range)) {
	if len(rs) == 1 {
		fn(0, rs[0])
		return
	}
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { fn(i, r) })
	}
	wg.Wait()
}

// Each calls fn(i, lo, hi) for the ranges of Split(n, minItems), as Run does.
func Each(n, minItems int, fn func(i, lo, hi int)) {
	Run(Split(n, minItems), func(i int, r Range) { fn(i, r.Lo, r.Hi) })
}

// Count is the number of ranges Split makes of n items: one per core (GOMAXPROCS) as long as
// each gets at least minItems, and at least one.
func Count(n, minItems int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/max(minItems, 1)))
}
