package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHealthcheck(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	tests := []struct {
		name  string
		addr  string
		ready bool
		code  int
	}{
		{name: "ready", addr: ":" + port, ready: true, code: 0},
		{name: "not ready", addr: "0.0.0.0:" + port, ready: false, code: 1},
		{name: "nothing listening", addr: closedAddr, code: 1},
		{name: "bad address", addr: "8080", code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready.Store(tt.ready)
			t.Setenv("OFFSETAGENT_HTTP_ADDR", tt.addr)
			var stderr bytes.Buffer
			require.Equal(t, tt.code, run([]string{"healthcheck"}, nil, &bytes.Buffer{}, &stderr), stderr.String())
		})
	}
}
