package kafkatest

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HoldGroupReads makes c hold each OffsetFetch that match accepts until want of them are in
// flight at once, or a second has passed, and then answer it as usual; OffsetFetches match
// refuses are answered at once. It returns the most that were ever in flight at once: a test
// that reads groups side by side sees want, one read after the other sees 1 (and a second
// lost per read). Call it before the reads start; the hold lasts until the cluster closes.
func HoldGroupReads(c *kfake.Cluster, want int, match func(*kmsg.OffsetFetchRequest) bool) (most func() int) {
	var mu sync.Mutex
	arrived, top := 0, 0
	enough := make(chan struct{})
	closeEnough := sync.OnceFunc(func() { close(enough) })
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !match(req.(*kmsg.OffsetFetchRequest)) {
			return nil, nil, false
		}
		mu.Lock()
		arrived++
		top = max(top, arrived)
		if arrived >= want {
			closeEnough()
		}
		mu.Unlock()
		// SleepControl lets the broker serve other requests (the next reads) meanwhile.
		c.SleepControl(func() {
			select {
			case <-enough:
			case <-time.After(time.Second): // one after the other, this one never sees enough
			}
		})
		mu.Lock()
		arrived--
		mu.Unlock()
		return nil, nil, false
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return top
	}
}
