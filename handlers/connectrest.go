package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// maxConnectBody bounds a Connect REST response. A validate response of a large plugin (every
// ConfigDef key with its documentation) is a few hundred KiB; this leaves ample room.
const maxConnectBody = 16 << 20

// ConnectClient is a ConfigValidator that asks a Kafka Connect cluster's REST API
// (docs/connect-internals.md, "Validating a new connector").
// It is safe for concurrent use. Credentials for a Connect cluster behind basic auth go in the
// base URL's userinfo (net/http sends them and strips them from its error messages) or in the
// http.Client's transport; either way they go to the base URL's host only (NewConnectClient).
type ConnectClient struct {
	base string // scheme://[userinfo@]host[/path], no trailing slash
	hc   *http.Client
	// calls holds a slot per call in progress: a worker's REST API is not sized for the
	// agent's concurrency, so at most connectMaxCalls calls run at once.
	calls chan struct{}
}

// connectMaxCalls bounds the Connect REST calls one agent makes at once.
const connectMaxCalls = 8

// NewConnectClient returns a client for the Connect REST API at baseURL (e.g.
// http://connect:8083). hc bounds each call with its Timeout; nil means a client with a 30 s
// timeout.
func NewConnectClient(baseURL string, hc *http.Client) (*ConnectClient, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("parse Connect URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("parse Connect URL %q: want http(s)://host[:port][/path]", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("parse Connect URL %q: a query or fragment is not allowed", u.Redacted())
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	// Connect's REST API does not redirect. A redirect to another host is refused, so that the
	// credentials of the configured one never reach it: net/http forwards an Authorization
	// header to the same host name on any port, and a transport that adds the header (basic
	// auth from a properties file) adds it to every request it carries.
	own := *hc
	own.CheckRedirect = sameOriginOnly(u, hc.CheckRedirect)
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), ""
	return &ConnectClient{base: u.String(), hc: &own, calls: make(chan struct{}, connectMaxCalls)}, nil
}

// sameOriginOnly is a redirect policy that refuses a redirect to another origin than base's
// (scheme, host and port) and leaves the others to next (net/http's default when nil).
func sameOriginOnly(base *url.URL, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	want := Origin(base)
	return func(req *http.Request, via []*http.Request) error {
		if got := Origin(req.URL); got != want {
			return fmt.Errorf("not following a redirect to %s, another host than the Connect URL's %s (whose credentials go to it only)", got, want)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// Origin is u's scheme, host and port (the scheme's default when u names none), lowercase:
// where credentials for u may be sent.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Exists reports whether the cluster has the connector: GET /connectors/{name} answers 200 for
// a connector it knows and 404 for one it does not.
func (c *ConnectClient) Exists(ctx context.Context, name string) (bool, error) {
	status, err := c.do(ctx, http.MethodGet, "/connectors/"+url.PathEscape(name), nil, nil, http.StatusNotFound)
	if err != nil {
		return false, err
	}
	return status == http.StatusOK, nil
}

// Validate runs PUT /connector-plugins/{class}/config/validate with config as the body. A
// response with errors is a *Failure (400) with the text Connect's POST /connectors would give
// (AbstractHerder.maybeAddConfigErrors); an exception of the validation (an unknown class) is a
// *Failure with the status and text POST would give (postAnswer). The validate response carries no connector type
// (ConfigInfos has only name, error_count, groups and configs), so the type comes from GET
// /connector-plugins: "source" or "sink", or "unknown" when the class is not listed.
func (c *ConnectClient) Validate(ctx context.Context, class string, config map[string]string) (string, error) {
	body, err := json.Marshal(config)
	if err != nil {
		return "", fmt.Errorf("encode config of %q: %w", class, err)
	}
	var infos configInfos
	path := "/connector-plugins/" + url.PathEscape(class) + "/config/validate"
	if _, err := c.do(ctx, http.MethodPut, path, body, &infos); err != nil {
		return "", postAnswer(err)
	}
	if infos.ErrorCount > 0 {
		return "", &Failure{Code: http.StatusBadRequest, Message: infos.message(), Reason: kafkaio.ReasonPermanent}
	}
	return c.pluginType(ctx, class)
}

// postAnswer turns the validate endpoint's answer to an exception of the config's validation
// into the answer POST /connectors gives for the same config. Both run
// AbstractHerder.validateConnectorConfig and wait for it on a callback, but they answer its
// exception differently: POST answers the exception itself (HerderRequestHandler unwraps it),
// with its status (ConnectExceptionMapper: BadRequestException 400, as for an unknown
// connector.class, NotFoundException 404, AlreadyExistsException 409, any other 500) and its
// message; the validate endpoint answers 500 with the ExecutionException that wraps it, whose
// message is the exception's toString, "<class>: <message>" (docs/connect-internals.md, "Validating a new connector").
// Other errors are returned as they are.
func postAnswer(err error) error {
	var f *Failure
	if !errors.As(err, &f) || f.Code != http.StatusInternalServerError {
		return err
	}
	class, message, ok := strings.Cut(f.Message, ": ")
	if !ok || !javaThrowable(class) {
		return err
	}
	out := *f
	out.Message = message
	switch class {
	case "org.apache.kafka.connect.runtime.rest.errors.BadRequestException":
		out.Code = http.StatusBadRequest
	case "org.apache.kafka.connect.errors.NotFoundException":
		out.Code = http.StatusNotFound
	case "org.apache.kafka.connect.errors.AlreadyExistsException":
		out.Code = http.StatusConflict
	}
	return &out
}

// javaThrowable reports whether s reads as the full name of a Java exception or error class
// (a dotted name whose last part ends in "Exception" or "Error"), as Throwable.toString starts.
func javaThrowable(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for i, r := range p {
			if !(r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
				return false
			}
		}
	}
	last := parts[len(parts)-1]
	return strings.HasSuffix(last, "Exception") || strings.HasSuffix(last, "Error")
}

// pluginType looks class up in GET /connector-plugins?connectorsOnly=true by full name, simple
// name or simple name without "Connector", the names Connect resolves connector.class by.
// Connect versions before 3.2 ignore connectorsOnly and list only connectors anyway.
func (c *ConnectClient) pluginType(ctx context.Context, class string) (string, error) {
	var plugins []pluginInfo
	if _, err := c.do(ctx, http.MethodGet, "/connector-plugins?connectorsOnly=true", nil, &plugins); err != nil {
		return "", err
	}
	typ, matches := "unknown", 0
	for _, p := range plugins {
		if p.Class == class {
			return p.Type, nil
		}
		simple := p.Class[strings.LastIndexByte(p.Class, '.')+1:]
		if pruned, _ := strings.CutSuffix(simple, "Connector"); class == simple || (pruned != "" && class == pruned) {
			typ = p.Type
			matches++
		}
	}
	if matches != 1 {
		// Not installed, or an alias two plugins share: Connect refuses such an alias too.
		return "unknown", nil
	}
	return typ, nil
}

// Call sends one request to the Connect REST API at path (e.g. "/connectors?expand=info") and
// decodes a 2xx answer into out (when not nil); a status listed in also is returned without
// error and without decoding. It shares the client's bound on calls in progress. Connect's own
// error answers are a *Failure with its status and text.
func (c *ConnectClient) Call(ctx context.Context, method, path string, body []byte, out any, also ...int) (int, error) {
	return c.do(ctx, method, path, body, out, also...)
}

// do sends one request and decodes a 2xx answer into out (when not nil). A status listed in
// also is returned without error and without decoding. Any other answer is an error from
// responseError; a transport error is returned as net/http reports it (a *url.Error wrapping
// the network error, which Classify calls transient).
func (c *ConnectClient) do(ctx context.Context, method, path string, body []byte, out any, also ...int) (int, error) {
	select {
	case c.calls <- struct{}{}:
		defer func() { <-c.calls }()
	case <-ctx.Done():
		return 0, fmt.Errorf("wait to call Connect %s %s: %w", method, path, ctx.Err())
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("build Connect request %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxConnectBody))
	if err != nil {
		return 0, fmt.Errorf("read Connect response to %s %s: %w", method, path, err)
	}
	for _, s := range also {
		if resp.StatusCode == s {
			return s, nil
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, responseError(method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode Connect response to %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// connectError is Connect's error body (ErrorMessage).
type connectError struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// Connect's texts for answers that say "try again" (docs/connect-internals.md, "Status codes"): its request timeout, the
// 409s of a worker that cannot forward to the leader during a rebalance, and the answer of a
// worker that has just read a new connector config and is about to rebalance (a 500 from
// Apache Kafka 4.3's DistributedHerder; it follows every create on a busy cluster).
var connectRetryable = []string{
	"Request timed out",
	"Cannot complete request momentarily",
	"Cannot complete request because of a conflicting operation",
	"Request cannot be completed because a rebalance is expected",
}

// responseError turns a non-2xx answer into an error. Connect's own errors become a *Failure
// with its status and text, except the ones connectRetryable lists. Answers without Connect's
// error body come from something in front of it (a proxy or load balancer): a 5xx, 408 or 429
// there is transient, anything else permanent.
func responseError(method, path string, status int, body []byte) error {
	var ce connectError
	if err := json.Unmarshal(body, &ce); err == nil && ce.Message != "" {
		for _, prefix := range connectRetryable {
			if strings.HasPrefix(ce.Message, prefix) {
				return &unavailableError{op: method + " " + path, status: status, text: ce.Message}
			}
		}
		code := ce.ErrorCode
		if code == 0 {
			code = status
		}
		return &Failure{Code: code, Message: ce.Message, Reason: kafkaio.ReasonPermanent}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	if status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests {
		return &unavailableError{op: method + " " + path, status: status, text: text}
	}
	return fmt.Errorf("connect REST API answered %s %s with %d: %s", method, path, status, text)
}

// unavailableError is an answer that says the Connect cluster cannot serve the request right
// now. Classify knows transient errors only by their Go types; this one is a net.Error whose
// Timeout is true, so it is retried with reason "timeout".
type unavailableError struct {
	op     string
	status int
	text   string
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("connect REST API unavailable: %s answered %d: %s", e.op, e.status, e.text)
}

// Timeout reports true so that Classify retries the call.
func (e *unavailableError) Timeout() bool { return true }

// Temporary reports true (net.Error still requires it).
func (e *unavailableError) Temporary() bool { return true }

// configInfos is Connect's ConfigInfos entity, the validate response.
type configInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []configInfo `json:"configs"`
}

// configInfo is one ConfigInfo: the key's definition and its validated value. Only the value's
// errors are used; the definition is kept opaque.
type configInfo struct {
	Definition json.RawMessage `json:"definition"`
	Value      struct {
		Name   string   `json:"name"`
		Errors []string `json:"errors"`
	} `json:"value"`
}

// message is the text POST /connectors answers a config with errors with: the count, every
// error in response order, and the pointer to the validate endpoint
// (AbstractHerder.maybeAddConfigErrors).
func (ci *configInfos) message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", ci.ErrorCount)
	for _, c := range ci.Configs {
		for _, e := range c.Value.Errors {
			b.WriteString("\n")
			b.WriteString(e)
		}
	}
	b.WriteString("\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
	return b.String()
}

// pluginInfo is one entry of GET /connector-plugins (PluginInfo).
type pluginInfo struct {
	Class   string `json:"class"`
	Type    string `json:"type"`
	Version string `json:"version"`
}

var _ ConfigValidator = (*ConnectClient)(nil)
