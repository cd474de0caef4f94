package secured_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// testCA is a certificate authority the test generates: every certificate of one cluster is
// issued by its CA, and the other cluster's clients do not trust it.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA certificate as a PEM file, the trust store of the cluster's clients.
	File string
	dir  string
}

func newCA(dir, name string) (*testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &testCA{cert: cert, key: key, File: filepath.Join(dir, "ca.pem"), dir: dir}
	return ca, os.WriteFile(ca.File, pemBlock("CERTIFICATE", der), 0o644)
}

// issued is a certificate and its key, as PEM files and as a tls.Certificate.
type issued struct {
	// CertFile and KeyFile are the PEM certificate and its PKCS#8 key; Both holds the key and the
	// certificate in one file, Kafka's PEM keystore.
	CertFile, KeyFile, Both string
	TLS                     tls.Certificate
}

// issue returns a certificate for the subject CN=cn, valid for the IP address 127.0.0.1 only
// (so that localhost is a wrong host name), for servers and clients.
func (ca *testCA) issue(cn string, serial int64) (issued, error) {
	return ca.issueValid(cn, serial, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// issueValid is issue with the certificate valid from notBefore to notAfter (both in the past
// for an expired one).
func (ca *testCA) issueValid(cn string, serial int64, notBefore, notAfter time.Time) (issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return issued{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return issued{}, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return issued{}, err
	}
	certPEM, keyPEM := pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", pk)
	out := issued{
		CertFile: filepath.Join(ca.dir, cn+".crt"),
		KeyFile:  filepath.Join(ca.dir, cn+".key"),
		Both:     filepath.Join(ca.dir, cn+".pem"),
	}
	for path, b := range map[string][]byte{out.CertFile: certPEM, out.KeyFile: keyPEM, out.Both: append(append([]byte{}, keyPEM...), certPEM...)} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return issued{}, err
		}
	}
	if out.TLS, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return issued{}, fmt.Errorf("load the %s key pair: %w", cn, err)
	}
	return out, nil
}

// pool is a cert pool holding only the CA.
func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
