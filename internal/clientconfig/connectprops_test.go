package clientconfig

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/connectrest"
)

// testCA is a throwaway CA that signs a server certificate and client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf signs a certificate for cn with the given names; it returns the certificate's PEM and
// its key's PKCS#8 DER.
func (ca *testCA) leaf(t *testing.T, cn string, usage x509.ExtKeyUsage, ips []net.IP, dns []string) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{"Example"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, DNSNames: dns}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyDER
}

// encryptPKCS8 writes keyDER as `openssl pkcs8 -topk8 -v2 aes-256-cbc` does: PBES2 with
// PBKDF2-HMAC-SHA256 and AES-256-CBC.
func encryptPKCS8(t *testing.T, keyDER []byte, password string) []byte {
	t.Helper()
	salt, iv := make([]byte, 16), make([]byte, 16)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	require.NoError(t, err)
	pad := aes.BlockSize - len(keyDER)%aes.BlockSize
	plain := append(append([]byte{}, keyDER...), []byte(strings.Repeat(string(rune(pad)), pad))...)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)
	mustDER := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		require.NoError(t, err)
		return asn1.RawValue{FullBytes: b}
	}
	kdf := mustDER(struct {
		Salt  []byte
		Iter  int
		KeyLn int
		PRF   pkix.AlgorithmIdentifier
	}{salt, 2048, 32, pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}})
	params := mustDER(pbes2Params{
		KeyDerivationFunc: pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: kdf},
		EncryptionScheme:  pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: mustDER(iv)},
	})
	der, err := asn1.Marshal(encryptedPrivateKeyInfo{Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: params}, EncryptedData: enc})
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
}

// A Connect REST API behind HTTPS with a private CA, client certificates and basic auth is
// reached with the settings of a properties file (the CA inline on continued lines, the
// client key encrypted with ssl.key.password); without the credentials it answers 401, and
// no error carries the password.
func TestConnectHTTPClientTLSAndBasicAuth(t *testing.T) {
	const password = "rest-S3cret"
	ca := newTestCA(t)
	serverPEM, serverKey := ca.leaf(t, "connect", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")}, nil)
	serverCert, err := tls.X509KeyPair(serverPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: serverKey}))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != password {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"version":"4.3.1"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	clientPEM, clientKey := ca.leaf(t, "migrator", x509.ExtKeyUsageClientAuth, nil, nil)
	keystore := filepath.Join(dir, "keystore.pem")
	require.NoError(t, os.WriteFile(keystore, append(encryptPKCS8(t, clientKey, "key-pw"), clientPEM...), 0o600))
	inlineCA := strings.ReplaceAll(strings.TrimSpace(string(ca.pem)), "\n", " \\\n    ")
	props := "basic.auth.credentials.source=USER_INFO\nbasic.auth.user.info=admin:" + password + "\n" +
		"ssl.truststore.type=PEM\nssl.truststore.certificates=" + inlineCA + "\n" +
		"ssl.keystore.type=PEM\nssl.keystore.location=" + keystore + "\nssl.key.password=key-pw\n"
	cs, err := ParseConnectConfig([]byte(props))
	require.NoError(t, err)
	require.Equal(t, "User:CN=migrator,O=Example", cs.TLS.Principal())

	get := func(hc *http.Client, url string) (int, error) {
		resp, err := hc.Get(url)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	hc, inURL, err := ConnectHTTPClient(srv.URL, cs, 5*time.Second)
	require.NoError(t, err)
	require.False(t, inURL)
	status, err := get(hc, srv.URL)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	// The same credentials in the URL still work, and are reported as visible there.
	noAuth := cs
	noAuth.BasicAuth, noAuth.Username, noAuth.Password = false, "", ""
	withUser := strings.Replace(srv.URL, "https://", "https://admin:"+password+"@", 1)
	hc, inURL, err = ConnectHTTPClient(withUser, noAuth, 5*time.Second)
	require.NoError(t, err)
	require.True(t, inURL)
	status, err = get(hc, withUser)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	_, _, err = ConnectHTTPClient(withUser, cs, 5*time.Second)
	require.ErrorContains(t, err, "give them one way")
	require.NotContains(t, err.Error(), password)

	// Without basic auth: 401. With a wrong key password, or trusting another CA: refused, and
	// no error shows the password.
	hc, _, err = ConnectHTTPClient(srv.URL, noAuth, 5*time.Second)
	require.NoError(t, err)
	status, err = get(hc, srv.URL)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, status)

	wrongKey := cs
	wrongKey.TLS.TLSKeyPassword = "nope"
	_, _, err = ConnectHTTPClient(srv.URL, wrongKey, 5*time.Second)
	require.ErrorContains(t, err, "wrong ssl.key.password")

	other := cs
	other.TLS.TLSCAPEM = newTestCA(t).pem
	hc, _, err = ConnectHTTPClient(srv.URL, other, 5*time.Second)
	require.NoError(t, err)
	_, err = get(hc, withUser)
	require.ErrorContains(t, err, "certificate signed by unknown authority")
	require.NotContains(t, err.Error(), password)

	_, _, err = ConnectHTTPClient(strings.Replace(srv.URL, "https", "http", 1), cs, time.Second)
	require.ErrorContains(t, err, "not https")
}

// ssl.endpoint.identification.algorithm= (empty) checks the chain but not the name; https, the
// default, checks both.
func TestHostnameCheck(t *testing.T) {
	ca := newTestCA(t)
	serverPEM, serverKey := ca.leaf(t, "elsewhere", x509.ExtKeyUsageServerAuth, nil, []string{"elsewhere.example"})
	serverCert, err := tls.X509KeyPair(serverPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: serverKey}))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)

	for _, tt := range []struct {
		name, algorithm, err string
	}{
		{"https checks the name", "https", "cannot validate certificate for 127.0.0.1"},
		{"empty checks the chain only", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := ConnectSecurity{TLS: Security{TLSEnabled: true, TLSCAPEM: ca.pem, TLSNoHostnameCheck: tt.algorithm == ""}}
			hc, _, err := ConnectHTTPClient(srv.URL, cs, 5*time.Second)
			require.NoError(t, err)
			resp, err := hc.Get(srv.URL)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			resp.Body.Close()
		})
	}
	// Another CA is refused even without the hostname check.
	cs := ConnectSecurity{TLS: Security{TLSEnabled: true, TLSCAPEM: newTestCA(t).pem, TLSNoHostnameCheck: true}}
	hc, _, err := ConnectHTTPClient(srv.URL, cs, 5*time.Second)
	require.NoError(t, err)
	_, err = hc.Get(srv.URL)
	require.ErrorContains(t, err, "unknown authority")
}

func TestDecryptKeyPEM(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	enc := encryptPKCS8(t, der, "pw")
	out, err := decryptKeyPEM(enc, "pw")
	require.NoError(t, err)
	block, _ := pem.Decode(out)
	require.Equal(t, "PRIVATE KEY", block.Type)
	require.Equal(t, der, block.Bytes)

	_, err = decryptKeyPEM(enc, "wrong")
	require.ErrorContains(t, err, "wrong ssl.key.password")
	_, err = decryptKeyPEM(enc, "")
	require.ErrorContains(t, err, "set ssl.key.password")
	plain := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	_, err = decryptKeyPEM(plain, "pw")
	require.ErrorContains(t, err, "not encrypted")
	got, err := decryptKeyPEM(plain, "")
	require.NoError(t, err)
	require.Equal(t, plain, got)
}

// The client of a Connect REST API behind basic auth keeps a connection open for each call
// connectrest makes at once: its transport (wrapped by the credentials, which connectrest
// cannot size) kept net/http's default of 2, and 8 calls at once dialed a connection for most
// calls.
func TestConnectHTTPClientKeepsAConnectionPerCall(t *testing.T) {
	var mu sync.Mutex
	dialed := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"version":"4.3.1"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			dialed++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	cs, err := ParseConnectConfig([]byte("basic.auth.credentials.source=USER_INFO\nbasic.auth.user.info=admin:pw\n"))
	require.NoError(t, err)
	hc, _, err := ConnectHTTPClient(srv.URL, cs, 10*time.Second)
	require.NoError(t, err)
	c, err := connectrest.New(srv.URL, hc)
	require.NoError(t, err)
	const calls, callers = 400, 4 * connectrest.MaxCalls
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range calls / callers {
				_, err := c.Root(t.Context())
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.LessOrEqual(t, dialed, 2*connectrest.MaxCalls, "connections dialed for %d calls, %d at once", calls, connectrest.MaxCalls)
}
