package clientconfig

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Kafka client properties files (`--command-config` of Kafka's tools): what is read of them
// and what is refused. Every key is either used, accepted as harmless tuning (noted), or
// refused by name with what to do; none is silently ignored, since a setting the file's author
// relies on (a truststore, a mechanism) that is dropped would connect with other security
// than they wrote down.

// tuningKeys are client settings Kafka's tools accept that change only timing or naming: the
// agent and the CLI keep their own values, and a file that sets them is accepted with a note.
var tuningKeys = []string{
	"client.id", "client.dns.lookup", "connections.max.idle.ms", "default.api.timeout.ms",
	"metadata.max.age.ms", "reconnect.backoff.max.ms", "reconnect.backoff.ms", "request.timeout.ms",
	"retries", "retry.backoff.max.ms", "retry.backoff.ms", "socket.connection.setup.timeout.max.ms",
	"socket.connection.setup.timeout.ms",
}

// ReadCommandConfig reads a Kafka client properties file (see ParseCommandConfig). Errors
// name the file and the keys, never a value.
func ReadCommandConfig(path string) (Security, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Security{}, nil, fmt.Errorf("read client properties: %w", err)
	}
	s, notes, err := ParseCommandConfig(data)
	if err != nil {
		return Security{}, nil, fmt.Errorf("client properties %s: %w", path, err)
	}
	for i, n := range notes {
		notes[i] = fmt.Sprintf("client properties %s: %s", path, n)
	}
	return s, notes, nil
}

// ParseCommandConfig turns the text of a Kafka client properties file into Security: the keys
// security.protocol, sasl.mechanism, sasl.jaas.config (PlainLoginModule, ScramLoginModule),
// ssl.truststore.* and ssl.keystore.* of type PEM, ssl.key.password and
// ssl.endpoint.identification.algorithm, with Kafka's defaults (PLAINTEXT, GSSAPI, JKS, https).
// The notes list the tuning keys that were accepted without effect. Every refused key is
// reported at once, in file order, by name and without its value.
func ParseCommandConfig(data []byte) (Security, []string, error) {
	props, err := ParseProperties(data)
	if err != nil {
		return Security{}, nil, err
	}
	return ParseClientProperties(props)
}

// ParseClientProperties is ParseCommandConfig on properties already read: the security
// settings of a Kafka client given some other way (a connector's client overrides, their
// prefix removed), with the same rules, refusals and notes.
func ParseClientProperties(props []Property) (Security, []string, error) {
	m := configValues(props)
	var errs []error
	var notes []string
	var s Security

	protocol, useSASL, useTLS, err := securityProtocol(m)
	if err != nil {
		errs = append(errs, err)
	}
	s.TLSEnabled = useTLS
	errs, notes = checkKeys(props, protocol, useTLS, errs, notes)
	if useSASL {
		errs = s.setSASL(m, errs)
	} else if protocol != "" && isKnownProtocol(protocol) {
		errs = refuseSASLKeys(m, protocol, errs)
	}

	if useTLS {
		t, err := parseTLSProps(m)
		if err != nil {
			errs = append(errs, err)
		}
		s.TLSCAFile, s.TLSCAPEM = t.caFile, t.caPEM
		s.TLSCertFile, s.TLSKeyFile, s.TLSCertPEM, s.TLSKeyPEM = t.certFile, t.keyFile, t.certPEM, t.keyPEM
		s.TLSKeyPassword, s.TLSNoHostnameCheck = t.keyPassword, t.noHostnameCheck
	}
	if err := errors.Join(errs...); err != nil {
		return Security{}, nil, err
	}
	return s, notes, nil
}

// securityProtocol reads security.protocol (PLAINTEXT by default) and whether it uses SASL and
// TLS.
func securityProtocol(m map[string]string) (protocol string, useSASL, useTLS bool, err error) {
	protocol = "PLAINTEXT"
	if v, ok := m["security.protocol"]; ok {
		protocol = strings.ToUpper(v)
	}
	switch protocol {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useSASL, useTLS = true, true
	default:
		err = fmt.Errorf("security.protocol: %q, want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", m["security.protocol"])
	}
	return protocol, useSASL, useTLS, err
}

// checkKeys appends to errs every key, in file order, that is not read or does not apply under
// protocol, and to notes every tuning key accepted without effect.
func checkKeys(props []Property, protocol string, useTLS bool, errs []error, notes []string) ([]error, []string) {
	for _, k := range keysInOrder(props) {
		switch {
		case k == "security.protocol" || k == "sasl.mechanism" || k == "sasl.jaas.config":
		case strings.HasPrefix(k, "ssl."):
			if !useTLS && protocol != "" && isKnownProtocol(protocol) {
				errs = append(errs, fmt.Errorf("%s: set, but security.protocol is %s, under which Kafka does not use TLS: use SSL or SASL_SSL, or remove it", k, protocol))
			}
		case strings.HasPrefix(k, "sasl."):
			errs = append(errs, fmt.Errorf("%s: not supported (only sasl.mechanism and sasl.jaas.config with the Plain or Scram login module are): remove it", k))
		case slices.Contains(tuningKeys, k):
			notes = append(notes, fmt.Sprintf("%s: accepted, without effect (offsetagent keeps its own timeouts and client id)", k))
		default:
			errs = append(errs, fmt.Errorf("%s: not supported: offsetagent reads only the security settings (security.protocol, sasl.*, ssl.*) of a client properties file: remove it", k))
		}
	}
	return errs, notes
}

// setSASL sets the SASL mechanism and credentials of s from sasl.mechanism and
// sasl.jaas.config, appending to errs what is missing or refused.
func (s *Security) setSASL(m map[string]string, errs []error) []error {
	mech, ok := m["sasl.mechanism"]
	mech = strings.ToUpper(mech)
	switch {
	case !ok:
		errs = append(errs, errors.New("sasl.mechanism: not set, so Kafka's default GSSAPI (Kerberos) applies, which offsetagent does not support: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"))
	case mech == "PLAIN" || mech == "SCRAM-SHA-256" || mech == "SCRAM-SHA-512":
		s.SASLMechanism = mech
	default:
		errs = append(errs, fmt.Errorf("sasl.mechanism: %q not supported: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m["sasl.mechanism"]))
	}
	if jaas, ok := m["sasl.jaas.config"]; !ok {
		errs = append(errs, errors.New("sasl.jaas.config: not set: give the credentials inline, e.g. sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"...\"; (a JAAS file named by java.security.auth.login.config is not read)"))
	} else if user, pass, err := parseJAAS(jaas); err != nil {
		errs = append(errs, fmt.Errorf("sasl.jaas.config: %w", err))
	} else {
		s.SASLUsername, s.SASLPassword = user, pass
	}
	return errs
}

// refuseSASLKeys appends to errs the SASL keys set under a protocol without SASL.
func refuseSASLKeys(m map[string]string, protocol string, errs []error) []error {
	for _, k := range []string{"sasl.mechanism", "sasl.jaas.config"} {
		if _, ok := m[k]; ok {
			errs = append(errs, fmt.Errorf("%s: set, but security.protocol is %s, under which Kafka does not use SASL: use SASL_SSL or SASL_PLAINTEXT, or remove it", k, protocol))
		}
	}
	return errs
}

func isKnownProtocol(p string) bool {
	return p == "PLAINTEXT" || p == "SSL" || p == "SASL_PLAINTEXT" || p == "SASL_SSL"
}

// lastValues is the properties as java.util.Properties holds them: the last value of a key wins.
func lastValues(props []Property) map[string]string {
	m := make(map[string]string, len(props))
	for _, p := range props {
		m[p.Key] = p.Value
	}
	return m
}

// configValues is the properties as a Kafka client's configuration holds them: the last value
// of a key, trimmed as ConfigDef.parseType trims the value of every key it defines, whatever
// its type (STRING, PASSWORD, LIST, ...): with String.trim, which drops the characters up to
// U+0020 at both ends (blanks, control characters) and no other Unicode space (U+00A0 stays).
// A password written with trailing blanks is thus the password without them, for Kafka and
// for offsetagent alike. Every key the client properties reader takes is such a key.
func configValues(props []Property) map[string]string {
	m := lastValues(props)
	for k, v := range m {
		m[k] = javaTrim(v)
	}
	return m
}

// javaTrim is java.lang.String.trim: s without the characters up to U+0020 at both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// keysInOrder is the keys in the order of their first line, each once.
func keysInOrder(props []Property) []string {
	var out []string
	for _, p := range props {
		if !slices.Contains(out, p.Key) {
			out = append(out, p.Key)
		}
	}
	return out
}

// tlsProps is what the ssl.* keys of a properties file say.
type tlsProps struct {
	caFile, certFile, keyFile string
	caPEM, certPEM, keyPEM    []byte
	keyPassword               string
	noHostnameCheck           bool
}

// tlsKeys are the ssl.* keys parseTLSProps reads; others are refused by name.
var tlsKeys = []string{
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.password",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.keystore.password", "ssl.key.password", "ssl.endpoint.identification.algorithm",
}

// parseTLSProps reads the ssl.* keys with Kafka's rules (SslFactory, DefaultSslEngineFactory):
// stores of type PEM only (the default type is JKS), no store password with PEM, a truststore
// as a file or inline but not both, a keystore as one file (key and chain) or inline key and
// chain, ssl.endpoint.identification.algorithm https (the default) or empty.
func parseTLSProps(m map[string]string) (tlsProps, error) {
	var t tlsProps
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.HasPrefix(k, "ssl.") && !slices.Contains(tlsKeys, k) {
			errs = append(errs, fmt.Errorf("%s: not supported: offsetagent reads PEM stores (ssl.truststore.*, ssl.keystore.*), ssl.key.password and ssl.endpoint.identification.algorithm: remove it", k))
		}
	}
	errs = t.readTruststore(m, errs)
	errs = t.readKeystore(m, errs)
	errs = t.readHostnameCheck(m, errs)
	return t, errors.Join(errs...)
}

// hasProp says whether the key k is set.
func hasProp(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// storeTypeOf is the store type the key k names, in upper case.
func storeTypeOf(m map[string]string, k string) string { return strings.ToUpper(m[k]) }

// readTruststore reads the ssl.truststore.* keys into t, appending to errs what is refused.
func (t *tlsProps) readTruststore(m map[string]string, errs []error) []error {
	if hasProp(m, "ssl.truststore.location") || hasProp(m, "ssl.truststore.certificates") || hasProp(m, "ssl.truststore.type") {
		switch typ := storeTypeOf(m, "ssl.truststore.type"); {
		case !hasProp(m, "ssl.truststore.type"):
			errs = append(errs, errors.New("ssl.truststore.type: not set, so Kafka's default JKS applies, which offsetagent does not read: set ssl.truststore.type=PEM with a PEM file, or convert a JKS truststore: keytool -list -rfc -keystore truststore.jks > ca.pem"))
		case typ == "JKS" || typ == "PKCS12":
			errs = append(errs, fmt.Errorf("ssl.truststore.type: %s not supported: convert it to PEM and set ssl.truststore.type=PEM: %s", typ, convertTrust(typ)))
		case typ != "PEM":
			errs = append(errs, fmt.Errorf("ssl.truststore.type: %q not supported: want PEM", m["ssl.truststore.type"]))
		}
		switch {
		case hasProp(m, "ssl.truststore.location") && hasProp(m, "ssl.truststore.certificates"):
			errs = append(errs, errors.New("ssl.truststore.location and ssl.truststore.certificates: set one, not both"))
		case hasProp(m, "ssl.truststore.location"):
			t.caFile = m["ssl.truststore.location"]
		case hasProp(m, "ssl.truststore.certificates"):
			t.caPEM = []byte(m["ssl.truststore.certificates"])
		}
		if hasProp(m, "ssl.truststore.password") && storeTypeOf(m, "ssl.truststore.type") == "PEM" {
			errs = append(errs, errors.New("ssl.truststore.password: not used with a PEM truststore (Kafka refuses it too): remove it"))
		}
	} else if hasProp(m, "ssl.truststore.password") {
		errs = append(errs, errors.New("ssl.truststore.password: set without a truststore: remove it"))
	}
	return errs
}

// readKeystore reads the ssl.keystore.* keys and ssl.key.password into t, appending to errs
// what is refused.
func (t *tlsProps) readKeystore(m map[string]string, errs []error) []error {
	if hasProp(m, "ssl.keystore.location") || hasProp(m, "ssl.keystore.certificate.chain") || hasProp(m, "ssl.keystore.key") || hasProp(m, "ssl.keystore.type") {
		switch typ := storeTypeOf(m, "ssl.keystore.type"); {
		case !hasProp(m, "ssl.keystore.type"):
			errs = append(errs, errors.New("ssl.keystore.type: not set, so Kafka's default JKS applies, which offsetagent does not read: set ssl.keystore.type=PEM with a PEM file holding the key and the certificate chain"))
		case typ == "JKS" || typ == "PKCS12":
			errs = append(errs, fmt.Errorf("ssl.keystore.type: %s not supported: convert it to PEM and set ssl.keystore.type=PEM: %s", typ, convertKey(typ)))
		case typ != "PEM":
			errs = append(errs, fmt.Errorf("ssl.keystore.type: %q not supported: want PEM", m["ssl.keystore.type"]))
		}
		inline := hasProp(m, "ssl.keystore.certificate.chain") || hasProp(m, "ssl.keystore.key")
		switch {
		case hasProp(m, "ssl.keystore.location") && inline:
			errs = append(errs, errors.New("ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key: set the file or the inline pair, not both"))
		case hasProp(m, "ssl.keystore.location"):
			f := m["ssl.keystore.location"]
			t.certFile, t.keyFile = f, f
		case hasProp(m, "ssl.keystore.certificate.chain") != hasProp(m, "ssl.keystore.key"):
			errs = append(errs, errors.New("ssl.keystore.certificate.chain and ssl.keystore.key: set both or neither"))
		case inline:
			t.certPEM, t.keyPEM = []byte(m["ssl.keystore.certificate.chain"]), []byte(m["ssl.keystore.key"])
		}
		if hasProp(m, "ssl.keystore.password") && storeTypeOf(m, "ssl.keystore.type") == "PEM" {
			errs = append(errs, errors.New("ssl.keystore.password: not used with a PEM keystore (Kafka refuses it too; an encrypted key's password is ssl.key.password): remove it"))
		}
		t.keyPassword = m["ssl.key.password"]
	} else {
		for _, k := range []string{"ssl.keystore.password", "ssl.key.password"} {
			if hasProp(m, k) {
				errs = append(errs, fmt.Errorf("%s: set without a keystore: remove it", k))
			}
		}
	}
	return errs
}

// readHostnameCheck reads ssl.endpoint.identification.algorithm into t, appending to errs a
// value that is refused.
func (t *tlsProps) readHostnameCheck(m map[string]string, errs []error) []error {
	if v, ok := m["ssl.endpoint.identification.algorithm"]; ok {
		switch strings.ToLower(v) {
		case "https":
		case "":
			t.noHostnameCheck = true
		default:
			errs = append(errs, fmt.Errorf("ssl.endpoint.identification.algorithm: %q not supported: want https (the default: the broker's certificate must name the host) or empty (no hostname check)", v))
		}
	}
	return errs
}

func convertTrust(typ string) string {
	if typ == "PKCS12" {
		return "openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem"
	}
	return "keytool -list -rfc -keystore truststore.jks > ca.pem"
}

func convertKey(typ string) string {
	if typ == "PKCS12" {
		return "openssl pkcs12 -in keystore.p12 -nodes -out keystore.pem (then chmod 600 keystore.pem)"
	}
	return "keytool -importkeystore -srckeystore keystore.jks -destkeystore keystore.p12 -deststoretype PKCS12, then openssl pkcs12 -in keystore.p12 -nodes -out keystore.pem (then chmod 600 keystore.pem)"
}
