package agent

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/connecttest"
)

// The agent's Connect REST client (OFFSETAGENT_CONNECT_URL, used to validate configs) sends
// its basic auth credentials to the configured host only: a redirect to another host (here
// the same address, another port) never gets them, however they were configured.
func TestConnectCredentialsStayOnTheConfiguredHost(t *testing.T) {
	props := filepath.Join(t.TempDir(), "connect.properties")
	require.NoError(t, os.WriteFile(props, []byte("basic.auth.user.info=admin:file-pw\n"), 0o600))
	tests := []struct {
		name string
		cfg  func(url string) Config
	}{
		{name: "OFFSETAGENT_CONNECT_USER_INFO", cfg: func(url string) Config {
			return Config{ConnectURL: url, ConnectUserInfo: "admin:var-pw"}
		}},
		{name: "OFFSETAGENT_CONNECT_CONFIG", cfg: func(url string) Config {
			return Config{ConnectURL: url, ConnectConfig: props}
		}},
		{name: "userinfo of OFFSETAGENT_CONNECT_URL", cfg: func(url string) Config {
			return Config{ConnectURL: strings.Replace(url, "http://", "http://admin:url-pw@", 1)}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, firstAuth, secondAuth := connecttest.RedirectingPair(t)
			cfg := tc.cfg(first.URL)
			// As agent.New builds the validator.
			c, err := connectValidator(cfg, nil)
			require.NoError(t, err)

			_, validateErr := c.Validate(t.Context(), "org.apache.kafka.connect.file.FileStreamSourceConnector", map[string]string{"name": "x"})
			_, existsErr := c.Exists(t.Context(), "x")

			connecttest.RequireCredentialsOnFirstOnly(t, firstAuth, secondAuth)
			require.Len(t, firstAuth.All(), 2)
			// A redirect to another host is not followed: the error says so.
			for _, err := range []error{validateErr, existsErr} {
				require.ErrorContains(t, err, "redirect")
			}
		})
	}
}

// A redirect within the configured host (a proxy in front of the workers that moves a path)
// is followed, with the credentials.
func TestConnectRedirectOnTheSameHostIsFollowed(t *testing.T) {
	auth := &connecttest.AuthLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Add(r)
		if !strings.HasPrefix(r.URL.Path, "/connect/") {
			http.Redirect(w, r, "/connect"+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error_code":404,"message":"Connector x not found"}`))
	}))
	t.Cleanup(srv.Close)
	cfg := Config{ConnectURL: srv.URL, ConnectUserInfo: "admin:pw"}
	c, err := connectValidator(cfg, nil)
	require.NoError(t, err)
	exists, err := c.Exists(t.Context(), "x")
	require.NoError(t, err)
	require.False(t, exists)
	require.Len(t, auth.All(), 2)
	for _, a := range auth.All() {
		require.True(t, strings.HasPrefix(a, "Basic "), a)
	}
}

// The agent's Connect REST client takes OFFSETAGENT_CONNECT_CONFIG and
// OFFSETAGENT_CONNECT_USER_INFO; a password in OFFSETAGENT_CONNECT_URL works with one warning
// that does not repeat it.
func TestAgentConnectHTTPClient(t *testing.T) {
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	_, err := connectHTTPClient(Config{ConnectURL: "http://admin:url-S3cret@127.0.0.1:1"}, logger)
	require.NoError(t, err)
	require.Contains(t, logs.String(), "OFFSETAGENT_CONNECT_URL carries a password")
	require.NotContains(t, logs.String(), "url-S3cret")

	path := filepath.Join(t.TempDir(), "rest.properties")
	require.NoError(t, os.WriteFile(path, []byte("basic.auth.user.info=admin:file-S3cret\n"), 0o600))
	_, err = connectHTTPClient(Config{ConnectURL: "http://127.0.0.1:1", ConnectConfig: path, ConnectUserInfo: "admin:env-S3cret"}, logger)
	require.ErrorContains(t, err, "OFFSETAGENT_CONNECT_USER_INFO: set, and the Connect REST properties file has basic.auth.user.info too")
	require.NotContains(t, err.Error(), "S3cret")
	_, err = connectHTTPClient(Config{ConnectURL: "http://u:url-S3cret@127.0.0.1:1", ConnectUserInfo: "admin:env-S3cret"}, logger)
	require.ErrorContains(t, err, "OFFSETAGENT_CONNECT_URL: connect URL http://u:xxxxx@127.0.0.1:1 carries credentials")
	require.NotContains(t, err.Error(), "S3cret")
}
