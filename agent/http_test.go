package agent

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// blockingGatherer holds every scrape until released, as a scrape of a process short of CPU.
type blockingGatherer struct{ entered, release chan struct{} }

func (g blockingGatherer) Gather() ([]*dto.MetricFamily, error) {
	g.entered <- struct{}{}
	<-g.release
	return nil, nil
}

// A request still running when the agent stops (a slow scrape) is cut after the grace period;
// the shutdown does not fail for it.
func TestServerShutdownCutsRunningRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := blockingGatherer{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(g.release)
	var _ prometheus.Gatherer = g
	srv, err := newServer("", ln, g, nil, func() error { return nil }, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv.grace = 100 * time.Millisecond

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.run(ctx) }()
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the scrape never reached the gatherer")
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
}

// /debug/pprof follows SetPprof while the agent runs: 404 while off, served while on.
func TestPprofSwitchedAtRunTime(t *testing.T) {
	for _, atStart := range []bool{false, true} {
		a, _ := testAgent(t, &fakeProcessor{})
		a.cfg.Pprof = atStart
		a.pprof.Store(atStart)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		a.opts.Listener = ln
		srv, err := a.httpServer()
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.run(ctx) }()
		status := func() int {
			resp, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/goroutine?debug=1")
			require.NoError(t, err)
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode
		}
		want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}
		require.Equal(t, want[atStart], status(), "at start")
		a.SetPprof(!atStart)
		require.Equal(t, want[!atStart], status(), "switched")
		a.SetPprof(atStart)
		require.Equal(t, want[atStart], status(), "switched back")
		cancel()
		require.NoError(t, <-done)
	}
}
