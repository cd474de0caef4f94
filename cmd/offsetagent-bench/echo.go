package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offsetagent/offsetagent/events"
)

// The latency scenario's floor and driver are franz-go clients, as close to what Kafka itself
// costs as a Go program gets:
//
//   - the echo (a child process of this binary, -echo) consumes the request topic and, for
//     each record, produces one result record and waits for its acknowledgement: the request
//     id from the record's ce_id header, the type succeeded, a value of two bytes. It decodes
//     nothing. Its publish-to-result time is the floor of any request/result service on
//     this broker: a publish, a consumer's fetch, a produce and the result's consumer.
//   - the driver publishes each request with a franz-go producer (no linger, acks=all, snappy
//     as offsetagent's own publishers send requests) and reads the results with a franz-go
//     consumer, noting when each arrived by its ce_requestid header, for the echo and the
//     agent alike.

// echoConfig is the echo child's configuration, one JSON line on its stdin.
type echoConfig struct {
	Brokers      []string
	RequestTopic string
	ResultTopic  string
}

// serveEcho is the echo child: it prints "ready" once its client is built and echoes until
// stdin closes.
func serveEcho(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench echo: read config: %v\n", err)
		return 1
	}
	var cfg echoConfig
	if err := json.Unmarshal([]byte(line), &cfg); err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench echo: config: %v\n", err)
		return 1
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID("bench-echo"),
		kgo.ConsumeTopics(cfg.RequestTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(cfg.ResultTopic), kgo.ProducerLinger(0))
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench echo: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				res := &kgo.Record{Key: r.Key, Value: []byte("{}"), Headers: []kgo.RecordHeader{
					{Key: events.HeaderRequestID, Value: recordHeader(r, events.HeaderID)},
					{Key: events.HeaderType, Value: []byte(events.TypeCreateSucceeded)},
				}}
				if err := cl.ProduceSync(ctx, res).FirstErr(); err != nil && ctx.Err() == nil {
					fmt.Fprintf(stderr, "offsetagent-bench echo: produce: %v\n", err)
				}
			})
		}
	}()
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, in)
	cancel()
	<-done
	cl.Close()
	return 0
}

// recordHeader is the value of r's header key, nil when it has none.
func recordHeader(r *kgo.Record, key string) []byte {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}

// echoProc is the driver's handle on an echo child.
type echoProc struct {
	*child
}

// startEcho starts an echo child on cfg's topics (which must exist) and waits until it is
// ready.
func startEcho(ctx context.Context, cfg echoConfig) (*echoProc, error) {
	c, err := startChild("echo", "-echo")
	if err != nil {
		return nil, err
	}
	p := &echoProc{child: c}
	b, err := json.Marshal(cfg)
	if err == nil {
		_, err = fmt.Fprintf(p.stdin, "%s\n", b)
	}
	if err == nil {
		err = (&agentProc{child: c}).expect(ctx, "ready")
	}
	if err != nil {
		p.stop(10 * time.Second)
		return nil, err
	}
	return p, nil
}

// franzPublisher publishes requests with a franz-go producer: no linger, acks=all, snappy.
type franzPublisher struct {
	cl *kgo.Client
}

func newFranzPublisher(brokers []string, topic string) (*franzPublisher, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("bench-driver"),
		kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.SnappyCompression()), kgo.ProducerBatchMaxBytes(maxMessageBytes))
	if err != nil {
		return nil, fmt.Errorf("build publisher: %w", err)
	}
	return &franzPublisher{cl: cl}, nil
}

// publish writes msg (a request record built by requestMsg) and waits for its
// acknowledgement.
func (p *franzPublisher) publish(ctx context.Context, msg kafka.Message) error {
	r := &kgo.Record{Key: msg.Key, Value: msg.Value}
	for _, h := range msg.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return p.cl.ProduceSync(ctx, r).FirstErr()
}

// publishAll writes msgs at once (the producer batches them as they go) and waits for every
// acknowledgement.
func (p *franzPublisher) publishAll(ctx context.Context, msgs []kafka.Message) error {
	var mu sync.Mutex
	var first error
	for _, msg := range msgs {
		r := &kgo.Record{Key: msg.Key, Value: msg.Value}
		for _, h := range msg.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return first
}

func (p *franzPublisher) close() { p.cl.Close() }

// watchResultsFranz is watchResults with a franz-go consumer of the result topic; with keep,
// it keeps each result record (resultInfo.raw) instead of decoding it as it arrives.
func watchResultsFranz(ctx context.Context, brokers []string, topic string, keep bool) (*resultWatcher, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("bench-watcher"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, fmt.Errorf("build result consumer: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &resultWatcher{cancel: cancel, keep: keep, got: map[string]resultInfo{}}
	w.closers = append(w.closers, cl.Close)
	w.wg.Go(func() {
		for wctx.Err() == nil {
			fs := cl.PollFetches(wctx)
			fs.EachRecord(func(r *kgo.Record) {
				m := kafka.Message{Topic: r.Topic, Partition: int(r.Partition), Offset: r.Offset, Key: r.Key, Value: r.Value}
				for _, h := range r.Headers {
					m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
				}
				w.note(&m)
			})
		}
	})
	return w, nil
}
