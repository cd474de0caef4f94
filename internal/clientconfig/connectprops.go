package clientconfig

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/internal/connectrest"
)

// ConnectSecurity is how a client authenticates to a Connect REST API and checks its
// certificate: basic auth and TLS, from a properties file with the Schema Registry client's
// keys (ParseConnectConfig) and the environment (WithUserInfo).
type ConnectSecurity struct {
	// Username and Password are the basic auth credentials, sent when BasicAuth is set.
	Username, Password string
	BasicAuth          bool
	// TLS holds the TLS settings in its TLS* fields (TLSEnabled is set when any was given).
	TLS Security
}

// ReadConnectConfig reads a Connect REST client properties file (see ParseConnectConfig).
func ReadConnectConfig(path string) (ConnectSecurity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ConnectSecurity{}, fmt.Errorf("read Connect REST properties: %w", err)
	}
	c, err := ParseConnectConfig(data)
	if err != nil {
		return ConnectSecurity{}, fmt.Errorf("connect REST properties %s: %w", path, err)
	}
	return c, nil
}

// ParseConnectConfig reads a properties file of Connect REST client settings, in the keys of
// the Schema Registry client: basic.auth.credentials.source (USER_INFO, or URL for the URL's
// userinfo), basic.auth.user.info (user:password), and the ssl.* keys of a Kafka client
// properties file (PEM stores, ssl.key.password, ssl.endpoint.identification.algorithm). Other
// keys are refused by name; no error quotes a value.
func ParseConnectConfig(data []byte) (ConnectSecurity, error) {
	props, err := ParseProperties(data)
	if err != nil {
		return ConnectSecurity{}, err
	}
	// Every value trimmed as Kafka's ConfigDef trims a STRING or PASSWORD one (the Schema
	// Registry client's basic.auth.* keys are such, as Kafka's ssl.* keys are).
	m := configValues(props)
	var c ConnectSecurity
	var errs []error
	tlsGiven := false
	for _, k := range keysInOrder(props) {
		switch {
		case k == "basic.auth.credentials.source" || k == "basic.auth.user.info":
		case strings.HasPrefix(k, "ssl."):
			tlsGiven = true
		default:
			errs = append(errs, fmt.Errorf("%s: not supported: a Connect REST properties file holds basic.auth.credentials.source, basic.auth.user.info and ssl.* keys: remove it", k))
		}
	}
	source, hasSource := m["basic.auth.credentials.source"]
	source = strings.ToUpper(source)
	info, hasInfo := m["basic.auth.user.info"]
	switch {
	case !hasSource && !hasInfo:
	case source == "URL":
		if hasInfo {
			errs = append(errs, errors.New("basic.auth.user.info: set, but basic.auth.credentials.source is URL (the credentials come from the URL's userinfo): remove one"))
		}
	case source == "USER_INFO" || !hasSource:
		if !hasInfo {
			errs = append(errs, errors.New("basic.auth.user.info: not set, but basic.auth.credentials.source is USER_INFO: give user:password"))
		} else if u, p, err := splitUserInfo(info); err != nil {
			errs = append(errs, fmt.Errorf("basic.auth.user.info: %w", err))
		} else {
			c.Username, c.Password, c.BasicAuth = u, p, true
		}
	default:
		errs = append(errs, fmt.Errorf("basic.auth.credentials.source: %q not supported: want USER_INFO (or URL)", m["basic.auth.credentials.source"]))
	}
	if tlsGiven {
		// The ssl.* keys are Kafka's (SslConfigs).
		t, err := parseTLSProps(m)
		if err != nil {
			errs = append(errs, err)
		}
		c.TLS = Security{TLSEnabled: true, TLSCAFile: t.caFile, TLSCAPEM: t.caPEM, TLSCertFile: t.certFile, TLSKeyFile: t.keyFile,
			TLSCertPEM: t.certPEM, TLSKeyPEM: t.keyPEM, TLSKeyPassword: t.keyPassword, TLSNoHostnameCheck: t.noHostnameCheck}
	}
	if err := errors.Join(errs...); err != nil {
		return ConnectSecurity{}, err
	}
	return c, nil
}

// splitUserInfo splits user:password at the first colon. Errors do not quote it.
func splitUserInfo(s string) (string, string, error) {
	u, p, ok := strings.Cut(s, ":")
	if !ok || u == "" {
		return "", "", errors.New("want user:password")
	}
	return u, p, nil
}

// WithUserInfo returns c with basic auth from userInfo (user:password, from the variable
// named by source) when it is not empty. Credentials given both ways are refused.
func (c ConnectSecurity) WithUserInfo(userInfo, source string) (ConnectSecurity, error) {
	if userInfo == "" {
		return c, nil
	}
	if c.BasicAuth {
		return c, fmt.Errorf("%s: set, and the Connect REST properties file has basic.auth.user.info too: give the credentials one way", source)
	}
	u, p, err := splitUserInfo(userInfo)
	if err != nil {
		return c, fmt.Errorf("%s: %w", source, err)
	}
	c.Username, c.Password, c.BasicAuth = u, p, true
	return c, nil
}

// ConnectHTTPClient builds the HTTP client for the Connect REST API at baseURL with c's
// settings and a timeout per call. passwordInURL reports that baseURL itself carries a
// password (its userinfo): it still works, but the caller should warn where it is visible.
// Credentials both in the URL and in c are refused, as are TLS settings for an http URL.
func ConnectHTTPClient(baseURL string, c ConnectSecurity, timeout time.Duration) (hc *http.Client, passwordInURL bool, err error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, false, errors.New("parse Connect URL: malformed URL")
	}
	if u.User != nil {
		_, passwordInURL = u.User.Password()
		if c.BasicAuth {
			return nil, passwordInURL, fmt.Errorf("connect URL %s carries credentials, and basic auth is configured too: give them one way", u.Redacted())
		}
	}
	if c.TLS.TLSEnabled && u.Scheme != "https" {
		return nil, passwordInURL, fmt.Errorf("connect URL %s: TLS settings (ssl.*) given for a URL that is not https", u.Redacted())
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = connectrest.MaxCalls // a connection kept for each call at once
	if c.TLS.TLSEnabled {
		if tr.TLSClientConfig, err = buildTLS(c.TLS); err != nil {
			return nil, passwordInURL, fmt.Errorf("connect REST TLS: %w", err)
		}
	}
	var rt http.RoundTripper = tr
	if c.BasicAuth {
		rt = &basicAuth{user: c.Username, password: c.Password, origin: connectrest.Origin(u), next: tr}
	}
	return &http.Client{Timeout: timeout, Transport: rt}, passwordInURL, nil
}

// basicAuth sets the Authorization header of every request to origin (the Connect URL's
// scheme, host and port) that does not carry one; requests elsewhere (a redirect's target)
// go without it.
type basicAuth struct {
	user, password, origin string
	next                   http.RoundTripper
}

func (b *basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" || connectrest.Origin(r.URL) != b.origin {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.password)
	return b.next.RoundTrip(r)
}
