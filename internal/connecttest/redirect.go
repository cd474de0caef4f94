// Package connecttest holds the helpers that tests of several packages use to check what a
// Kafka Connect REST client sends where: servers on 127.0.0.1 that answer as a Connect worker
// and record the Authorization header of each request. Only tests import it.
package connecttest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// AuthLog records the Authorization header of every request a server got ("" for none).
type AuthLog struct {
	mu   sync.Mutex
	seen []string
}

// Add records r's Authorization header.
func (l *AuthLog) Add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Header.Get("Authorization"))
}

// All returns the headers recorded, in the order of the requests.
func (l *AuthLog) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// RedirectingPair starts two Connect REST servers on 127.0.0.1, on different ports: the
// first redirects every request to the same path on the second (307, which keeps the method
// and body), which answers as a Connect worker with no connector (its root, an empty
// /connectors, 404 for anything else). Each records the Authorization headers it got.
func RedirectingPair(t *testing.T) (first *httptest.Server, firstAuth, secondAuth *AuthLog) {
	t.Helper()
	firstAuth, secondAuth = &AuthLog{}, &AuthLog{}
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secondAuth.Add(r)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/":
			_, _ = w.Write([]byte(`{"version":"4.1.0","commit":"x","kafka_cluster_id":"second"}`))
		case "/connectors":
			_, _ = w.Write([]byte(`[]`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":404,"message":"not found"}`))
		}
	}))
	t.Cleanup(second.Close)
	first = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		firstAuth.Add(r)
		http.Redirect(w, r, second.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(first.Close)
	return first, firstAuth, secondAuth
}

// RequireCredentialsOnFirstOnly requires that the second server of a RedirectingPair got no
// credentials, and that the first got requests, each with basic auth credentials.
func RequireCredentialsOnFirstOnly(t *testing.T, firstAuth, secondAuth *AuthLog) {
	t.Helper()
	for _, a := range secondAuth.All() {
		require.Empty(t, a, "the host a redirect names never gets the credentials")
	}
	require.NotEmpty(t, firstAuth.All())
	for _, a := range firstAuth.All() {
		require.True(t, strings.HasPrefix(a, "Basic "), "the configured host gets the credentials: %q", a)
	}
}
