package clientconfig

import (
	"crypto/x509"
	"encoding/pem"
	"os"
)

// Principal describes the principal a broker authenticates these settings as, the way
// Kafka's default principal builder names it and kafka-acls.sh takes it in --allow-principal:
// User:<name> for SASL (PLAIN and SCRAM authenticate the user name), User:<subject DN> for a
// TLS client certificate without SASL (the DN in RFC 2253 order, as Java's
// X500Principal.getName() writes it: CN=agent,OU=ops,O=Example), User:ANONYMOUS otherwise.
// A broker with ssl.principal.mapping.rules or a custom principal builder may name the
// certificate otherwise; the description is for messages and never dials.
func (s Security) Principal() string {
	if s.SASLMechanism != "" {
		return "User:" + s.SASLUsername
	}
	if s.TLSEnabled && (s.TLSCertFile != "" || s.TLSCertPEM != nil) {
		data := normalizePEM(s.TLSCertPEM)
		if s.TLSCertFile != "" {
			data, _ = os.ReadFile(s.TLSCertFile)
		}
		if dn := certSubject(data); dn != "" {
			return "User:" + dn
		}
	}
	return "User:ANONYMOUS"
}

// certSubject returns the subject DN of the first certificate in the PEM data (a file's, or
// inline from a client properties file), or "" when there is none (NewConnections reports
// that).
func certSubject(data []byte) string {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return ""
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return ""
		}
		return cert.Subject.ToRDNSequence().String()
	}
}
