package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type topicPartition struct {
	topic     string
	partition int32
}

// partitionRecords is the records of one partition in a Produce request: the messages of
// items (queued writes), recs[idx] (ordered writes) or an encoded batch (WriteEncoded).
type partitionRecords struct {
	topicPartition
	items   []*produceItem
	recs    []Record
	idx     []int
	encoded encodedBatch
	size    int
	// probe: the Write probes of the topic (partition -1, no records; EnqueueProbes).
	probe bool
}

func (pr *partitionRecords) addTo(b *batchBuilder) {
	for _, it := range pr.items {
		for _, m := range it.recs {
			b.add(m.Key, m.Value, m.Headers)
		}
	}
	for _, i := range pr.idx {
		b.add(pr.recs[i].Key, pr.recs[i].Value, pr.recs[i].Headers)
	}
}

// produceOnce sends parts, partitions led by one broker, in one Produce request with
// acks=all (its buffer from bufs, which may be nil), and returns each part's error and, for
// those without one, the offset the broker gave the part's first record. The request asks the
// broker to answer by answerBy (zero: the default timeout; produceTimeout); the round trip is
// bounded by ctx and roundTripTimeout only, so that an answer that comes later is still read.
// It is the one place a Produce request is built. leader, when not -1, is the broker ID of
// the partitions' leader: the request then goes on the Producer's own connection to it when
// that is free (produce_conn.go).
func (p *Producer) produceOnce(ctx context.Context, answerBy time.Time, parts []partitionRecords, bufs *produceBufs, leader int) ([]error, []int64) {
	req := &rawProduce{clientID: clientIDOf(p.client), acks: int16(kafka.RequireAll), timeoutMs: produceTimeout(answerBy)}
	size := 0
	for _, pr := range parts {
		if pr.encoded.buf == nil {
			size += pr.size + 4 + batchHeaderSize
		} else {
			size += compressedSize(pr.encoded)
		}
	}
	var pooled *[]byte // a small request's buffer (a queued write's), when bufs is nil
	if bufs == nil {
		pooled = smallBufs.get(size)
	}
	var b batchBuilder
	if pooled != nil {
		b.buf = (*pooled)[:0]
	} else {
		b.buf = bufs.get(size)
	}
	// The request lists each topic once: its partitions are grouped, in their order.
	order := make([]int, 0, len(parts))
	topicAt := map[string]int{}
	var topics []string
	for i := range parts {
		if _, ok := topicAt[parts[i].topic]; !ok {
			topicAt[parts[i].topic] = len(topics)
			topics = append(topics, parts[i].topic)
		}
	}
	for t := range topics {
		for i := range parts {
			if topicAt[parts[i].topic] == t {
				order = append(order, i)
			}
		}
	}
	for _, i := range order {
		pr := &parts[i]
		set := pr.encoded.buf // sent as it is, or compressed (compressEncoded)
		if set != nil {
			b.buf, set = compressEncoded(b.buf, pr.encoded)
		}
		if pr.probe {
			set = emptyRecordSet
		} else if set == nil {
			from := len(b.buf)
			b.begin()
			pr.addTo(&b)
			set = b.finish()[from:]
		}
		req.parts = append(req.parts, rawProducePart{topic: pr.topic, partition: pr.partition, set: set})
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
	msg, sent, err := p.own.roundTrip(ctx, leader, req)
	if !sent {
		msg, err = transportOf(p.client).RoundTrip(ctx, p.client.Addr, req)
	}
	if err != nil {
		// The connection may still be writing the request: its buffer is not reused.
		return setAll(err)
	}
	bufs.put(b.buf)
	smallBufs.put(pooled)
	res, ok := msg.(*produceResult)
	if !ok {
		return setAll(fmt.Errorf("produce: unexpected response %T", msg))
	}
	answers := map[topicPartition]*kmsg.ProduceResponseTopicPartition{}
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
		case pr.probe:
			if err := probeAnswer(rp.ErrorCode); err != nil {
				errs[i] = partitionError(rp.ErrorCode, stringOf(rp.ErrorMessage))
			}
		case rp.ErrorCode != 0:
			message := ""
			if rp.ErrorMessage != nil {
				message = *rp.ErrorMessage
			}
			errs[i] = partitionError(rp.ErrorCode, message)
		default:
			bases[i] = rp.BaseOffset
		}
	}
	return errs, bases
}

// emptyRecordSet is the record set of a Write probe: no records (empty, not null: a broker
// reads the batches before it looks the partition up).
var emptyRecordSet = []byte{0, 0, 0, 0}

// stringOf is *s, "" for nil.
func stringOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// partitionError is a broker's error code for one partition, with its message when it sent one.
func partitionError(code int16, message string) error {
	err := kafka.Error(code)
	if message == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, message)
}

// A large write's Produce requests are each about requestBytes: a write keeps their buffers
// for its next requests instead of allocating each afresh (fresh memory costs CPU to fault
// in: a bulk write's ~10 MB of request buffers was about a tenth of its CPU, and garbage
// brings the next collection nearer). A buffer is reused only once its round trip answered,
// so that nothing still writes it to a connection; the write's end lets them all go, before
// a view applies what it wrote.
type produceBufs struct {
	mu   sync.Mutex
	free [][]byte // each of capacity pooledBufBytes
}

// pooledBufBytes is the capacity of a reused request buffer: a full request (requestBytes of
// records, counted by recordSize) and its batches' headers, with room to spare.
// pooledSmallBufBytes is that of a request of compressed encoded batches (compressedSize: a
// full request's, about a sixth of requestBytes, with room to spare).
const (
	pooledBufBytes      = requestBytes + 256<<10
	pooledSmallBufBytes = requestBytes / 4
)

// get returns an empty buffer for a Produce request of about size bytes; bs may be nil (no
// reuse).
func (bs *produceBufs) get(size int) []byte {
	class := pooledBufBytes
	if size < requestBytes/4 {
		class = pooledSmallBufBytes
	}
	if bs == nil || size < pooledSmallBufBytes/4 || size > class {
		return make([]byte, 0, size)
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for i := len(bs.free) - 1; i >= 0; i-- {
		if b := bs.free[i]; cap(b) == class {
			bs.free = append(bs.free[:i], bs.free[i+1:]...)
			return b[:0]
		}
	}
	return make([]byte, 0, class)
}

// put hands buf (from get, its request answered) back for reuse.
func (bs *produceBufs) put(buf []byte) {
	if bs == nil || (cap(buf) != pooledBufBytes && cap(buf) != pooledSmallBufBytes) {
		return
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.free = append(bs.free, buf)
}
