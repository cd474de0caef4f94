package tier

import (
	"sync"
	"testing"
)

// A broker or worker a test starts for itself costs CPU for as long as it runs: an idle KRaft
// broker of these tests takes about a tenth of a core, and a package that kept every test's
// processes until its end spent minutes of CPU on them. StopAfter stops them when the test
// ends, in the background, so that the next test does not wait for their shutdown.

var (
	stopsMu sync.Mutex
	stops   = map[testing.TB][]func(){}
	stopped sync.WaitGroup
)

// StopAfter runs stop once t has ended (subtests included), in the background, after the
// stops registered later for t: a worker stops before the broker it was started on, as a
// broker gone first would keep the worker's shutdown waiting. stop must be idempotent (the
// package's own end may run it too). A TestMain calls WaitStopped before it returns.
func StopAfter(t testing.TB, stop func()) {
	stopsMu.Lock()
	defer stopsMu.Unlock()
	fs, ok := stops[t]
	stops[t] = append(fs, stop)
	if ok {
		return
	}
	t.Cleanup(func() {
		stopsMu.Lock()
		fs := stops[t]
		delete(stops, t)
		stopsMu.Unlock()
		stopped.Add(1)
		go func() {
			defer stopped.Done()
			for i := len(fs) - 1; i >= 0; i-- {
				fs[i]()
			}
		}()
	})
}

// WaitStopped waits for the stops StopAfter started.
func WaitStopped() { stopped.Wait() }
