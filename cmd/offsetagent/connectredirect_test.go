package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/connecttest"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
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
	require.NoError(t, os.WriteFile(filepath.Join(manifests, strimzi.PlacedFile),
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
			first, firstAuth, secondAuth := connecttest.RedirectingPair(t)
			var out, errOut bytes.Buffer
			code := run(tc.args(first.URL), strings.NewReader(""), &out, &errOut)
			connecttest.RequireCredentialsOnFirstOnly(t, firstAuth, secondAuth)
			t.Logf("exit %d: %s", code, errOut.String())
			require.NotEqual(t, 0, code)
			require.Contains(t, errOut.String()+out.String(), "redirect")
		})
	}
}
