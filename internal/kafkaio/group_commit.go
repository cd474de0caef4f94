package kafkaio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An admin commit of a consumer group's offsets goes through the client's kafka.Transport as a
// request that writes itself (protocol.RawExchanger), like the fetch of fetch_raw.go: the same
// connections, TLS and SASL, and the transport's routing to the group's coordinator
// (FindCoordinator; the request is a protocol.GroupMessage, as kafka-go's own OffsetCommit).
// The request is franz-go's kmsg.OffsetCommitRequest, which carries every field: kafka-go's
// Client.OffsetCommit sends CommittedLeaderEpoch 0 from v6 on and has no way to set it, and a
// consumer that resumes from a committed epoch 0 on a partition whose epoch moved takes the
// offset for a truncated one and replays from the end of epoch 0.

// maxOffsetCommitVersion is the last OffsetCommit version without tagged fields, whose response
// has the version 0 header (the correlation id only). kafka-go negotiates at most this version
// anyway (its own OffsetCommit's last). v6 and later carry the committed leader epoch.
const maxOffsetCommitVersion = 7

// maxGroupResponse bounds the size a coordinator's answer to a group request may claim.
const maxGroupResponse = 64 << 20

// GroupOffset is one partition's offset to commit for a group.
type GroupOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// GroupCommitError is the error a coordinator answered for one partition of a commit. Err is
// a kafka.Error, so errors.Is(err, kafka.UnknownMemberId) and Classify work on it.
type GroupCommitError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e *GroupCommitError) Error() string {
	return fmt.Sprintf("topic %q partition %d: %v", e.Topic, e.Partition, e.Err)
}

func (e *GroupCommitError) Unwrap() error { return e.Err }

// CommitGroupOffsets commits offsets for group exactly as Kafka's
// Admin.alterConsumerGroupOffsets commits a map of `new OffsetAndMetadata(offset)`: generation
// -1, no member id and no group instance id (an admin commit, which the coordinator accepts
// only for a group without members, and which creates an unknown group empty), committed
// leader epoch -1 (none) and empty metadata. The partitions the coordinator refused come back
// joined, each a *GroupCommitError; an error of the round trip itself is returned as the
// transport gave it.
func CommitGroupOffsets(ctx context.Context, cl *kafka.Client, group string, offsets []GroupOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	c := &groupCommit{format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientIDOf(cl)))}
	c.req = kmsg.NewOffsetCommitRequest() // generation -1, retention -1 (the broker's default)
	c.req.Group = group
	empty := ""
	topics := map[string]int{} // index in c.req.Topics
	for _, o := range offsets {
		i, ok := topics[o.Topic]
		if !ok {
			i = len(c.req.Topics)
			topics[o.Topic] = i
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = o.Topic
			c.req.Topics = append(c.req.Topics, t)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition() // leader epoch -1, timestamp -1
		p.Partition, p.Offset, p.Metadata = o.Partition, o.Offset, &empty
		c.req.Topics[i].Partitions = append(c.req.Topics[i].Partitions, p)
	}
	if cl.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cl.Timeout)
		defer cancel()
	}
	msg, err := transportOf(cl).RoundTrip(ctx, cl.Addr, c)
	if err != nil {
		return err
	}
	res, ok := msg.(*groupCommitResult)
	if !ok {
		return fmt.Errorf("unexpected response %T", msg)
	}
	var errs []error
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				errs = append(errs, &GroupCommitError{Topic: t.Topic, Partition: p.Partition, Err: kafka.Error(p.ErrorCode)})
			}
		}
	}
	return errors.Join(errs...)
}

// groupCommit is an OffsetCommit request that exchanges itself on a connection of the
// transport, sent to the coordinator of its group.
type groupCommit struct {
	req     kmsg.OffsetCommitRequest
	format  *kmsg.RequestFormatter
	version int16 // negotiated for the connection of the exchange (Required)
	res     groupCommitResult
}

// groupCommitResult is the response of a groupCommit, as the transport hands it back.
type groupCommitResult struct {
	kmsg.OffsetCommitResponse
}

// ApiKey implements protocol.Message.
func (*groupCommitResult) ApiKey() protocol.ApiKey { return protocol.OffsetCommit }

// ApiKey implements protocol.Message.
func (*groupCommit) ApiKey() protocol.ApiKey { return protocol.OffsetCommit }

// Group implements protocol.GroupMessage: the transport sends the request to the group's
// coordinator.
func (c *groupCommit) Group() string { return c.req.Group }

// Required implements protocol.RawExchanger: the exchange is always raw; it notes the
// OffsetCommit version negotiated for the connection.
func (c *groupCommit) Required(versions map[protocol.ApiKey]int16) bool {
	c.version = versions[protocol.OffsetCommit]
	return true
}

// RawExchange implements protocol.RawExchanger: it writes the request on the connection and
// reads and decodes the response. Below v6 the request has no leader epoch field and the
// coordinator stores none, which is what -1 says from v6 on.
func (c *groupCommit) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	c.req.Version = min(c.version, maxOffsetCommitVersion)
	const corr = 1 // one request per exchange
	if _, err := rw.Write(c.format.AppendRequest(nil, &c.req, corr)); err != nil {
		return nil, fmt.Errorf("offset commit: write request: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(rw, size[:]); err != nil {
		return nil, fmt.Errorf("offset commit: read response: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxGroupResponse {
		return nil, fmt.Errorf("offset commit: response of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rw, buf); err != nil {
		return nil, fmt.Errorf("offset commit: read response: %w", err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, fmt.Errorf("offset commit: response to request %d, %d expected", got, corr)
	}
	c.res.OffsetCommitResponse = kmsg.OffsetCommitResponse{Version: c.req.Version}
	if err := c.res.ReadFrom(buf[4:]); err != nil { // response header v0: the correlation id
		return nil, fmt.Errorf("offset commit: decode response v%d: %w", c.req.Version, err)
	}
	return &c.res, nil
}

var (
	_ protocol.GroupMessage = (*groupCommit)(nil)
	_ protocol.RawExchanger = (*groupCommit)(nil)
)
