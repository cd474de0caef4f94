package clientconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPrincipal(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "agent", OrganizationalUnit: []string{"ops"}, Organization: []string{"Example"}},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	certFile := filepath.Join(t.TempDir(), "agent.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))

	for _, tc := range []struct {
		name string
		s    Security
		want string
	}{
		{"sasl", Security{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "alice", SASLPassword: "secret"}, "User:alice"},
		{"sasl wins over a client certificate", Security{SASLMechanism: "PLAIN", SASLUsername: "bob", TLSEnabled: true, TLSCertFile: certFile}, "User:bob"},
		{"client certificate", Security{TLSEnabled: true, TLSCertFile: certFile}, "User:CN=agent,OU=ops,O=Example"},
		{"unreadable certificate", Security{TLSEnabled: true, TLSCertFile: filepath.Join(t.TempDir(), "missing.pem")}, "User:ANONYMOUS"},
		{"plaintext", Security{}, "User:ANONYMOUS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.s.Principal())
		})
	}
}
