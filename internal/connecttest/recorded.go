package connecttest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// StartRecording starts a Recording with answers, closed at the test's end. The files of the
// answers are read here: a missing one fails the test before any request.
func StartRecording(t *testing.T, answers map[string]Recorded) (*Recording, *httptest.Server) {
	t.Helper()
	f := &Recording{answers: make(map[string]Recorded, len(answers))}
	var dir string
	for key, a := range answers {
		if a.File != "" {
			if dir == "" {
				dir = testdata(t)
			}
			b, err := os.ReadFile(filepath.Join(dir, a.File))
			require.NoError(t, err, "the recorded answer to %s", key)
			a.Body, a.File = string(b), ""
		}
		f.answers[key] = a
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// testdata is the module's integration/testdata/connect, which tests of any package read. A test
// runs in its package's folder: the module's root is the nearest folder above it holding go.mod.
// (Not this source file's path: make test builds some test binaries with -trimpath, the release
// build's flag, which leaves runtime.Caller a path relative to the module.)
func testdata(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err, "the test's working folder")
	for start := dir; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "integration", "testdata", "connect")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			require.FailNow(t, "no go.mod in "+start+" or any folder above it")
		}
		dir = parent
	}
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
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
