// Package chunks splits work on a large slice across the available cores.
package chunks

import (
	"runtime"
	"sync"
)

// Each calls fn(i, lo, hi) for Count(n, minItems) contiguous ranges, numbered i from 0, that
// together cover [0, n) in order. More than one range run in parallel; it returns when every
// call has returned.
func Each(n, minItems int, fn func(i, lo, hi int)) {
	parts := Count(n, minItems)
	if parts == 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for i := range parts {
		lo, hi := i*n/parts, (i+1)*n/parts
		wg.Go(func() { fn(i, lo, hi) })
	}
	wg.Wait()
}

// Count is the number of ranges Each makes of n items: one per core (GOMAXPROCS) as long as
// each gets at least minItems, and at least one.
func Count(n, minItems int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/max(minItems, 1)))
}
