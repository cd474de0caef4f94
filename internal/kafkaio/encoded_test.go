package kafkaio

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readPartition returns every record of a partition as "key=value".
func readPartition(t *testing.T, brokers []string, topic string, p int) []string {
	t.Helper()
	ctx := testContext(t)
	cl := NewClient(Options{Brokers: brokers, Transport: testTransport(t)})
	var out []string
	for offset := int64(0); ; {
		f, err := FetchPartition(ctx, cl, topic, p, offset, 1<<20, 50*time.Millisecond)
		require.NoError(t, err)
		for _, m := range f.Messages {
			out = append(out, string(m.Key)+"="+string(m.Value))
		}
		if f.Next >= f.HighWatermark {
			return out
		}
		offset = f.Next
	}
}

// encodeAll encodes recs (recs[i] to parts[i]) in ranges encoders, recs split evenly between
// them, and joins them.
func encodeAll(recs []Record, parts []int32, partitions, ranges, hint int) *Encoded {
	var encs []*Encoded
	per := (len(recs) + ranges - 1) / ranges
	for from := 0; from < len(recs); from += per {
		e := NewBatchEncoder(partitions, hint)
		for i := from; i < min(from+per, len(recs)); i++ {
			e.Append(int(parts[i]), recs[i].Key, recs[i].Value)
		}
		encs = append(encs, e.Encoded())
	}
	return JoinEncoded(encs...)
}

// Records written as encoded batches land exactly as Write puts them: the same keys and values,
// in the same partitions, in the same order, whatever the encoders' estimates (batches
// closed early) and however many encoders (ranges) made them. A Log reading the topic gets
// them from the acknowledged batches, at their offsets.
func TestWriteEncodedMatchesWrite(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		ranges int
		hint   int // bytes the encoders expect
	}{
		{name: "one encoder, good estimate", n: 5000, ranges: 1, hint: 5000 * 24},
		{name: "two encoders, small estimate", n: 5000, ranges: 2, hint: 1000},
		{name: "more records than a batch holds", n: 3*batchRecords + 7, ranges: 3, hint: (3*batchRecords + 7) * 24},
		{name: "few records", n: 5, ranges: 2, hint: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, brokers, p := startProducerCluster(t, "plain", "enc")
			ctx := testContext(t)
			l := runAppliedLog(t, brokers, "enc")
			recs := make([]Record, tt.n)
			parts := make([]int32, tt.n)
			for i := range recs {
				recs[i] = Record{Key: fmt.Appendf(nil, "key-%06d", i), Value: fmt.Appendf(nil, "v%d", i*7)}
				parts[i] = int32((i * 7919) % 3)
			}
			if tt.n > 2 {
				recs[2].Value = []byte{} // an empty value stays empty
			}
			enc := encodeAll(recs, parts, 3, tt.ranges, tt.hint)
			require.Equal(t, tt.n, enc.Len())
			require.NoError(t, p.Write(ctx, "plain", recs, parts, nil))
			var mu sync.Mutex
			acked := 0
			require.NoError(t, p.WriteEncoded(ctx, "enc", enc, func(a Acked) {
				require.Nil(t, a.Idx)
				l.WrittenBatch(int(a.Partition), a.Base, a.Batch)
				mu.Lock()
				defer mu.Unlock()
				acked++
			}))
			require.Equal(t, enc.Batches(), acked)
			for part := range 3 {
				want := readPartition(t, brokers, "plain", part)
				require.NotEmpty(t, want)
				require.Equal(t, want, readPartition(t, brokers, "enc", part), "partition %d", part)
			}
			require.NoError(t, l.Sync(ctx))
			for i, r := range recs {
				require.Equal(t, []string{string(r.Value)}, l.seen(string(r.Key)), "record %d", i)
			}
			// Records decodes them back, numbered partition by partition.
			var back []string
			for _, r := range enc.Records() {
				back = append(back, fmt.Sprintf("%d:%s=%s", r.Partition, r.Key, r.Value))
			}
			var want []string
			for part := range 3 {
				for i, r := range recs {
					if parts[i] == int32(part) {
						want = append(want, fmt.Sprintf("%d:%s=%s", part, r.Key, r.Value))
					}
				}
			}
			require.Equal(t, want, back)
		})
	}
}

// A partition that refuses its records fails them all, by their numbers in the Encoded, and
// stops there; the other partitions are written and acknowledged.
func TestWriteEncodedPartialFailure(t *testing.T) {
	c, brokers, p := startProducerCluster(t, "enc")
	ctx := testContext(t)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "enc", Partitions: []int32{1}, Err: kerr.NotEnoughReplicas, Count: -1})
	n := 3 * batchRecords
	recs := make([]Record, n)
	parts := make([]int32, n)
	for i := range recs {
		recs[i] = Record{Key: fmt.Appendf(nil, "key-%06d", i), Value: []byte("v")}
		parts[i] = int32(i % 3)
	}
	enc := encodeAll(recs, parts, 3, 2, n*16)
	var mu sync.Mutex
	var ackedParts []int32
	err := p.WriteEncoded(ctx, "enc", enc, func(a Acked) {
		mu.Lock()
		defer mu.Unlock()
		ackedParts = append(ackedParts, a.Partition)
	})
	var werr *WriteError
	require.ErrorAs(t, err, &werr)
	require.ErrorIs(t, err, kafka.NotEnoughReplicas)
	all := enc.Records()
	var failedKeys []string
	for _, i := range werr.Failed {
		require.Equal(t, 1, all[i].Partition)
		failedKeys = append(failedKeys, string(all[i].Key))
	}
	var want []string
	for i, r := range recs {
		if parts[i] == 1 {
			want = append(want, string(r.Key))
		}
	}
	require.Equal(t, want, failedKeys)
	require.Equal(t, n-len(want), werr.Written)
	require.NotContains(t, ackedParts, int32(1))
	require.Empty(t, readPartition(t, brokers, "enc", 1))
	require.Len(t, readPartition(t, brokers, "enc", 0), n/3)
	require.Len(t, readPartition(t, brokers, "enc", 2), n/3)

	// A topic of another partition count is refused as a whole.
	err = p.WriteEncoded(context.Background(), "enc", encodeAll(recs[:10], make([]int32, 10), 5, 1, 0), nil)
	require.ErrorAs(t, err, &werr)
	require.Len(t, werr.Failed, 10)
	require.ErrorContains(t, err, "3 partitions, records encoded for 5")
}

// An encoder's batches stay within a Produce request's limits for a partition, and are
// filled, not grown, from the estimate.
func TestBatchEncoderLimits(t *testing.T) {
	e := NewBatchEncoder(1, 0)
	value := make([]byte, 1000)
	for i := range 2000 {
		e.Append(0, fmt.Appendf(nil, "%d", i), value)
	}
	enc := e.Encoded()
	require.Equal(t, 2000, enc.Len())
	for _, b := range enc.batches[0] {
		require.LessOrEqual(t, len(b.buf)-4, batchBytes+batchHeaderSize)
		require.LessOrEqual(t, b.n, batchRecords)
	}
	// An estimate far too small: the buffers double, the batches stay few.
	e = NewBatchEncoder(3, 10)
	for i := range 20_000 {
		e.Append(i%3, fmt.Appendf(nil, "%d", i), value[:100])
	}
	enc = e.Encoded()
	require.Equal(t, 20_000, enc.Len())
	require.Less(t, enc.Batches(), 3*12)

	e = NewBatchEncoder(2, 2*(batchRecords+10)*16) // each record takes 15 bytes
	for i := range 2 * (batchRecords + 10) {
		e.Append(i%2, fmt.Appendf(nil, "k%05d", i), []byte("v"))
	}
	enc = e.Encoded()
	for p := range 2 {
		require.Len(t, enc.batches[p], 2, "partition %d", p)
		require.Equal(t, batchRecords, enc.batches[p][0].n)
		require.Equal(t, 10, enc.batches[p][1].n)
	}
}

// The encoded batches of a large write reach the broker snappy-compressed (the bytes the
// broker receives and stores, about a seventh), a small one as it is; the records are the same
// bytes either way, for a consumer that inflates them (franz-go here, as Kafka's Java consumer
// in Connect) and for the writing Log's view, which takes them from the uncompressed batch.
func TestWriteEncodedCompressesLargeBatches(t *testing.T) {
	_, brokers, p := startProducerCluster(t, "enc")
	ctx := testContext(t)
	l := runAppliedLog(t, brokers, "enc")
	var recs []Record
	var parts []int32
	for i := range 3000 { // partitions 0 and 1: ~150 KB each
		recs = append(recs, Record{Key: fmt.Appendf(nil, `["bulk",{"server":"srv","database":"db%06d"}]`, i),
			Value: fmt.Appendf(nil, `{"commit_lsn":"0000002d:%08x:0003","event_serial_no":1}`, i)})
		parts = append(parts, int32(i%2))
	}
	recs = append(recs, Record{Key: []byte("small"), Value: []byte(`{"offset":1}`)}) // partition 2: one record
	parts = append(parts, 2)
	enc := encodeAll(recs, parts, 3, 1, 3*1500*120) // one batch a partition
	require.Equal(t, 3, enc.Batches())
	require.NoError(t, p.WriteEncoded(ctx, "enc", enc, func(a Acked) { l.WrittenBatch(int(a.Partition), a.Base, a.Batch) }))

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"enc": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	got := map[string]string{}
	codecs := map[int32]map[uint8]int{}
	for len(got) < len(recs) {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = string(r.Value)
			if codecs[r.Partition] == nil {
				codecs[r.Partition] = map[uint8]int{}
			}
			codecs[r.Partition][r.Attrs.CompressionType()]++
		})
	}
	for _, r := range recs {
		require.Equal(t, string(r.Value), got[string(r.Key)], "record %s", r.Key)
	}
	const snappyCode, none = 2, 0
	require.Equal(t, map[int32]map[uint8]int{0: {snappyCode: 1500}, 1: {snappyCode: 1500}, 2: {none: 1}}, codecs)
	require.NoError(t, l.Sync(ctx))
	for _, r := range recs {
		require.Equal(t, []string{string(r.Value)}, l.seen(string(r.Key)), "the view holds %s once", r.Key)
	}
}

// A compressed record set keeps the batch's header but its codec, length and CRC, and its
// records inflate to the uncompressed batch's records byte for byte.
func TestAppendCompressedSet(t *testing.T) {
	e := NewBatchEncoder(1, 2000*30)
	for i := range 2000 {
		e.Append(0, fmt.Appendf(nil, "key-%06d", i), fmt.Appendf(nil, `{"offset":%d}`, i*7))
	}
	set := e.Encoded().batches[0][0].buf
	out, err := appendCompressedSet([]byte("prefix"), set, encodedCodec)
	require.NoError(t, err)
	require.Equal(t, "prefix", string(out[:6]))
	cset := out[6:]
	require.Less(t, len(cset), len(set)/2)
	be := binary.BigEndian
	require.Equal(t, len(cset)-4, int(be.Uint32(cset)), "the set's size")
	batch, cbatch := set[4:], cset[4:]
	require.Equal(t, len(cbatch)-batchLogOverhead, int(be.Uint32(cbatch[batchLengthOffset:])), "the batch length")
	require.Equal(t, uint16(2), be.Uint16(cbatch[attrOffset:]), "snappy in the attributes")
	require.Equal(t, batch[attrOffset+2:batchHeaderSize], cbatch[attrOffset+2:batchHeaderSize], "the rest of the header")
	require.Equal(t, batch[:batchLengthOffset], cbatch[:batchLengthOffset], "the base offset")
	require.Equal(t, batch[batchLengthOffset+4:crcOffset], cbatch[batchLengthOffset+4:crcOffset], "the leader epoch and magic")
	require.Equal(t, crc32.Checksum(cbatch[attrOffset:], castagnoli), be.Uint32(cbatch[crcOffset:]))
	records, err := inflateOwn(compress.Snappy, cbatch[batchHeaderSize:], 0)
	require.NoError(t, err)
	require.True(t, bytes.Equal(batch[batchHeaderSize:], records), "the records inflate to the batch's")
}

// BenchmarkWriteEncoded writes 100,000 records shaped as the bulk scenario's Debezium SQL
// Server offsets (~135 bytes each, 25 partitions, two encoders as the single pass's two
// ranges) to an in-process broker, its batches sent "uncompressed" or "snappy" (the
// default): cpu-ms/op is the process's CPU, the writer's and the broker's together.
//
//	go test -run '^$' -bench BenchmarkWriteEncoded -benchtime 20x -count 4 ./internal/kafkaio/
//
// (The broker keeps every write in memory: -benchtime bounds it, about 14 MB uncompressed
// and 2 MB snappy a write.)
func BenchmarkWriteEncoded(b *testing.B) {
	const n, partitions = 100_000, 25
	recs := make([]Record, n)
	parts := make([]int32, n)
	for i := range recs {
		lsn := fmt.Sprintf("%08x:%08x:%04x", 45, 2888+i, 3)
		recs[i] = Record{Key: fmt.Appendf(nil, `["bulk-2",{"server":"srv","database":"db%06d"}]`, i),
			Value: fmt.Appendf(nil, `{"commit_lsn":%q,"change_lsn":%q,"event_serial_no":1}`, lsn, lsn)}
		parts[i] = int32(i % partitions)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(partitions, "enc"),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": "20971520"}))
	require.NoError(b, err)
	b.Cleanup(c.Close)
	p := NewProducer(Options{Brokers: c.ListenAddrs()})
	ctx := testContext(b)
	for _, bc := range []struct {
		name  string
		codec compress.Codec
	}{{"uncompressed", nil}, {"snappy", encodedCodec}} {
		b.Run(bc.name, func(b *testing.B) {
			saved := encodedCodec
			encodedCodec = bc.codec
			defer func() { encodedCodec = saved }()
			enc := encodeAll(recs, parts, partitions, 2, n*130)
			require.NoError(b, p.WriteEncoded(ctx, "enc", enc, nil)) // connections, metadata
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				require.NoError(b, p.WriteEncoded(ctx, "enc", enc, nil))
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// processCPU is the CPU time this process ran so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A large write sends a partition's next batch as soon as its last one is answered, not once
// every partition's batch of the same round is: with one Produce request of the write held at
// the broker, the partitions of the other request go on to their second batch meanwhile (they
// waited for the held request before). Each partition still has one batch in flight at a time,
// and every record lands in its partition in order.
func TestWriteEncodedPartitionGoesOnWithoutWaitingForOthers(t *testing.T) {
	const partitions, perPartition = 10, 520
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(partitions, "w"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	p := NewProducer(Options{Brokers: brokers, Transport: &kafka.Transport{MetadataTTL: 100 * time.Millisecond}})
	ctx := testContext(t)

	// Each partition's records fill a first batch of about batchBytes (the ten of them more
	// than one request's requestBytes) and a small second one, whose last record is marked.
	e := NewBatchEncoder(partitions, partitions*perPartition*1000)
	want := make([][]string, partitions)
	for part := range partitions {
		for i := range perPartition {
			k, v := fmt.Sprintf("k%d-%d", part, i), fmt.Sprintf("v%d-%d-%0990d", part, i, 0)
			if i == perPartition-1 {
				v = fmt.Sprintf("last-of-%d", part)
			}
			e.Append(part, []byte(k), []byte(v))
			want[part] = append(want[part], k+"="+v)
		}
	}
	enc := e.Encoded()
	require.Equal(t, 2*partitions, enc.Batches())

	// Hold the request that carries partition 0 until another partition's second batch
	// arrives (or, on a write that waits for whole rounds, for a bound of ten seconds).
	var (
		mu                  sync.Mutex
		held                bool
		secondSeen          = make(chan struct{})
		secondOnce          sync.Once
		secondWhileHeld     bool
		requestsWithPartOf0 int
	)
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		hasZero, second := false, false
		for _, rt := range pr.Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic != "w" {
					continue
				}
				if rp.Partition == 0 {
					hasZero = true
				} else if bytes.Contains(rp.Records, []byte("last-of-")) {
					second = true
				}
			}
		}
		if second {
			secondOnce.Do(func() { close(secondSeen) })
		}
		mu.Lock()
		hold := hasZero && !held
		held = held || hasZero
		if hasZero {
			requestsWithPartOf0++
		}
		mu.Unlock()
		if hold {
			c.SleepControl(func() {
				select {
				case <-secondSeen:
					mu.Lock()
					secondWhileHeld = true
					mu.Unlock()
				case <-time.After(10 * time.Second):
				}
			})
		}
		return nil, nil, false
	})
	require.NoError(t, p.WriteEncoded(ctx, "w", enc, nil))
	mu.Lock()
	require.True(t, secondWhileHeld, "no partition's second batch was sent while another request of the write was held")
	require.Equal(t, 2, requestsWithPartOf0, "partition 0's two batches, one request each")
	mu.Unlock()
	for part := range partitions {
		require.Equal(t, want[part], readPartition(t, brokers, "w", part), "partition %d", part)
	}
}
