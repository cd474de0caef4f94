package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// A bootstrap address names a Kafka cluster only through the brokers that answer there: one
// cluster is reached under many spellings (a name or its IP, a short name or an FQDN, a
// Kubernetes bootstrap Service that no broker advertises, another listener's port), and what
// an address reaches depends on where it is dialled from. ClusterIDs asks the address itself,
// as a Kafka client bootstraps: it connects to that address alone and sends a Metadata
// request, whose answer carries the cluster id (KIP-78). The request names no topic, so a
// cluster with many topics answers briefly.

// ClusterID returns the id of the Kafka cluster behind cl, from a Metadata request that names
// no topic.
func ClusterID(ctx context.Context, cl *kafka.Client) (string, error) {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return "", fmt.Errorf("read cluster metadata: %w", err)
	}
	return md.ClusterID, nil
}

// ClusterIDs looks up the Kafka cluster id behind bootstrap addresses, each (address,
// transport) once, its failure included: a fleet whose connectors name the same brokers asks
// them once. At most inFlight lookups run at once, each bounded by its timeout. It is safe for
// concurrent use.
type ClusterIDs struct {
	timeout time.Duration
	slots   chan struct{}
	mu      sync.Mutex
	calls   map[clusterIDKey]*clusterIDCall
}

// clusterIDKey is one lookup: an address with the transport whose security settings it is
// asked with.
type clusterIDKey struct {
	addr string
	tr   *kafka.Transport
}

// clusterIDCall is a lookup, done when done is closed.
type clusterIDCall struct {
	done chan struct{}
	id   string
	err  error
	// cancelled: the caller's context ended first; not an answer, the next caller asks again.
	cancelled bool
}

// NewClusterIDs returns a lookup cache whose lookups each take at most timeout, inFlight at
// once (at least one).
func NewClusterIDs(timeout time.Duration, inFlight int) *ClusterIDs {
	return &ClusterIDs{timeout: timeout, slots: make(chan struct{}, max(inFlight, 1)), calls: map[clusterIDKey]*clusterIDCall{}}
}

// Lookup returns the id of the Kafka cluster whose broker answers at addr (host:port), asked
// with the SASL mechanism, TLS configuration, dialer and resolver of tr (nil: plaintext). Give
// one *kafka.Transport per set of settings: the answer is kept per address and transport. An
// error says why the address gave no id: it could not be dialled (errors.As a *net.OpError,
// see IsDialError), its broker refused the connection's security, or gave no answer in time.
func (c *ClusterIDs) Lookup(ctx context.Context, addr string, tr *kafka.Transport) (string, error) {
	key := clusterIDKey{addr: addr, tr: tr}
	for {
		// A context that has ended gets its error, never a lookup: the selects below choose at
		// random among what is ready, so a lookup begun or finished with it could answer.
		if err := ctx.Err(); err != nil {
			return "", err
		}
		c.mu.Lock()
		call, ok := c.calls[key]
		if !ok {
			call = &clusterIDCall{done: make(chan struct{})}
			c.calls[key] = call
		}
		c.mu.Unlock()
		if !ok {
			c.run(ctx, key, call)
		}
		select {
		case <-call.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if !call.cancelled {
			return call.id, call.err
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		// Another caller's context ended during its lookup: ask again.
	}
}

// run does call's lookup within a slot, and forgets it when ctx ended before an answer.
func (c *ClusterIDs) run(ctx context.Context, key clusterIDKey, call *clusterIDCall) {
	defer close(call.done)
	select {
	case c.slots <- struct{}{}:
		call.id, call.err = clusterIDAt(ctx, key.addr, key.tr, c.timeout)
		<-c.slots
	case <-ctx.Done():
		call.err = ctx.Err()
	}
	if call.err != nil && ctx.Err() != nil {
		call.cancelled = true
		c.mu.Lock()
		delete(c.calls, key)
		c.mu.Unlock()
	}
}

// clusterIDAt asks the broker at addr for its cluster id over a transport of its own, with
// tr's security settings, closed before it returns.
func clusterIDAt(ctx context.Context, addr string, tr *kafka.Transport, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The transport's own metadata refresh is the request: bounded by MetadataTTL, and for
	// no topic.
	t := &kafka.Transport{DialTimeout: timeout, MetadataTTL: timeout, MetadataTopics: []string{}, ClientID: "offsetagent"}
	if tr != nil {
		t.Dial, t.SASL, t.TLS, t.Resolver = tr.Dial, tr.SASL, tr.TLS, tr.Resolver
		if tr.ClientID != "" {
			t.ClientID = tr.ClientID
		}
	}
	defer t.CloseIdleConnections()
	md, err := NewClient(Options{Brokers: []string{addr}, Transport: t}).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return "", fmt.Errorf("ask %s for its cluster id: no answer within %s", addr, timeout)
	case err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		return "", fmt.Errorf("ask %s for its cluster id: %w (the broker closed the connection, as one does to a client without the security its listener wants)", addr, err)
	case err != nil:
		return "", fmt.Errorf("ask %s for its cluster id: %w", addr, err)
	case md.ClusterID == "":
		return "", fmt.Errorf("ask %s for its cluster id: its broker answered without one (Kafka before 0.10.1)", addr)
	}
	return md.ClusterID, nil
}

// IsDialError reports whether err says that an address could not be dialled (no such host,
// connection refused, no route): other security settings would not reach it either.
func IsDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
