package clientconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
)

// Security holds the credentials and TLS settings for the brokers.
type Security struct {
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty disables SASL.
	SASLMechanism string `env:"OFFSETAGENT_SASL_MECHANISM"`
	// SASLUsername and SASLPassword are the SASL credentials.
	SASLUsername string `env:"OFFSETAGENT_SASL_USERNAME"`
	SASLPassword string `env:"OFFSETAGENT_SASL_PASSWORD"`
	// TLSEnabled turns on TLS; TLSCAFile, TLSCertFile and TLSKeyFile are PEM files (optional).
	TLSEnabled  bool   `env:"OFFSETAGENT_TLS_ENABLED, default=false"`
	TLSCAFile   string `env:"OFFSETAGENT_TLS_CA_FILE"`
	TLSCertFile string `env:"OFFSETAGENT_TLS_CERT_FILE"`
	TLSKeyFile  string `env:"OFFSETAGENT_TLS_KEY_FILE"`

	// The fields below come only from a Kafka client properties file (OFFSETAGENT_COMMAND_CONFIG,
	// --from-command-config, --to-command-config; see ParseCommandConfig).

	// TLSCAPEM, TLSCertPEM and TLSKeyPEM are PEM given inline (ssl.truststore.certificates,
	// ssl.keystore.certificate.chain, ssl.keystore.key), used where the matching file is not set.
	TLSCAPEM, TLSCertPEM, TLSKeyPEM []byte
	// TLSKeyPassword decrypts an encrypted PKCS#8 private key (ssl.key.password).
	TLSKeyPassword string
	// TLSNoHostnameCheck verifies the broker's certificate chain but not that it names the host
	// (ssl.endpoint.identification.algorithm set empty).
	TLSNoHostnameCheck bool
}

// FromVariables reports whether any field that an OFFSETAGENT_SASL_* or OFFSETAGENT_TLS_*
// variable fills is set: for a Security read from the environment, whether one was given.
func (s Security) FromVariables() bool {
	return s.SASLMechanism != "" || s.SASLUsername != "" || s.SASLPassword != "" || s.TLSEnabled ||
		s.TLSCAFile != "" || s.TLSCertFile != "" || s.TLSKeyFile != ""
}

// Connections are the kafka-go transport (clients and writers) and dialer (readers and the
// consumer group) that carry one set of SASL and TLS settings.
type Connections struct {
	Transport *kafka.Transport
	Dialer    *kafka.Dialer
}

func newTransport(mech sasl.Mechanism, tlsCfg *tls.Config) *kafka.Transport {
	return &kafka.Transport{SASL: mech, TLS: tlsCfg, DialTimeout: 10 * time.Second, ClientID: "offsetagent", MetadataTTL: time.Second}
}

// Separate returns a transport with the same settings and connections of its own: a fetch
// loop's long polls then never queue other requests behind them on one connection (nor
// answers to them, with brokers that answer out of order).
func (c *Connections) Separate() *kafka.Transport {
	return newTransport(c.Transport.SASL, c.Transport.TLS)
}

// NewConnections builds the transport and dialer for s. It reads the TLS files but never dials.
func NewConnections(s Security) (*Connections, error) {
	mech, err := saslMechanism(s)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := tlsConfig(s)
	if err != nil {
		return nil, err
	}
	return &Connections{
		// Metadata refreshes every second: topics created just before a request (a sink's
		// topic, a connector's own offsets topic) are seen quickly.
		Transport: newTransport(mech, tlsCfg),
		Dialer: &kafka.Dialer{
			SASLMechanism: mech, TLS: tlsCfg, Timeout: 10 * time.Second, DualStack: true, ClientID: "offsetagent",
		},
	}, nil
}

func saslMechanism(s Security) (sasl.Mechanism, error) {
	switch s.SASLMechanism {
	case "":
		return nil, nil
	case "PLAIN":
		return plain.Mechanism{Username: s.SASLUsername, Password: s.SASLPassword}, nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		return newSCRAM(s.SASLMechanism, s.SASLUsername, s.SASLPassword)
	}
	return nil, fmt.Errorf("unknown SASL mechanism %q", s.SASLMechanism)
}

func tlsConfig(s Security) (*tls.Config, error) {
	if !s.TLSEnabled {
		return nil, nil
	}
	return buildTLS(s)
}

// buildTLS is the client TLS configuration of s's TLS fields: the CA from a file or inline
// PEM (none: the system's roots), the client certificate from files or inline PEM, its key
// decrypted with TLSKeyPassword when encrypted, and the hostname check unless
// TLSNoHostnameCheck. Errors name the setting, never a key or password.
func buildTLS(s Security) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	caPEM, caWhat := s.TLSCAPEM, "inline truststore certificates"
	if s.TLSCAFile != "" {
		b, err := os.ReadFile(s.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("read TLS CA file: %w", err)
		}
		caPEM, caWhat = b, fmt.Sprintf("TLS CA file %q", s.TLSCAFile)
	}
	if caPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(normalizePEM(caPEM)) {
			return nil, fmt.Errorf("read %s: no PEM certificate found", caWhat)
		}
		cfg.RootCAs = pool
	}
	certPEM, keyPEM := s.TLSCertPEM, s.TLSKeyPEM
	if s.TLSCertFile != "" {
		var err error
		if certPEM, err = os.ReadFile(s.TLSCertFile); err != nil {
			return nil, fmt.Errorf("load TLS client certificate: %w", err)
		}
		if keyPEM, err = os.ReadFile(s.TLSKeyFile); err != nil {
			return nil, fmt.Errorf("load TLS client key: %w", err)
		}
	}
	if certPEM != nil || keyPEM != nil {
		keyPEM, err := decryptKeyPEM(normalizePEM(keyPEM), s.TLSKeyPassword)
		if err != nil {
			return nil, fmt.Errorf("load TLS client key: %w", err)
		}
		cert, err := tls.X509KeyPair(normalizePEM(certPEM), keyPEM)
		if err != nil {
			return nil, fmt.Errorf("load TLS client certificate: %w", err)
		}
		what := "the inline TLS client certificate"
		if s.TLSCertFile != "" {
			what = fmt.Sprintf("TLS client certificate %q", s.TLSCertFile)
		}
		cfg.GetClientCertificate, err = clientCertificate(cert, what, time.Now)
		if err != nil {
			return nil, fmt.Errorf("load TLS client certificate: %w", err)
		}
	}
	if s.TLSNoHostnameCheck {
		// Verify the chain as usual, only without a name to match
		// (ssl.endpoint.identification.algorithm empty).
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}

// pemBlock matches one PEM block whose lines may have been joined: Kafka's inline PEM values
// (ssl.truststore.certificates, ssl.keystore.key, ...) are commonly written on one logical
// line of a properties file, continued with backslashes, which drops the line breaks. Kafka
// reads them with a pattern that allows any whitespace and decodes the base64 ignoring it;
// normalizePEM restores the line breaks encoding/pem needs.
var pemBlock = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----([\sA-Za-z0-9+/=:,-]*?)-----END ([A-Z0-9 ]+)-----`)

// normalizePEM rewrites every PEM block of b with its base64 on lines of its own. Headers
// (Proc-Type, DEK-Info: legacy encrypted keys) are not supported on one line; a block with
// them is left as it is.
func normalizePEM(b []byte) []byte {
	return pemBlock.ReplaceAllFunc(b, func(m []byte) []byte {
		sub := pemBlock.FindSubmatch(m)
		if string(sub[1]) != string(sub[3]) || bytes.Contains(sub[2], []byte(":")) {
			return m
		}
		body := bytes.Join(bytes.Fields(sub[2]), nil)
		var out bytes.Buffer
		out.WriteString("-----BEGIN " + string(sub[1]) + "-----\n")
		for len(body) > 64 {
			out.Write(body[:64])
			out.WriteByte('\n')
			body = body[64:]
		}
		if len(body) > 0 {
			out.Write(body)
			out.WriteByte('\n')
		}
		out.WriteString("-----END " + string(sub[3]) + "-----\n")
		return out.Bytes()
	})
}

// clientCertificate answers a server's request for the client certificate with cert, or,
// when cert is not valid now (expired, or not yet valid), with an error that says so: a Java
// broker refuses such a certificate with a bare "unknown certificate" alert, which does not
// tell the agent's operator what to renew. A server that does not ask for a certificate is
// not affected.
func clientCertificate(cert tls.Certificate, what string, now func() time.Time) (func(*tls.CertificateRequestInfo) (*tls.Certificate, error), error) {
	if len(cert.Certificate) == 0 {
		return nil, errors.New("no certificate")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, err
	}
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		switch t := now(); {
		case t.After(leaf.NotAfter):
			return nil, fmt.Errorf("%s (subject %s) expired at %s: the server asks for a client certificate and would refuse it; renew it",
				what, leaf.Subject, leaf.NotAfter.UTC().Format(time.RFC3339))
		case t.Before(leaf.NotBefore):
			return nil, fmt.Errorf("%s (subject %s) is not valid before %s: the server asks for a client certificate and would refuse it",
				what, leaf.Subject, leaf.NotBefore.UTC().Format(time.RFC3339))
		}
		return &cert, nil
	}, nil
}
