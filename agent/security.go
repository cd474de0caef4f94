package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

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
	case "SCRAM-SHA-256":
		m, err := scram.Mechanism(scram.SHA256, s.SASLUsername, s.SASLPassword)
		if err != nil {
			return nil, fmt.Errorf("configure SASL SCRAM-SHA-256: %w", err)
		}
		return m, nil
	case "SCRAM-SHA-512":
		m, err := scram.Mechanism(scram.SHA512, s.SASLUsername, s.SASLPassword)
		if err != nil {
			return nil, fmt.Errorf("configure SASL SCRAM-SHA-512: %w", err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown SASL mechanism %q", s.SASLMechanism)
}

func tlsConfig(s Security) (*tls.Config, error) {
	if !s.TLSEnabled {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.TLSCAFile != "" {
		pem, err := os.ReadFile(s.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("read TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("read TLS CA file %q: no PEM certificate found", s.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	if s.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.TLSCertFile, s.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("load TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
