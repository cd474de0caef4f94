package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// server serves /metrics, /healthz (liveness: the process answers) and /readyz (readiness:
// views loaded, group joined, able to consume, not shutting down; a 503 says why not).
type server struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
	// grace is how long shutdown waits for running requests before closing their connections.
	grace time.Duration
}

// newServer builds the server. /debug/pprof answers while pprofOn reports true (404
// otherwise), so that profiling can be switched on and off without a restart.
func newServer(addr string, ln net.Listener, g prometheus.Gatherer, pprofOn func() bool, ready func() error, log *slog.Logger) (*server, error) {
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	gated := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if pprofOn == nil || !pprofOn() {
				http.Error(w, "pprof is off: set OFFSETAGENT_PPROF=true, or run `offsetagent pprof on` in the container", http.StatusNotFound)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("/debug/pprof/", gated(pprof.Index))
	mux.HandleFunc("/debug/pprof/cmdline", gated(pprof.Cmdline))
	mux.HandleFunc("/debug/pprof/profile", gated(pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", gated(pprof.Symbol))
	mux.HandleFunc("/debug/pprof/trace", gated(pprof.Trace))
	return &server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, log: log, grace: 5 * time.Second}, nil
}

// Addr is the address the server listens on.
func (s *server) Addr() net.Addr { return s.ln.Addr() }

// run serves until ctx is done, then shuts down within a few seconds. Requests still running
// then (a slow scrape, a CPU profile) are cut: the agent's work is done by the time its HTTP
// server stops, and a probe's connection is no reason to fail the shutdown.
func (s *server) run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.grace)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	switch {
	case err == nil, errors.Is(err, http.ErrServerClosed):
	case errors.Is(err, context.DeadlineExceeded):
		s.log.Warn("http requests still running at shutdown, closing their connections", "error", err)
		if err := s.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("close http: %w", err)
		}
	default:
		return fmt.Errorf("shut down http: %w", err)
	}
	return nil
}
