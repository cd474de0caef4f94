package connecttest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Recorded is a Connect answer: a status and a body, a file of integration/testdata/connect
// (responses written from Connect's REST entities) or a literal, sent after Delay.
type Recorded struct {
	Status int
	File   string
	Body   string
	Delay  time.Duration
}

// Seen is a request a Recording got.
type Seen struct {
	Method, URI, Body, ContentType string
}

// Recording is a Connect REST server on 127.0.0.1 that answers by "METHOD request-URI" from a
// table of Recorded answers (418 for any other request) and records every request.
type Recording struct {
	answers map[string]Recorded
	mu      sync.Mutex
	seen    []Seen
}

// StartRecording starts a Recording with answers, closed at the test's end.
func StartRecording(t *testing.T, answers map[string]Recorded) (*Recording, *httptest.Server) {
	t.Helper()
	f := &Recording{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// testdata is integration/testdata/connect, found from this file: tests of any package read it.
func testdata() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "integration", "testdata", "connect")
}

// ServeHTTP answers r from the table and records it.
func (f *Recording) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Method + " " + r.RequestURI
	f.mu.Lock()
	f.seen = append(f.seen, Seen{Method: r.Method, URI: r.RequestURI, Body: string(body), ContentType: r.Header.Get("Content-Type")})
	a, ok := f.answers[key]
	f.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "unexpected request "+key)
		return
	}
	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-r.Context().Done():
			return
		}
	}
	out := []byte(a.Body)
	if a.File != "" {
		b, err := os.ReadFile(filepath.Join(testdata(), a.File))
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		out = b
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	_, _ = w.Write(out)
}

// Requests returns the requests recorded, in order.
func (f *Recording) Requests() []Seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Seen(nil), f.seen...)
}

// ClosedURL is the URL of a listener on 127.0.0.1 that no longer accepts connections.
func ClosedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr
}
