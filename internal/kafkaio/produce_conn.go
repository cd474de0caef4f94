package kafkaio

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	"github.com/segmentio/kafka-go/protocol/saslauthenticate"
	"github.com/segmentio/kafka-go/protocol/saslhandshake"
	"github.com/segmentio/kafka-go/sasl"
)

// The queued writes' Produce requests (Producer.roundTrip) go on a connection the Producer
// owns, one per partition leader, written and read on the goroutine that sends the request.
// Through kafka-go's Transport, every round trip was handed to the connection's own goroutine
// over a channel and its answer handed back over another: two goroutine wake-ups per round
// trip, and a request of the agent's (one at a time) makes five Produce round trips (claim,
// intent, offsets, config, result) one after the other, each waited for before the next.
//
// The connection is dialled the way kafka-go's Transport dials its own, with the transport's
// settings (Dial, DialTimeout, TLS, SASL, ClientID, IdleTimeout): the API versions are
// negotiated, then SASL authenticates. A transport that is not a *kafka.Transport, or that
// resolves brokers itself (Resolver), keeps the transport's path; so does a round trip whose
// leader's connection is in use by another (a write's concurrent requests) or cannot be
// dialled (the transport then answers with its own error). A connection that fails a round
// trip is closed and dialled again for the next; one idle for the transport's IdleTimeout is
// closed.

// ownConns are a Producer's connections, by leader broker ID.
type ownConns struct {
	client *kafka.Client
	tr     *kafka.Transport // nil: no connections of its own (see above)
	// cancellable: a round trip ends when its context does, not only at its deadline (a
	// long-polling Fetch, FetchConns); the connection is then closed.
	cancellable bool

	mu    sync.Mutex
	conns map[int]*ownConn
}

// ownConn is one leader's connection. mu is held for a whole round trip (taken with TryLock,
// so that a second concurrent request goes the transport's way instead of waiting).
type ownConn struct {
	mu   sync.Mutex
	pc   *protocol.Conn // nil until dialled, and after a failure
	used time.Time      // the end of its last round trip
	idle *time.Timer    // closes it once unused for the idle timeout
}

func newOwnConns(cl *kafka.Client) *ownConns {
	o := &ownConns{client: cl, conns: map[int]*ownConn{}}
	rt := transportOf(cl)
	if lt, ok := rt.(*layoutTransport); ok {
		rt = lt.RoundTripper
	}
	if t, ok := rt.(*kafka.Transport); ok && t.Resolver == nil {
		o.tr = t
	}
	return o
}

// roundTrip makes req's round trip with leader on the connection owned for it, when it is
// free; sent is false when it was not (the caller takes the transport's way). The answer of a
// round trip on an owned connection is read to its end or the connection is closed: nothing
// is left half read.
func (o *ownConns) roundTrip(ctx context.Context, leader int, req protocol.Message) (res kafka.Response, sent bool, err error) {
	c := o.take(leader)
	if c == nil {
		return nil, false, nil
	}
	defer c.mu.Unlock()
	return c.roundTrip(ctx, o, leader, req)
}

// take returns leader's connection, locked, or nil when there are none of our own or it is in
// use.
func (o *ownConns) take(leader int) *ownConn {
	if o == nil || o.tr == nil || leader < 0 {
		return nil
	}
	o.mu.Lock()
	c := o.conns[leader]
	if c == nil {
		c = &ownConn{}
		o.conns[leader] = c
	}
	o.mu.Unlock()
	if !c.mu.TryLock() {
		return nil
	}
	return c
}

// roundTrip makes req's round trip on c (c.mu held), dialling it first when needed; sent is
// false when nothing was sent (the dial failed), so that the transport's way is taken.
func (c *ownConn) roundTrip(ctx context.Context, o *ownConns, leader int, req protocol.Message) (res kafka.Response, sent bool, err error) {
	if c.pc == nil {
		pc, err := o.dial(ctx, leader)
		if err != nil {
			return nil, false, nil
		}
		c.pc = pc
		if c.idle == nil {
			c.idle = time.AfterFunc(o.idleTimeout(), func() { c.closeIdle(o.idleTimeout()) })
		} else {
			c.idle.Reset(o.idleTimeout())
		}
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(roundTripTimeout)
	}
	pc := c.pc
	_ = pc.SetDeadline(deadline)
	var unblock func() bool
	if o.cancellable {
		unblock = context.AfterFunc(ctx, func() { _ = pc.SetDeadline(time.Unix(1, 0)) })
	}
	msg, err := pc.RoundTrip(req)
	if unblock != nil && !unblock() {
		// The context ended during the round trip: the connection's deadline is past, or
		// about to be.
		_ = pc.Close()
		c.pc = nil
		if err != nil {
			return nil, true, fmt.Errorf("%w (%v)", context.Cause(ctx), err)
		}
		return msg, true, nil
	}
	if err != nil {
		// Whatever was written or read of it, the connection's stream is no longer known.
		_ = c.pc.Close()
		c.pc = nil
		return nil, true, err
	}
	_ = c.pc.SetDeadline(time.Time{})
	c.used = time.Now()
	return msg, true, nil
}

// closeIdle closes c when it was not used for idle (and is not in use), else looks again
// when it would be.
func (c *ownConn) closeIdle(idle time.Duration) {
	if !c.mu.TryLock() {
		c.idle.Reset(idle)
		return
	}
	defer c.mu.Unlock()
	if c.pc == nil {
		return
	}
	if left := idle - time.Since(c.used); left > 0 {
		c.idle.Reset(left)
		return
	}
	_ = c.pc.Close()
	c.pc = nil
}

// close closes the connections not in use.
func (o *ownConns) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.conns {
		if c.mu.TryLock() {
			if c.pc != nil {
				_ = c.pc.Close()
				c.pc = nil
			}
			c.mu.Unlock()
		}
	}
}

// FetchConns are connections of a fetcher's own (FetchBounds.Conns): its Fetch requests are
// written and read by the goroutine that makes them, not handed to a kafka-go Transport's
// connection goroutine and back, as the Producer's Produce requests (see above). A Fetch
// whose context ends is cut short (its connection closed), as through the Transport.
type FetchConns struct {
	own     *ownConns
	leaders *leaderCache
}

// NewFetchConns returns the connections for the Fetch requests of cl (dialled when first
// used, with cl's transport's settings). Close them when done.
func NewFetchConns(cl *kafka.Client) *FetchConns {
	o := newOwnConns(cl)
	o.cancellable = true
	return &FetchConns{own: o, leaders: newLeaderCache(cl)}
}

// Close closes the connections.
func (c *FetchConns) Close() { c.own.close() }

// leader returns the leader of partition of topic, -1 when not known (the Transport's way is
// then taken).
func (c *FetchConns) leader(ctx context.Context, topic string, partition int) int {
	ls, err := c.leaders.get(ctx, topic)
	if err != nil || partition >= len(ls) {
		return -1
	}
	return ls[partition]
}

func (o *ownConns) idleTimeout() time.Duration {
	if o.tr.IdleTimeout > 0 {
		return o.tr.IdleTimeout
	}
	return 30 * time.Second // kafka-go's default
}

// dial connects to leader as kafka-go's Transport does (transport.go, connGroup.connect):
// the address from the cluster's metadata (the transport's cached copy), the transport's
// Dial, TLS, the API versions, then SASL.
func (o *ownConns) dial(ctx context.Context, leader int) (*protocol.Conn, error) {
	timeout := o.tr.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second // kafka-go's default
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	md, err := o.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return nil, err
	}
	host, port := "", 0
	for _, b := range md.Brokers {
		if b.ID == leader {
			host, port = b.Host, b.Port
		}
	}
	if host == "" {
		return nil, fmt.Errorf("broker %d not in the metadata", leader)
	}
	dial := o.tr.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 3 * time.Second}).DialContext
	}
	nc, err := dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	if cfg := o.tr.TLS; cfg != nil {
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		nc = tls.Client(nc, cfg)
	}
	pc := protocol.NewConn(nc, o.tr.ClientID)
	if err := handshake(ctx, pc, o.tr.SASL, host, port); err != nil {
		_ = pc.Close()
		return nil, err
	}
	return pc, nil
}

// handshake negotiates pc's API versions and authenticates it with mechanism (nil: none).
func handshake(ctx context.Context, pc *protocol.Conn, mechanism sasl.Mechanism, host string, port int) error {
	if deadline, ok := ctx.Deadline(); ok {
		_ = pc.SetDeadline(deadline)
	}
	r, err := pc.RoundTrip(new(apiversions.Request))
	if err != nil {
		return err
	}
	res := r.(*apiversions.Response)
	if res.ErrorCode != 0 {
		return fmt.Errorf("negotiating API versions: %w", kafka.Error(res.ErrorCode))
	}
	versions := make(map[protocol.ApiKey]int16, len(res.ApiKeys))
	for _, k := range res.ApiKeys {
		key := protocol.ApiKey(k.ApiKey)
		versions[key] = key.SelectVersion(k.MinVersion, k.MaxVersion)
	}
	pc.SetVersions(versions)
	if mechanism != nil {
		ctx = sasl.WithMetadata(ctx, &sasl.Metadata{Host: host, Port: port})
		if err := authenticate(ctx, pc, mechanism); err != nil {
			return err
		}
	}
	return pc.SetDeadline(time.Time{})
}

// authenticate is kafka-go's SASL exchange (transport.go, authenticateSASL).
func authenticate(ctx context.Context, pc *protocol.Conn, mechanism sasl.Mechanism) error {
	r, err := pc.RoundTrip(&saslhandshake.Request{Mechanism: mechanism.Name()})
	if err != nil {
		return err
	}
	if code := r.(*saslhandshake.Response).ErrorCode; code != 0 {
		return kafka.Error(code)
	}
	sess, state, err := mechanism.Start(ctx)
	if err != nil {
		return err
	}
	for done := false; !done; {
		r, err := pc.RoundTrip(&saslauthenticate.Request{AuthBytes: state})
		if err != nil {
			if errors.Is(err, io.EOF) {
				// A broker may tell a failed exchange by closing the connection.
				return kafka.SASLAuthenticationFailed
			}
			return err
		}
		res := r.(*saslauthenticate.Response)
		if res.ErrorCode != 0 {
			return partitionError(res.ErrorCode, res.ErrorMessage)
		}
		if done, state, err = sess.Next(ctx, res.AuthBytes); err != nil {
			return err
		}
	}
	return nil
}
