package kafkaio

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch requests go through the client's kafka.Transport, as every other request of this
// package: the same connection pool, TLS and SASL, and the same routing to the partitions'
// leader (rawFetch is a protocol.BrokerMessage, as kafka-go's own fetch.Request). But the
// request writes itself and reads its own response (protocol.RawExchanger), so that the
// response stays one byte buffer: franz-go's kmsg decodes its partitions, whose record batches
// are sub-slices of that buffer, decoded by recordReader.

// minFetchVersion is the first Fetch version whose records are record batches (magic 2) and
// that has an isolation level; Apache Kafka 4 accepts nothing older. The highest version used
// is the one kafka-go negotiated for the connection, at most v11 (its own Fetch's last).
const minFetchVersion = 4

// maxFetchResponse bounds the size a broker's answer may claim before it is read.
const maxFetchResponse = 1 << 30

// rawFetch is a Fetch request of partitions of one topic (or several: addTopic) that exchanges itself on a
// connection of the transport. One goroutine uses it at a time. After a failed round trip it
// must be dropped, with the buffer it was given, since the connection's goroutine may still be
// reading into that buffer.
type rawFetch struct {
	req     kmsg.FetchRequest
	format  *kmsg.RequestFormatter
	corr    int32
	version int16  // negotiated for the connection of the exchange (Required)
	out     []byte // the request's bytes
	buf     []byte // the response's bytes, during a round trip
	res     fetchResult
}

// fetchResult is the response of a rawFetch, as the transport hands it back.
type fetchResult struct {
	kmsg.FetchResponse
}

// ApiKey implements protocol.Message.
func (*fetchResult) ApiKey() protocol.ApiKey { return protocol.Fetch }

// newRawFetch returns a fetch of topic with no partitions, waiting for at least one byte, that
// reads committed records only (aborts.go).
func newRawFetch(cl *kafka.Client, topic string) *rawFetch {
	return &rawFetch{
		format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientIDOf(cl))),
		req: kmsg.FetchRequest{ReplicaID: -1, MinBytes: 1, MaxBytes: logFetchRequestBytes, IsolationLevel: readCommitted,
			SessionID: -1, SessionEpoch: -1, Topics: []kmsg.FetchRequestTopic{{Topic: topic}}},
	}
}

// clientIDOf is the client id the requests of cl's transport carry, for the requests that
// write themselves.
func clientIDOf(cl *kafka.Client) string {
	rt := transportOf(cl)
	if lt, ok := rt.(*layoutTransport); ok {
		rt = lt.RoundTripper
	}
	if t, ok := rt.(*kafka.Transport); ok {
		return t.ClientID
	}
	return ""
}

// add appends partition p of the request's first topic from offset, up to maxBytes of it, to
// the request.
func (f *rawFetch) add(p int, offset int64, maxBytes int32) { f.addTo(0, p, offset, maxBytes) }

// addTo is add for the request's topic number ti (addTopic).
func (f *rawFetch) addTo(ti, p int, offset int64, maxBytes int32) {
	t := &f.req.Topics[ti]
	t.Partitions = append(t.Partitions, kmsg.FetchRequestTopicPartition{Partition: int32(p),
		CurrentLeaderEpoch: -1, FetchOffset: offset, LastFetchedEpoch: -1, LogStartOffset: -1, PartitionMaxBytes: maxBytes})
}

// addTopic adds a topic with no partitions to the request and returns its number, for a
// fetch of several topics' partitions at once (the barriers of several logs, syncEnds).
func (f *rawFetch) addTopic(topic string) int {
	f.req.Topics = append(f.req.Topics, kmsg.FetchRequestTopic{Topic: topic})
	return len(f.req.Topics) - 1
}

// reset removes every partition from the request.
func (f *rawFetch) reset() { f.req.Topics[0].Partitions = f.req.Topics[0].Partitions[:0] }

// partitions is the number of partitions in the request.
func (f *rawFetch) partitions() int { return len(f.req.Topics[0].Partitions) }

// roundTrip sends the request to the leader of its partitions and returns the response, read
// into buf (grown when too small; nil is fine) and returned with it for the next round trip:
// once it returns, f keeps no reference to the buffer, so that an idle connection of the
// transport, which holds on to its last request, does not hold a response's bytes. An error
// of the whole response is returned as a kafka.Error.
func (f *rawFetch) roundTrip(ctx context.Context, cl *kafka.Client, buf []byte) (*kmsg.FetchResponse, []byte, error) {
	return f.roundTripOn(ctx, cl, nil, -1, buf)
}

// roundTripOn is roundTrip on own's connection to leader when that is free (produce_conn.go),
// else through cl's transport.
func (f *rawFetch) roundTripOn(ctx context.Context, cl *kafka.Client, own *ownConns, leader int, buf []byte) (*kmsg.FetchResponse, []byte, error) {
	f.buf = buf
	msg, sent, err := own.roundTrip(ctx, leader, f)
	if !sent {
		msg, err = transportOf(cl).RoundTrip(ctx, cl.Addr, f)
	}
	if err != nil {
		return nil, nil, err // f and buf may still be in use: both are dropped
	}
	res, ok := msg.(*fetchResult)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected response %T", msg)
	}
	out := res.FetchResponse
	buf, f.buf, f.res = f.buf, nil, fetchResult{}
	if out.ErrorCode != 0 {
		return nil, buf, kafka.Error(out.ErrorCode)
	}
	return &out, buf, nil
}

// ApiKey implements protocol.Message.
func (*rawFetch) ApiKey() protocol.ApiKey { return protocol.Fetch }

// Broker implements protocol.BrokerMessage: the leader of every partition of the request (of
// every topic), with kafka-go's errors when the transport's metadata knows none or finds two.
func (f *rawFetch) Broker(cluster protocol.Cluster) (protocol.Broker, error) {
	if len(f.req.Topics) == 1 {
		t := f.req.Topics[0]
		return leaderOfAll(cluster, len(t.Partitions), func(i int) (string, int32) { return t.Topic, t.Partitions[i].Partition },
			func(err error) error { return fetchapi.NewError(err) })
	}
	type tp struct {
		topic     string
		partition int32
	}
	var all []tp
	for _, t := range f.req.Topics {
		for _, p := range t.Partitions {
			all = append(all, tp{t.Topic, p.Partition})
		}
	}
	return leaderOfAll(cluster, len(all), func(i int) (string, int32) { return all[i].topic, all[i].partition },
		func(err error) error { return fetchapi.NewError(err) })
}

// leaderOfAll is the broker that leads all n partitions at(0..n-1) in cluster, the transport's
// metadata, for the requests that route themselves; its errors are kafka-go's, wrapped by
// wrap as the request's own type wraps them.
func leaderOfAll(cluster protocol.Cluster, n int, at func(int) (string, int32), wrap func(error) error) (protocol.Broker, error) {
	broker := protocol.Broker{ID: -1}
	for i := range n {
		name, p := at(i)
		topic, ok := cluster.Topics[name]
		if !ok {
			return broker, wrap(protocol.NewErrNoTopic(name))
		}
		partition, ok := topic.Partitions[p]
		if !ok {
			return broker, wrap(protocol.NewErrNoPartition(name, p))
		}
		b, ok := cluster.Brokers[partition.Leader]
		switch {
		case !ok:
			return broker, wrap(protocol.NewErrNoLeader(name, p))
		case broker.ID < 0:
			broker = b
		case b.ID != broker.ID:
			return broker, wrap(fmt.Errorf("mismatching leaders (%d!=%d)", b.ID, broker.ID))
		}
	}
	return broker, nil
}

// Required implements protocol.RawExchanger: the exchange is always raw; it notes the Fetch
// version negotiated for the connection.
func (f *rawFetch) Required(versions map[protocol.ApiKey]int16) bool {
	f.version = versions[protocol.Fetch]
	return true
}

// RawExchange implements protocol.RawExchanger: it writes the request on the connection and
// reads the response into f's buffer.
func (f *rawFetch) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	if f.version < minFetchVersion {
		return nil, fmt.Errorf("fetch: the broker offers Fetch up to v%d, v%d is needed", f.version, minFetchVersion)
	}
	f.req.Version = min(f.version, 11) // the last version with topic names and no tagged fields
	f.corr++
	f.out = f.format.AppendRequest(f.out[:0], &f.req, f.corr)
	if _, err := rw.Write(f.out); err != nil {
		return nil, fmt.Errorf("fetch: write request: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(rw, size[:]); err != nil {
		return nil, fmt.Errorf("fetch: read response: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxFetchResponse {
		return nil, fmt.Errorf("fetch: response of %d bytes", n)
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n)
	}
	f.buf = f.buf[:n]
	if _, err := io.ReadFull(rw, f.buf); err != nil {
		return nil, fmt.Errorf("fetch: read response: %w", err)
	}
	if corr := int32(binary.BigEndian.Uint32(f.buf)); corr != f.corr {
		return nil, fmt.Errorf("fetch: response to request %d, %d expected", corr, f.corr)
	}
	f.res.FetchResponse = kmsg.FetchResponse{Version: f.req.Version}
	if err := f.res.ReadFrom(f.buf[4:]); err != nil { // response header v0: the correlation id
		return nil, fmt.Errorf("fetch: decode response v%d: %w", f.req.Version, err)
	}
	return &f.res, nil
}

var (
	_ protocol.BrokerMessage = (*rawFetch)(nil)
	_ protocol.RawExchanger  = (*rawFetch)(nil)
)
