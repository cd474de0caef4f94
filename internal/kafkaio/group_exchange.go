package kafkaio

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request to a consumer group's coordinator (OffsetCommit, OffsetFetch) goes through the
// client's kafka.Transport as a request that writes itself (protocol.RawExchanger), like the
// fetch of fetch_raw.go: the same connections, TLS and SASL, and the transport's routing to
// the group's coordinator (FindCoordinator; the request is a protocol.GroupMessage, as
// kafka-go's own group requests are). The request is franz-go's kmsg structure, which carries
// every field of the protocol: kafka-go's OffsetCommit sends CommittedLeaderEpoch 0 from v6 on
// and has no way to set it, and its OffsetFetch drops the committed leader epoch of the
// answer.

// maxGroupResponse bounds the size a coordinator's answer to a group request may claim.
const maxGroupResponse = 64 << 20

// groupExchange is a kmsg group request that exchanges itself on a connection of the
// transport, sent to the coordinator of its group. Its version is the one negotiated for the
// connection, at most maxVersion: the last version without tagged fields, whose response has
// the version 0 header (the correlation id only).
type groupExchange struct {
	kmsgExchange
	group string
}

// kmsgExchange is a kmsg request that exchanges itself on a connection of the transport. On
// its own (not a protocol.GroupMessage nor a protocol.BrokerMessage) the transport sends it to
// any broker: the permission probes (probe.go) ask questions every broker answers alike.
type kmsgExchange struct {
	req        kmsg.Request
	maxVersion int16
	format     *kmsg.RequestFormatter
	version    int16 // negotiated for the connection of the exchange (Required)
}

// groupResult is the response of a groupExchange, as the transport hands it back.
type groupResult struct {
	kmsg.Response
}

// ApiKey implements protocol.Message.
func (r *groupResult) ApiKey() protocol.ApiKey { return protocol.ApiKey(r.Key()) }

// ApiKey implements protocol.Message.
func (e *kmsgExchange) ApiKey() protocol.ApiKey { return protocol.ApiKey(e.req.Key()) }

// Group implements protocol.GroupMessage: the transport sends the request to the group's
// coordinator.
func (e *groupExchange) Group() string { return e.group }

// Required implements protocol.RawExchanger: the exchange is always raw; it notes the
// version negotiated for the connection.
func (e *kmsgExchange) Required(versions map[protocol.ApiKey]int16) bool {
	e.version = versions[e.ApiKey()]
	return true
}

// RawExchange implements protocol.RawExchanger: it writes the request on the connection and
// reads and decodes the response.
func (e *kmsgExchange) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	e.req.SetVersion(min(e.version, e.maxVersion))
	name := kmsg.NameForKey(e.req.Key())
	const corr = 1 // one request per exchange
	if _, err := rw.Write(e.format.AppendRequest(nil, e.req, corr)); err != nil {
		return nil, fmt.Errorf("%s: write request: %w", name, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(rw, size[:]); err != nil {
		return nil, fmt.Errorf("%s: read response: %w", name, err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxGroupResponse {
		return nil, fmt.Errorf("%s: response of %d bytes", name, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rw, buf); err != nil {
		return nil, fmt.Errorf("%s: read response: %w", name, err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, fmt.Errorf("%s: response to request %d, %d expected", name, got, corr)
	}
	// The response of the request's version, after the v0 header (the correlation id).
	res := e.req.ResponseKind()
	if err := res.ReadFrom(buf[4:]); err != nil {
		return nil, fmt.Errorf("%s: decode response v%d: %w", name, e.req.GetVersion(), err)
	}
	return &groupResult{res}, nil
}

// exchangeGroup sends req to the coordinator of group over cl's transport and returns the
// coordinator's response: the coordinator cl remembers (coordinator.go), or, for a client
// without that memory, the one kafka-go's transport finds before each request.
func exchangeGroup(ctx context.Context, cl *kafka.Client, group string, req kmsg.Request, maxVersion int16) (kmsg.Response, error) {
	if cache := coordinatorsOf(cl); cache != nil {
		return exchangeCoordinated(ctx, cl, cache, group, req, maxVersion)
	}
	return roundTrip(ctx, cl, &groupExchange{group: group, kmsgExchange: newKmsgExchange(cl, req, maxVersion)})
}

// exchangeAny sends req to any broker over cl's transport and returns the broker's response.
func exchangeAny(ctx context.Context, cl *kafka.Client, req kmsg.Request, maxVersion int16) (kmsg.Response, error) {
	e := newKmsgExchange(cl, req, maxVersion)
	return roundTrip(ctx, cl, &e)
}

// newKmsgExchange is the exchange of req on a connection of cl's transport, at most
// maxVersion.
func newKmsgExchange(cl *kafka.Client, req kmsg.Request, maxVersion int16) kmsgExchange {
	return kmsgExchange{req: req, maxVersion: maxVersion,
		format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientIDOf(cl)))}
}

func roundTrip(ctx context.Context, cl *kafka.Client, e kafka.Request) (kmsg.Response, error) {
	if cl.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cl.Timeout)
		defer cancel()
	}
	msg, err := transportOf(cl).RoundTrip(ctx, cl.Addr, e)
	if err != nil {
		return nil, err
	}
	res, ok := msg.(*groupResult)
	if !ok {
		return nil, fmt.Errorf("unexpected response %T", msg)
	}
	return res.Response, nil
}

var (
	_ protocol.GroupMessage = (*groupExchange)(nil)
	_ protocol.RawExchanger = (*groupExchange)(nil)
	_ protocol.RawExchanger = (*kmsgExchange)(nil)
)
