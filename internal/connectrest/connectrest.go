// Package connectrest is the client of a Kafka Connect cluster's REST API, for every part of
// offsetagent that asks one: the agent (a config validated as POST /connectors would, and
// whether a connector exists: handlers' ConfigValidator, built over this client), and migrate
// (a cluster's connectors, their configs, states and offsets read from A's or B's workers, a
// connector stopped, B's plugins and validation, MirrorMaker 2's connectors' status).
//
// It owns how a call is made, not what an answer means to its caller:
//
//   - where the API is: New takes the base URL (a path prefix allowed, a query or fragment
//     not), and Redact hides its password wherever a URL is shown;
//   - where credentials may go: a redirect to another origin (scheme, host and port: Origin)
//     is refused, so that basic auth given for the configured worker never reaches another
//     host (clientconfig's transport adds its header for that origin only, by the same
//     Origin);
//   - how much a worker is asked at once: at most connectMaxCalls calls of one Client run
//     side by side, since a worker's REST API is not sized for an agent's concurrency, each
//     on a connection kept open for the next (keepAlive);
//   - what an answer is: a 2xx decoded into the call's typed result; Connect's own error body
//     (ErrorMessage) an *Error with the method, the path, the HTTP status, Connect's code and
//     its message; the answers that mean "try again" (Connect's request timeout, a rebalance
//     under way or expected, a 5xx, 408 or 429 of a proxy in front of it) an error that is a
//     net.Error with Timeout() true, so that kafkaio.Classify retries it; anything else of a
//     proxy a plain error with the status and the start of the body.
//
// The typed calls are Connect's endpoints, one each (Root, Names, Expanded, Info, Status,
// Offsets, AlterOffsets, Stop, Pause, Resume, Delete, Topics, Plugins, Validate, Exists); Call
// is the request of any other. Results are Connect's REST entities as Connect writes them
// (docs/connect-internals.md, "Validating a new connector", "Status codes"). Of the module it
// imports only events, for the offsets of a connector.
package connectrest

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
)

// maxConnectBody bounds a Connect REST response. A validate response of a large plugin (every
// ConfigDef key with its documentation) is a few hundred KiB; this leaves ample room.
const maxConnectBody = 16 << 20

// Client calls a Kafka Connect cluster's REST API. It is safe for concurrent use. Credentials
// for a Connect cluster behind basic auth go in the base URL's userinfo (net/http sends them
// and strips them from its error messages) or in the http.Client's transport; either way they
// go to the base URL's origin only (New).
type Client struct {
	base string // scheme://[userinfo@]host[/path], no trailing slash
	hc   *http.Client
	// calls holds a slot per call in progress: a worker's REST API is not sized for the
	// agent's concurrency, so at most connectMaxCalls calls run at once.
	calls chan struct{}
}

// connectMaxCalls bounds the Connect REST calls one Client makes at once.
const connectMaxCalls = 8

// MaxCalls is how many calls one Client makes at once: a transport built for a Client keeps
// as many idle connections to the worker (http.Transport's MaxIdleConnsPerHost), so that each
// call finds one.
const MaxCalls = connectMaxCalls

// keepAlive is rt, or, for net/http's own transport (nil: http.DefaultTransport) keeping fewer
// idle connections per host than MaxCalls, a copy that keeps MaxCalls: net/http keeps 2 by
// default, and of 8 calls at once the others' connections were closed after each call and
// dialed anew, a TCP connection (and the worker's goroutines for it) per call. A transport of
// another kind (one that adds credentials) is the caller's to size (clientconfig's is).
func keepAlive(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr, ok := rt.(*http.Transport)
	if !ok || tr.MaxIdleConnsPerHost >= MaxCalls {
		return rt
	}
	cp := tr.Clone()
	cp.MaxIdleConnsPerHost = MaxCalls
	return cp
}

// New returns a client for the Connect REST API at baseURL (e.g. http://connect:8083). hc
// bounds each call with its Timeout; nil means a client with a 30 s timeout.
func New(baseURL string, hc *http.Client) (*Client, error) {
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
	own.Transport = keepAlive(hc.Transport)
	own.CheckRedirect = sameOriginOnly(u, hc.CheckRedirect)
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), ""
	return &Client{base: u.String(), hc: &own, calls: make(chan struct{}, connectMaxCalls)}, nil
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

// Redact is the URL s with its password hidden (url.URL.Redacted), for a report or a message;
// "[unparsable URL]" when s does not parse, so that nothing of it is shown.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[unparsable URL]"
	}
	return u.Redacted()
}

// Call sends one request to the Connect REST API at path (e.g. "/connectors?expand=info") and
// decodes a 2xx answer into out (when not nil); a status listed in also is returned without
// error and without decoding. It shares the client's bound on calls in progress. Connect's own
// error answers are an *Error.
func (c *Client) Call(ctx context.Context, method, path string, body []byte, out any, also ...int) (int, error) {
	return c.do(ctx, method, path, body, out, also...)
}

// do sends one request and decodes a 2xx answer into out (when not nil). A status listed in
// also is returned without error and without decoding. Any other answer is an error from
// responseError; a transport error is returned as net/http reports it (a *url.Error wrapping
// the network error, which Classify calls transient).
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any, also ...int) (int, error) {
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

// Error is Connect's own answer to a call that it refused or failed (its ErrorMessage body):
// the call's method and path, the HTTP status, Connect's error_code (the status when it gave
// none) and its message.
type Error struct {
	Method, Path string
	Status, Code int
	Message      string
}

func (e *Error) Error() string {
	return fmt.Sprintf("connect REST API answered %s %s with %d: %s", e.Method, e.Path, e.Code, e.Message)
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

// responseError turns a non-2xx answer into an error. Connect's own errors become an *Error,
// except the ones connectRetryable lists. Answers without Connect's error body come from
// something in front of it (a proxy or load balancer): a 5xx, 408 or 429 there is transient,
// anything else permanent.
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
		return &Error{Method: method, Path: path, Status: status, Code: code, Message: ce.Message}
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
// now. kafkaio.Classify knows transient errors only by their Go types; this one is a
// net.Error whose Timeout is true, so it is retried with reason "timeout".
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

var _ net.Error = (*unavailableError)(nil)
