package tier

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// endRecorder is a testing.TB that records how a test was ended instead of ending it. Like
// testing's own, its Skip and Fatalf end the goroutine that calls them (see ended): what
// follows them (RequirePeers' start of the peers) never runs.
type endRecorder struct {
	testing.TB
	skipped, failed string
}

func (r *endRecorder) Helper() {}

func (r *endRecorder) Skip(args ...any) {
	r.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *endRecorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// ended runs end with an endRecorder on a goroutine of its own, as testing runs a test, and
// returns the recorder once that goroutine ended.
func ended(t *testing.T, end func(testing.TB)) *endRecorder {
	r := &endRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		end(r)
	}()
	<-done
	return r
}

// Every skip of the tier is a failure under OFFSETAGENT_REQUIRE_REAL_KAFKA=1 and a skip
// without it: SkipOrFail's own, and RequirePeers' when the tier is skipped or a peer is gone.
func TestSkipOrFail(t *testing.T) {
	const why = "mariadbd is not on the PATH (the MariaDB tier's server)"
	ends := map[string]func(tb testing.TB){
		"SkipOrFail": func(tb testing.TB) { SkipOrFail(tb, why) },
		"RequirePeers": func(tb testing.TB) {
			e := New(Config{})
			e.Skip = why
			// Should RequirePeers go on to start the peers, it finds them failed: this test
			// starts no process.
			e.setupOnce.Do(func() { e.setupErr = errors.New("this test starts no peers") })
			e.RequirePeers(tb)
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				require       string
				skipped, fail string
			}{
				{require: "", skipped: why},
				{require: "0", skipped: why},
				{require: "1", fail: why + " (OFFSETAGENT_REQUIRE_REAL_KAFKA=1 forbids skipping it)"},
			} {
				t.Setenv(RequireEnv, tc.require)
				r := ended(t, end)
				require.Equal(t, tc.skipped, r.skipped, "%s=%q", RequireEnv, tc.require)
				require.Equal(t, tc.fail, r.failed, "%s=%q", RequireEnv, tc.require)
			}
		})
	}
}
