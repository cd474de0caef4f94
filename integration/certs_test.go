package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and a client certificate,
// written as PEM files into a test's temporary directory.
type testPKI struct {
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string
	caPool                                                               *x509.CertPool
	server                                                               tls.Certificate
	// leaf issues a certificate of the CA valid until notAfter for hosts (IP addresses or
	// DNS names) and writes it and its key to certFile and keyFile.
	leaf func(serial int64, cn string, usage x509.ExtKeyUsage, notAfter time.Time, hosts []string, certFile, keyFile string) tls.Certificate
}

// brokerConfig is a broker's TLS configuration with a certificate of the CA valid until
// notAfter for hosts only (an expired one, or one for another host).
func (p *testPKI) brokerConfig(t *testing.T, notAfter time.Time, hosts ...string) *tls.Config {
	t.Helper()
	dir := t.TempDir()
	cert := p.leaf(10, hosts[0], x509.ExtKeyUsageServerAuth, notAfter, hosts, filepath.Join(dir, "broker.pem"), filepath.Join(dir, "broker-key.pem"))
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "offsetagent test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	p := &testPKI{CAFile: filepath.Join(dir, "ca.pem"), caPool: x509.NewCertPool()}
	p.caPool.AddCert(ca)
	writePEM(t, p.CAFile, "CERTIFICATE", caDER)

	p.leaf = func(serial int64, cn string, usage x509.ExtKeyUsage, notAfter time.Time, hosts []string, certFile, keyFile string) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-2 * time.Hour), NotAfter: notAfter,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		require.NoError(t, err)
		writePEM(t, certFile, "CERTIFICATE", der)
		writePEM(t, keyFile, "PRIVATE KEY", keyDER)
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		require.NoError(t, err)
		return cert
	}
	p.ServerCertFile, p.ServerKeyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	p.ClientCertFile, p.ClientKeyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	hosts, valid := []string{"127.0.0.1", "localhost"}, now.Add(24*time.Hour)
	p.server = p.leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, valid, hosts, p.ServerCertFile, p.ServerKeyFile)
	p.leaf(3, "offsetagent", x509.ExtKeyUsageClientAuth, valid, hosts, p.ClientCertFile, p.ClientKeyFile)
	return p
}

// serverConfig is the broker's TLS configuration; requireClientCert makes it verify clients
// against the CA.
func (p *testPKI) serverConfig(requireClientCert bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if requireClientCert {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, p.caPool
	}
	return cfg
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}
