package agent

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/handlers"
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
			hc, err := connectHTTPClient(cfg, nil)
			require.NoError(t, err)
			// As agent.New builds the validator.
			c, err := handlers.NewConnectClient(cfg.ConnectURL, hc)
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
	hc, err := connectHTTPClient(cfg, nil)
	require.NoError(t, err)
	c, err := handlers.NewConnectClient(cfg.ConnectURL, hc)
	require.NoError(t, err)
	exists, err := c.Exists(t.Context(), "x")
	require.NoError(t, err)
	require.False(t, exists)
	require.Len(t, auth.All(), 2)
	for _, a := range auth.All() {
		require.True(t, strings.HasPrefix(a, "Basic "), a)
	}
}
