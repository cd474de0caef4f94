package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
)

// Options say how to reach one Kafka cluster. Every reader and writer of this package is built
// from its own Options, so a process can work with several clusters at once.
type Options struct {
	// Brokers are the cluster's bootstrap servers.
	Brokers []string
	// Transport carries SASL/TLS; nil means kafka.DefaultTransport.
	Transport *kafka.Transport
	// Logger receives the logs of readers; nil discards them.
	Logger *slog.Logger
	// Principal describes who Transport authenticates as (User:alice; clientconfig's
	// Security.Principal), for the *AuthzError of a refused request. Empty means
	// User:ANONYMOUS.
	Principal string
}

// NewClient builds a kafka.Client over the brokers of opts. It never dials. The client knows
// opts.Principal: the functions of this package name it in the *AuthzError of a request the
// brokers refused. It also remembers the coordinator of each consumer group it sent a request
// to (coordinator.go). Its first request waits until the transport knows the cluster's layout
// (layoutTransport).
func NewClient(opts Options) *kafka.Client {
	var rt kafka.RoundTripper = kafka.DefaultTransport
	if opts.Transport != nil {
		rt = opts.Transport
	}
	cl := &kafka.Client{Addr: kafka.TCP(opts.Brokers...)}
	cl.Transport = &clientTransport{RoundTripper: &layoutTransport{RoundTripper: rt}, principal: opts.Principal, coordinators: newCoordinators()}
	return cl
}

// layoutTransport holds the requests of one client until its kafka-go transport has loaded
// the cluster's layout once. kafka-go bounds every metadata refresh by the transport's
// MetadataTTL (a second for offsetagent's transports, so that a topic an agent just created
// is seen soon), and until one refresh has succeeded it answers Metadata with that refresh's
// error and routes every other request from an empty layout ("[8] Broker Not Available"):
// one metadata answer slower than the TTL (a loaded host, a cluster with many topics) failed
// at once a request whose own bound was 30 s, e.g. migrate's "B's Kafka cluster is
// unreachable". A refresh that times out is made again within a TTL, so a timeout is waited
// out here, bounded by the request's context; any other error (a refused connection, a
// refusal) is the request's answer, as before. A refresh that fails after one succeeded
// keeps the layout: once loaded, requests pass straight through.
type layoutTransport struct {
	kafka.RoundTripper
	loaded atomic.Bool
}

// layoutPause is the pause between two asks while the layout is not loaded.
const layoutPause = 50 * time.Millisecond

func (t *layoutTransport) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	for !t.loaded.Load() {
		// Asked straight on the transport, so that an error is the transport's own, as the
		// request's would have been (kafka.Client wraps it in its method's name).
		_, err := t.RoundTripper.RoundTrip(ctx, addr, &metadataAPI.Request{TopicNames: []string{}})
		if err == nil {
			t.loaded.Store(true)
			break
		}
		if reason, _ := Classify(err); reason != ReasonTimeout {
			return nil, err
		}
		if ctx.Err() != nil || !Sleep(ctx, layoutPause) {
			return nil, errors.Join(err, ctx.Err())
		}
	}
	return t.RoundTripper.RoundTrip(ctx, addr, req)
}

// clientTransport is the RoundTripper of a client built by NewClient: it carries the
// principal to the refusals of that client's requests, and the coordinators its group
// requests go to.
type clientTransport struct {
	kafka.RoundTripper
	principal    string
	coordinators *coordinators
}

// transportOf is the RoundTripper of cl, under what NewClient put on it.
func transportOf(cl *kafka.Client) kafka.RoundTripper {
	if ct, ok := cl.Transport.(*clientTransport); ok {
		return ct.RoundTripper
	}
	if cl.Transport != nil {
		return cl.Transport
	}
	return kafka.DefaultTransport
}

// PrincipalOf is the principal cl was built with (Options.Principal), empty for none: code
// that makes a request of its own through cl names it in the refusal (Authz).
func PrincipalOf(cl *kafka.Client) string {
	if ct, ok := cl.Transport.(*clientTransport); ok {
		return ct.principal
	}
	return ""
}

// PartitionCount returns the number of partitions of topic, or an error wrapping
// kafka.UnknownTopicOrPartition when it does not exist. A refusal is an *AuthzError naming
// Describe on topic.
func PartitionCount(ctx context.Context, cl *kafka.Client, topic string) (int, error) {
	leaders, err := PartitionLeaders(ctx, cl, topic)
	return len(leaders), refusal(cl, err, OpDescribe, ResourceTopic, topic)
}

// PartitionLeaders returns the leader's broker ID of every partition of topic, indexed by
// partition, or an error wrapping kafka.UnknownTopicOrPartition when it does not exist. The
// client's Transport answers from its metadata cache.
func PartitionLeaders(ctx context.Context, cl *kafka.Client, topic string) ([]int, error) {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("describe topic %q: %w", topic, err)
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("describe topic %q: %w", topic, t.Error)
		}
		if len(t.Partitions) == 0 {
			return nil, fmt.Errorf("describe topic %q: %w", topic, kafka.UnknownTopicOrPartition)
		}
		leaders := make([]int, len(t.Partitions))
		for _, p := range t.Partitions {
			if p.ID < 0 || p.ID >= len(leaders) {
				return nil, fmt.Errorf("describe topic %q: partition %d of %d", topic, p.ID, len(leaders))
			}
			leaders[p.ID] = p.Leader.ID
		}
		return leaders, nil
	}
	return nil, fmt.Errorf("describe topic %q: %w", topic, kafka.UnknownTopicOrPartition)
}

// ListOffsets returns the first (kafka.FirstOffset) or end (kafka.LastOffset) offset of every
// partition 0..n-1 of topic. The end is the last stable offset (isolation level
// READ_COMMITTED), where a reader of committed records stops: the high watermark unless a
// transaction is open.
func ListOffsets(ctx context.Context, cl *kafka.Client, topic string, n int, which int64) ([]int64, error) {
	return listOffsets(ctx, cl, topic, n, which, kafka.ReadCommitted)
}

// LogEnds returns the high watermark of every partition 0..n-1 of topic (isolation level
// READ_UNCOMMITTED): the end of the log, past the records of a transaction still open, which
// ListOffsets's end stops before.
func LogEnds(ctx context.Context, cl *kafka.Client, topic string, n int) ([]int64, error) {
	return listOffsets(ctx, cl, topic, n, kafka.LastOffset, kafka.ReadUncommitted)
}

func listOffsets(ctx context.Context, cl *kafka.Client, topic string, n int, which int64, isolation kafka.IsolationLevel) ([]int64, error) {
	reqs := make([]kafka.OffsetRequest, n)
	for p := range reqs {
		reqs[p] = kafka.OffsetRequest{Partition: p, Timestamp: which}
	}
	res, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{IsolationLevel: isolation,
		Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("list offsets of topic %q: %w", topic, err)
	}
	out := make([]int64, n)
	seen := 0
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("list offsets of topic %q partition %d: %w", topic, po.Partition, po.Error)
		}
		if po.Partition < 0 || po.Partition >= n {
			continue
		}
		if which == kafka.FirstOffset {
			out[po.Partition] = po.FirstOffset
		} else {
			out[po.Partition] = po.LastOffset
		}
		seen++
	}
	if seen != n {
		return nil, fmt.Errorf("list offsets of topic %q: got %d of %d partitions", topic, seen, n)
	}
	return out, nil
}
