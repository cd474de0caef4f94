package offsetstore

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// benchRecords returns n offsets records spread over 1,000 connectors, shaped like FileStream's.
func benchRecords(n, salt int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{
			Key:       fmt.Appendf(nil, `["conn-%03d",{"filename":"/var/data/input-%07d.txt"}]`, i%1000, i),
			Value:     fmt.Appendf(nil, `{"position":%d}`, i*salt+1),
			Partition: -1,
		}
	}
	return recs
}

// BenchmarkViewLoad compares loading the offsets view of a 200,000-record topic with consuming the
// same topic with bare per-partition kafka.Readers and with bare kafka.Client.Fetch loops (the
// raw consume rates).
func BenchmarkViewLoad(b *testing.B) {
	const n = 200_000
	brokers := startKafka(b)
	createConnectTopics(b, brokers)
	s, err := New(Options{Brokers: brokers, ConfigTopic: testConfigTopic, OffsetsTopic: testOffsetsTopic})
	require.NoError(b, err)
	defer func() { require.NoError(b, s.Close()) }()
	recs := benchRecords(n, 1)
	require.NoError(b, s.Write(testContext(b), testOffsetsTopic, recs))
	var payload int
	for _, r := range recs {
		payload += len(r.Key) + len(r.Value)
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	ends, err := kafkaio.ListOffsets(testContext(b), cl, testOffsetsTopic, 25, kafka.LastOffset)
	require.NoError(b, err)

	b.Run("raw-reader", func(b *testing.B) {
		for range b.N {
			var wg sync.WaitGroup
			for p, end := range ends {
				wg.Go(func() {
					r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: testOffsetsTopic, Partition: p, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond})
					defer r.Close()
					for off := int64(0); off < end; {
						m, err := r.FetchMessage(context.Background())
						if err != nil {
							b.Error(err)
							return
						}
						off = m.Offset + 1
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})

	// raw-fetch is the same protocol path as Log without copying or applying anything.
	b.Run("raw-fetch", func(b *testing.B) {
		for range b.N {
			var wg sync.WaitGroup
			for p, end := range ends {
				wg.Go(func() {
					for off := int64(0); off < end; {
						res, err := cl.Fetch(context.Background(), &kafka.FetchRequest{Topic: testOffsetsTopic, Partition: p, Offset: off, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond})
						if err != nil {
							b.Error(err)
							return
						}
						for {
							r, err := res.Records.ReadRecord()
							if err != nil {
								break
							}
							off = r.Offset + 1
						}
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})

	b.Run("view", func(b *testing.B) {
		var bytesPerKey float64
		for range b.N {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			view := newOffsetsView()
			l, err := kafkaio.NewBorrowingLog(kafkaio.Options{Brokers: brokers}, testOffsetsTopic, view.apply)
			require.NoError(b, err)
			l.OnLoad(view.expect)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- l.Run(ctx) }()
			require.NoError(b, l.WaitReady(testContext(b)))
			b.StopTimer()
			cancel()
			require.NoError(b, <-done)
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			live := 0
			for _, c := range view.conns {
				live += c.live
			}
			require.Equal(b, n, live)
			bytesPerKey = (float64(after.HeapAlloc) - float64(before.HeapAlloc) - float64(payload)) / n
			runtime.KeepAlive(view)
			b.StartTimer()
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(bytesPerKey, "overhead-B/key")
	})
}

// BenchmarkWrite compares Store.Write of 100,000 records with a bare kafka.Writer writing the same
// messages to the same partitions, with kafka-go's defaults and with a 1 ms batch timeout.
func BenchmarkWrite(b *testing.B) {
	const n = 100_000
	brokers := startKafka(b)
	createConnectTopics(b, brokers)
	s, err := New(Options{Brokers: brokers, ConfigTopic: testConfigTopic, OffsetsTopic: testOffsetsTopic})
	require.NoError(b, err)
	defer func() { require.NoError(b, s.Close()) }()
	recs := benchRecords(n, 3)
	msgs := make([]kafka.Message, n)
	for i, r := range recs {
		msgs[i] = kafka.Message{Topic: testOffsetsTopic, Partition: PartitionFor(r.Key, 25), Key: r.Key, Value: r.Value}
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	}

	b.Run("store", func(b *testing.B) {
		for range b.N {
			require.NoError(b, s.Write(context.Background(), testOffsetsTopic, recs))
		}
		report(b)
	})
	for _, bare := range []struct {
		name    string
		timeout time.Duration
	}{{name: "bare-writer-defaults"}, {name: "bare-writer-1ms", timeout: time.Millisecond}} {
		b.Run(bare.name, func(b *testing.B) {
			w := &kafka.Writer{Addr: kafka.TCP(brokers...), Balancer: explicitBalancer{}, RequiredAcks: kafka.RequireAll, BatchTimeout: bare.timeout}
			defer w.Close()
			for range b.N {
				require.NoError(b, w.WriteMessages(context.Background(), msgs...))
			}
			report(b)
		})
	}
}

// BenchmarkOffsetsViewApply applies 1,000,000 records of 1,000 connectors (as a load hands them
// over: chunks of 256 records of one partition) to an empty view: the view's share of a load.
func BenchmarkOffsetsViewApply(b *testing.B) {
	const n, chunk = 1_000_000, 256
	// The records' bytes in one array, in partition order as the fetches of one partition
	// bring them, so that the input holds no pointer per record for the collector to mark.
	type rec struct{ partition, key, value, end int }
	order := make([]rec, n)
	for i := range order {
		order[i] = rec{partition: PartitionFor(fmt.Appendf(nil, `["other-%04d",{"filename":"/data/file-%08d.txt"}]`, i%1000, i), 25), key: i}
	}
	slices.SortStableFunc(order, func(a, b rec) int { return cmp.Compare(a.partition, b.partition) })
	var data []byte
	recs := make([]rec, n)
	for k, o := range order {
		i := o.key
		r := rec{partition: o.partition, key: len(data)}
		data = fmt.Appendf(data, `["other-%04d",{"filename":"/data/file-%08d.txt"}]`, i%1000, i)
		r.value = len(data)
		data = fmt.Appendf(data, `{"position":%d}`, i)
		r.end = len(data)
		recs[k] = r
	}
	msgs := make([]kafka.Message, chunk)
	// grow: the index grows through the load; expect: it is sized first (Log.OnLoad).
	for _, expect := range []bool{false, true} {
		b.Run(map[bool]string{false: "grow", true: "expect"}[expect], func(b *testing.B) {
			for range b.N {
				v := newOffsetsView()
				if expect {
					v.expect(n)
				}
				for i := 0; i < n; i += chunk {
					batch := msgs[:min(chunk, n-i)]
					for j := range batch {
						r := recs[i+j]
						batch[j] = kafka.Message{Partition: r.partition, Key: data[r.key:r.value:r.value], Value: data[r.value:r.end:r.end]}
					}
					v.apply(batch)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
