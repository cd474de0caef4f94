package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// The transit floors run in a child process of this binary in place of the agent: a reader
// per request-topic partition (as the agent's, MaxWait 1.5 s, room for the largest request)
// and, for each request, one result record through the store's producer. Nothing is decoded
// beyond the record's headers. With WriteN set, a request whose id starts with "bulk" also
// writes WriteN MirrorMaker 2 records for connector WriteName, encoded before "ready", through
// Store.Write as the agent writes its offsets: the request's transit plus the writes, with no
// decoding, validation or encoding.

// transitConfig is the transit child's configuration, one JSON line on its stdin.
type transitConfig struct {
	Brokers      []string
	RequestTopic string
	ResultTopic  string
	Partitions   int
	OffsetsTopic string
	WriteName    string
	WriteN       int
}

// serveTransit is the child's side: it prints "ready" once its records are encoded and serves
// until stdin closes.
func serveTransit(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench transit: read config: %v\n", err)
		return 1
	}
	var cfg transitConfig
	if err := json.Unmarshal([]byte(line), &cfg); err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench transit: config: %v\n", err)
		return 1
	}
	var recs []offsetstore.Record
	for _, m := range mm2Records("", cfg.WriteName, cfg.WriteN) {
		recs = append(recs, offsetstore.Record{Key: m.Key, Value: m.Value, Partition: m.Partition})
	}
	store, err := offsetstore.New(offsetstore.Options{Brokers: cfg.Brokers,
		ConfigTopic: cfg.OffsetsTopic + "-unread", OffsetsTopic: cfg.OffsetsTopic})
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent-bench transit: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for p := range cfg.Partitions {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Topic: cfg.RequestTopic, Partition: p,
			MinBytes: 1, MaxBytes: maxMessageBytes + 1<<20, MaxWait: 1500 * time.Millisecond, QueueCapacity: 4})
		wg.Go(func() {
			defer r.Close()
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					continue
				}
				if err := transitOne(ctx, store, &cfg, &m, recs); err != nil {
					fmt.Fprintf(stderr, "offsetagent-bench transit: %v\n", err)
				}
			}
		})
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, in)
	cancel()
	wg.Wait()
	return 0
}

// transitOne answers one request: the writes when it asks for them, retried on transient
// errors as the agent's stages retry them (a fresh topic's leaders may not be known yet), then
// its result, failed if the writes failed.
func transitOne(ctx context.Context, store *offsetstore.Store, cfg *transitConfig, m *kafka.Message, recs []offsetstore.Record) error {
	id, _ := events.Header(m, events.HeaderPrefix+"id")
	typ, body := events.TypeCreateSucceeded, []byte("{}")
	var werr error
	if len(recs) > 0 && strings.HasPrefix(id, "bulk") {
		werr = kafkaio.Retry(ctx, transitBackoff, nil, func(ctx context.Context) error {
			return store.Write(ctx, cfg.OffsetsTopic, recs)
		})
		if werr != nil {
			werr = fmt.Errorf("write %d records: %w", len(recs), werr)
			typ, body = events.TypeCreateFailed, []byte(fmt.Sprintf("%q", werr.Error()))
		}
	}
	res := kafka.Message{Topic: cfg.ResultTopic, Partition: -1, Key: m.Key, Value: body, Headers: []kafka.Header{
		{Key: events.HeaderRequestID, Value: []byte(id)},
		{Key: events.HeaderType, Value: []byte(typ)},
	}}
	err := kafkaio.Retry(ctx, transitBackoff, nil, func(ctx context.Context) error {
		return errors.Join(store.Producer().Produce(ctx, []kafka.Message{res})...)
	})
	if err != nil {
		return errors.Join(werr, fmt.Errorf("publish result of %q: %w", id, err))
	}
	return werr
}

// transitBackoff spaces the transit child's retries.
var transitBackoff = kafkaio.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, Attempts: 10}

// transitProc is the driver's handle on a transit child.
type transitProc struct {
	*child
	watcher *resultWatcher
}

// startTransit creates cfg's topics, starts a transit child and watches its results.
func (e *env) startTransit(ctx context.Context, cfg transitConfig) (*transitProc, error) {
	for _, t := range []struct {
		name  string
		parts int
	}{{cfg.RequestTopic, cfg.Partitions}, {cfg.ResultTopic, cfg.Partitions}, {cfg.OffsetsTopic, 25}} {
		if err := e.createTopic(ctx, t.name, t.parts); err != nil {
			return nil, err
		}
	}
	if cfg.WriteN > 0 {
		w := bareWriter(e.brokers, cfg.OffsetsTopic)
		err := warmTopic(ctx, w, cfg.WriteN)
		w.Close()
		if err != nil {
			return nil, fmt.Errorf("warm up the offsets topic: %w", err)
		}
	}
	c, err := startChild("transit", "-transit")
	if err != nil {
		return nil, err
	}
	p := &transitProc{child: c}
	b, err := json.Marshal(cfg)
	if err == nil {
		_, err = fmt.Fprintf(p.stdin, "%s\n", b)
	}
	if err == nil {
		err = (&agentProc{child: c}).expect(ctx, "ready")
	}
	if err == nil {
		p.watcher, err = watchResults(ctx, e.brokers, cfg.ResultTopic, cfg.Partitions, false)
	}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *transitProc) stop() {
	if p.watcher != nil {
		p.watcher.close()
	}
	p.child.stop(30 * time.Second)
}

func (p *transitProc) pid() int { return p.cmd.Process.Pid }
