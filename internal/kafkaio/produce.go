package kafkaio

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
	produceapi "github.com/segmentio/kafka-go/protocol/produce"
	"github.com/segmentio/kafka-go/protocol/rawproduce"
)

type topicPartition struct {
	topic     string
	partition int32
}

// partitionRecords is the records of one partition in a Produce request: the messages of
// items (queued writes) or recs[idx] (ordered writes).
type partitionRecords struct {
	topicPartition
	items []*produceItem
	recs  []Record
	idx   []int
	size  int
}

func (pr *partitionRecords) addTo(b *batchBuilder) {
	for _, it := range pr.items {
		for _, m := range it.recs {
			b.add(m.Key, m.Value, m.Headers)
		}
	}
	for _, i := range pr.idx {
		b.add(pr.recs[i].Key, pr.recs[i].Value, nil)
	}
}

// produceOnce sends parts, partitions led by one broker, in one Produce request with
// acks=all, and returns each part's error and, for those without one, the offset the broker
// gave the part's first record. It is the one place a Produce request is built.
func produceOnce(ctx context.Context, cl *kafka.Client, parts []partitionRecords) ([]error, []int64) {
	req := &rawproduce.Request{Acks: int16(kafka.RequireAll), Timeout: produceTimeoutMs}
	size := 0
	for _, pr := range parts {
		size += pr.size + 4 + batchHeaderSize
	}
	b := batchBuilder{buf: make([]byte, 0, size)}
	topicAt := map[string]int{}
	for i := range parts {
		pr := &parts[i]
		from := len(b.buf)
		b.begin()
		pr.addTo(&b)
		ti, ok := topicAt[pr.topic]
		if !ok {
			ti = len(req.Topics)
			topicAt[pr.topic] = ti
			req.Topics = append(req.Topics, rawproduce.RequestTopic{Topic: pr.topic})
		}
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rawPartition(pr.partition, b.finish()[from:]))
	}
	errs := make([]error, len(parts))
	bases := make([]int64, len(parts))
	setAll := func(err error) ([]error, []int64) {
		for i := range errs {
			errs[i] = err
		}
		return errs, bases
	}
	ctx, cancel := context.WithTimeout(ctx, roundTripTimeout)
	defer cancel()
	msg, err := transportOf(cl).RoundTrip(ctx, cl.Addr, req)
	if err != nil {
		return setAll(err)
	}
	res, ok := msg.(*produceapi.Response)
	if !ok {
		return setAll(fmt.Errorf("produce: unexpected response %T", msg))
	}
	answers := map[topicPartition]*produceapi.ResponsePartition{}
	for t := range res.Topics {
		for p := range res.Topics[t].Partitions {
			rp := &res.Topics[t].Partitions[p]
			answers[topicPartition{res.Topics[t].Topic, rp.Partition}] = rp
		}
	}
	for i, pr := range parts {
		switch rp, ok := answers[pr.topicPartition]; {
		case !ok:
			errs[i] = errors.New("produce: no response for the partition")
		case rp.ErrorCode != 0:
			errs[i] = partitionError(rp.ErrorCode, rp.ErrorMessage)
		default:
			bases[i] = rp.BaseOffset
		}
	}
	return errs, bases
}

// partitionError is a broker's error code for one partition, with its message when it sent one.
func partitionError(code int16, message string) error {
	err := kafka.Error(code)
	if message == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, message)
}
