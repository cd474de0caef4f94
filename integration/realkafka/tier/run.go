package tier

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
)

// Run is one test package's run of real peers: a name part unique to the run (for topics and
// groups on a shared cluster), a temporary folder for the peers' data and logs, and what to stop
// at the end. Each real-tier test package has one (Env).
type Run struct {
	// ID is unique to the run: 8 hex digits.
	ID string
	// Dir holds the run's data and logs.
	Dir string

	mu      sync.Mutex
	cleanup []func()
}

// NewRun creates the run's folder, named after prefix, in the temporary directory.
func NewRun(prefix string) (*Run, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	return &Run{ID: hex.EncodeToString(b), Dir: dir}, nil
}

// AtExit registers f to run at End, after the tests.
func (r *Run) AtExit(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanup = append(r.cleanup, f)
}

// End waits for the tests' own stops (StopAfter), runs what AtExit registered, last first, and
// removes the run's folder; with keep (a failed run) it keeps the folder and says where it is,
// after what (the tier's name).
func (r *Run) End(keep bool, what string) {
	WaitStopped()
	r.mu.Lock()
	fns := r.cleanup
	r.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
	if keep {
		fmt.Fprintf(os.Stderr, "%s: logs kept in %s\n", what, r.Dir)
		return
	}
	_ = os.RemoveAll(r.Dir)
}
