package kafkaio

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/rawproduce"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce requests go through the client's kafka.Transport (its connections, TLS, SASL and
// routing to the partitions' leader) but write themselves on the connection
// (protocol.RawExchanger), as rawFetch does: kafka-go's encoder copies every record set into
// pages of its own before writing them, which for a bulk write was a second copy of the
// records (about 8 MiB of fresh memory per 100,000 offsets, garbage once written). Here the
// request's framing is written around the record sets, and a large record set (an encoded
// batch, or a batch built for the request) goes to the connection from where it lies.

// minProduceVersion is the first Produce version that carries record batches (magic 2);
// maxProduceVersion the last one without tagged fields, whose layout rawProduce writes.
const (
	minProduceVersion = 3
	maxProduceVersion = 8
	// rawProduceInline is the size up to which a record set is copied into the request's
	// framing instead of being written on its own (a write call, and a packet, per small
	// record set would cost more than the copy).
	rawProduceInline = 16 << 10
	// maxProduceResponse bounds the size a broker's answer may claim before it is read.
	maxProduceResponse = 64 << 20
)

// rawProduce is a Produce request of record sets (each with its int32 size prefix, as batch.go
// builds them), partitions led by one broker. It is used for one round trip.
type rawProduce struct {
	clientID  string
	acks      int16
	timeoutMs int32
	parts     []rawProducePart
	version   int16 // negotiated for the connection of the exchange (Required)
	res       produceResult
}

type rawProducePart struct {
	topic     string
	partition int32
	set       []byte
}

// produceResult is the response of a rawProduce, as the transport hands it back.
type produceResult struct {
	kmsg.ProduceResponse
}

// ApiKey implements protocol.Message.
func (*produceResult) ApiKey() protocol.ApiKey { return protocol.Produce }

// ApiKey implements protocol.Message.
func (*rawProduce) ApiKey() protocol.ApiKey { return protocol.Produce }

// Broker implements protocol.BrokerMessage: the leader of every partition of the request,
// with kafka-go's errors when the transport's metadata knows none or finds two. Write probes
// (partition -1) have no leader and go with the others; a request of probes alone goes to the
// leader of their first topic's partition 0, where the Producer queued them (any broker
// answers a probe).
func (r *rawProduce) Broker(cluster protocol.Cluster) (protocol.Broker, error) {
	parts := make([]rawProducePart, 0, len(r.parts))
	for _, part := range r.parts {
		if part.partition != probePartition {
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 && len(r.parts) > 0 {
		parts = append(parts, rawProducePart{topic: r.parts[0].topic, partition: 0})
	}
	return leaderOfAll(cluster, len(parts), func(i int) (string, int32) { return parts[i].topic, parts[i].partition },
		func(err error) error { return rawproduce.NewError(err) })
}

// Required implements protocol.RawExchanger: the exchange is always raw; it notes the Produce
// version negotiated for the connection.
func (r *rawProduce) Required(versions map[protocol.ApiKey]int16) bool {
	r.version = versions[protocol.Produce]
	return true
}

// RawExchange implements protocol.RawExchanger: it writes the request on the connection and
// reads the response.
func (r *rawProduce) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	if r.version < minProduceVersion {
		return nil, fmt.Errorf("produce: the broker offers Produce up to v%d, v%d is needed", r.version, minProduceVersion)
	}
	version := min(r.version, maxProduceVersion)
	const corr = 1 // one request per exchange: any id will do
	segs, frame := r.requestSegments(version, corr)
	for _, s := range segs {
		if _, err := rw.Write(s); err != nil {
			smallBufs.put(frame) // Write has returned: nothing reads the framing any more
			return nil, fmt.Errorf("produce: write request: %w", err)
		}
	}
	smallBufs.put(frame)
	return r.readResponse(rw, version, corr)
}

// smallBufs are the buffers of small Produce requests (queued writes: a few records of a few
// requests each): their record sets and framing were two fresh allocations a round trip, a
// tenth of a busy agent's allocated bytes. A buffer goes back once nothing reads it any more:
// a request's framing once written, its record sets once the broker answered.
var smallBufs = requestBufPool{pool: sync.Pool{New: func() any {
	b := make([]byte, 0, smallBufBytes)
	return &b
}}}

// smallBufBytes is the capacity of a pooled request buffer.
const smallBufBytes = 32 << 10

type requestBufPool struct {
	pool sync.Pool
	// off makes get return nil: TestProducerSmallRequestBuffersPooled measures a Produce
	// without the pool beside one with it, in the same run.
	off atomic.Bool
}

// get returns a pooled empty buffer when size fits one, else nil (the caller allocates).
func (bp *requestBufPool) get(size int) *[]byte {
	if size > smallBufBytes || bp.off.Load() {
		return nil
	}
	return bp.pool.Get().(*[]byte)
}

// put hands b (from get, or nil) back.
func (bp *requestBufPool) put(b *[]byte) {
	if b != nil {
		*b = (*b)[:0]
		bp.pool.Put(b)
	}
}

// requestSegments returns the request in segments: framing (with the small record sets copied
// in), then each large record set as it lies, then the framing that follows it; and the pooled
// buffer of the first framing segment (nil when it has none), for smallBufs.put once written.
func (r *rawProduce) requestSegments(version int16, corr uint32) ([][]byte, *[]byte) {
	// The framing and the record sets copied into it, in one allocation.
	need := 32 + len(r.clientID)
	for i, part := range r.parts {
		if i == 0 || part.topic != r.parts[i-1].topic {
			need += 6 + len(part.topic)
		}
		need += 8
		if len(part.set) <= rawProduceInline {
			need += len(part.set)
		}
	}
	segs := make([][]byte, 0, 1)
	pooled := smallBufs.get(need)
	var frame []byte
	if pooled != nil {
		frame = (*pooled)[:0]
	} else {
		frame = make([]byte, 0, need)
	}
	size := 0
	flush := func() {
		if len(frame) > 0 {
			segs = append(segs, frame)
			size += len(frame)
			frame = nil
		}
	}
	be := binary.BigEndian
	frame = be.AppendUint32(frame, 0) // the request's size, filled in below
	frame = be.AppendUint16(frame, 0) // api key: Produce
	frame = be.AppendUint16(frame, uint16(version))
	frame = be.AppendUint32(frame, corr)
	frame = appendString(frame, r.clientID)
	frame = be.AppendUint16(frame, 0xffff) // transactional id: null
	frame = be.AppendUint16(frame, uint16(r.acks))
	frame = be.AppendUint32(frame, uint32(r.timeoutMs))
	topics := 0
	for i := range r.parts {
		if i == 0 || r.parts[i].topic != r.parts[i-1].topic {
			topics++
		}
	}
	frame = be.AppendUint32(frame, uint32(topics))
	for i := 0; i < len(r.parts); {
		topic := r.parts[i].topic
		end := i
		for end < len(r.parts) && r.parts[end].topic == topic {
			end++
		}
		frame = appendString(frame, topic)
		frame = be.AppendUint32(frame, uint32(end-i))
		for ; i < end; i++ {
			frame = be.AppendUint32(frame, uint32(r.parts[i].partition))
			if set := r.parts[i].set; len(set) <= rawProduceInline {
				frame = append(frame, set...)
			} else {
				flush()
				segs = append(segs, set)
				size += len(set)
			}
		}
	}
	flush()
	be.PutUint32(segs[0], uint32(size-4))
	return segs, pooled
}

// readResponse reads and decodes the response to request corr.
func (r *rawProduce) readResponse(rw io.ReadWriter, version int16, corr int32) (protocol.Message, error) {
	be := binary.BigEndian
	var head [8]byte
	if _, err := io.ReadFull(rw, head[:]); err != nil {
		return nil, fmt.Errorf("produce: read response: %w", err)
	}
	n := int32(be.Uint32(head[:]))
	if n < 4 || n > maxProduceResponse {
		return nil, fmt.Errorf("produce: response of %d bytes", n)
	}
	if got := int32(be.Uint32(head[4:])); got != corr {
		return nil, fmt.Errorf("produce: response to request %d, %d expected", got, corr)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(rw, body); err != nil {
		return nil, fmt.Errorf("produce: read response: %w", err)
	}
	r.res.ProduceResponse = kmsg.ProduceResponse{Version: version}
	if err := r.res.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("produce: decode response v%d: %w", version, err)
	}
	return &r.res, nil
}

// appendString appends a Kafka STRING (int16 length, then the bytes).
func appendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

var (
	_ protocol.BrokerMessage = (*rawProduce)(nil)
	_ protocol.RawExchanger  = (*rawProduce)(nil)
)
