package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/migrate"
)

// migrate's REST clients, of A (export and migrate: --from-connect-url) and of B (migrate:
// --to-connect-url, for the prechecks and --verify), send their basic auth credentials to the
// configured host only: a redirect to another host (the same address, another port) never
// gets them, however they were configured.
func TestMigrateConnectCredentialsStayOnTheConfiguredHost(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "connect.properties")
	require.NoError(t, os.WriteFile(props, []byte("basic.auth.user.info=admin:file-pw\n"), 0o600))
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.MkdirAll(manifests, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, migrate.PlacedFile),
		[]byte(`{"name":"x","type":"source","state":"RUNNING","offsets":[]}`+"\n"), 0o600))
	withUser := func(url string) string { return strings.Replace(url, "http://", "http://admin:url-pw@", 1) }
	tests := []struct {
		name string
		env  map[string]string
		args func(url string) []string
	}{
		{name: "A by OFFSETAGENT_FROM_CONNECT_USER_INFO", env: map[string]string{"OFFSETAGENT_FROM_CONNECT_USER_INFO": "admin:var-pw"},
			args: func(url string) []string { return []string{"export", "--from-connect-url", url} }},
		{name: "A by --from-connect-config",
			args: func(url string) []string {
				return []string{"export", "--from-connect-url", url, "--from-connect-config", props}
			}},
		{name: "A by the URL's userinfo",
			args: func(url string) []string { return []string{"export", "--from-connect-url", withUser(url)} }},
		{name: "B by OFFSETAGENT_TO_CONNECT_USER_INFO", env: map[string]string{"OFFSETAGENT_TO_CONNECT_USER_INFO": "admin:var-pw"},
			args: func(url string) []string {
				return []string{"migrate", "--verify", "--manifests", manifests, "--to-connect-url", url}
			}},
		{name: "B by --to-connect-config",
			args: func(url string) []string {
				return []string{"migrate", "--verify", "--manifests", manifests, "--to-connect-url", url, "--to-connect-config", props}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			first, firstAuth, secondAuth := redirectingPair(t)
			var out, errOut bytes.Buffer
			code := run(tc.args(first.URL), strings.NewReader(""), &out, &errOut)
			for _, a := range secondAuth.all() {
				require.Empty(t, a, "the host a redirect names never gets the credentials")
			}
			require.NotEmpty(t, firstAuth.all())
			for _, a := range firstAuth.all() {
				require.True(t, strings.HasPrefix(a, "Basic "), "the configured host gets the credentials: %q", a)
			}
			t.Logf("exit %d: %s", code, errOut.String())
			require.NotEqual(t, 0, code)
			require.Contains(t, errOut.String()+out.String(), "redirect")
		})
	}
}

// authLog records the Authorization header of every request a server got ("" for none).
type authLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *authLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Header.Get("Authorization"))
}

func (l *authLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// redirectingPair starts two Connect REST servers on 127.0.0.1, on different ports: the
// first redirects every request to the same path on the second (307), which answers as a
// Connect worker's root and lists no connector. Each logs the Authorization headers it got.
func redirectingPair(t *testing.T) (first *httptest.Server, firstAuth, secondAuth *authLog) {
	t.Helper()
	firstAuth, secondAuth = &authLog{}, &authLog{}
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secondAuth.add(r)
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
		firstAuth.add(r)
		http.Redirect(w, r, second.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(first.Close)
	return first, firstAuth, secondAuth
}
