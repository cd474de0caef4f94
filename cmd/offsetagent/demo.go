package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// The seed example: KIP-995's own, a FileStream source born at position 30 of test.txt.
const demoRequest = `{
  "name": "file-src-1",
  "config": {
    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
    "file": "test.txt",
    "topic": "test-topic",
    "tasks.max": "1"
  },
  "initial_offsets": [
    {"partition": {"filename": "test.txt"}, "offset": {"position": 30}}
  ]
}`

// An invalid request: FileStream positions must be non-negative.
const demoInvalidRequest = `{
  "name": "file-src-2",
  "config": {
    "connector.class": "FileStreamSource",
    "file": "other.txt",
    "topic": "test-topic"
  },
  "initial_offsets": [
    {"partition": {"filename": "other.txt"}, "offset": {"position": -5}}
  ]
}`

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	if code, done := noFlags("demo", args, stdout, stderr); done {
		return code
	}
	if err := demo(context.Background(), stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "offsetagent demo: %v\n", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b, err := startEmbedded(embeddedAddr)
	if err != nil {
		// Something already listens on 9092: any free loopback port does for the demo.
		if b, err = startEmbedded("127.0.0.1:0"); err != nil {
			return err
		}
	}
	defer b.Close()
	fmt.Fprintf(stdout, "== embedded broker on %s\n", b.Addr())

	var cfg agent.Config
	if cfg, err = loadConfig(ctx); err != nil {
		return err
	}
	cfg.Brokers = []string{b.Addr()}
	cfg.CreateConnectTopics = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	reg := newRegistry()
	a, err := agent.New(cfg, agent.Options{Logger: log, Registry: reg, Gatherer: reg, Version: version, Listener: ln})
	if err != nil {
		return err
	}
	actx, stopAgent := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	defer func() { stopAgent(); <-done }()
	fmt.Fprintf(stdout, "== agent running, metrics on http://%s/metrics\n", ln.Addr())

	conns, err := clientconfig.NewConnections(cfg.Security)
	if err != nil {
		return err
	}
	for _, body := range []string{demoRequest, demoInvalidRequest} {
		// publish retries until the agent created its topics.
		var res *printableResult
		for {
			res, err = publish(ctx, cfg, conns, []byte(body), events.RequestOptions{Source: "/offsetagent/demo"}, true, 30*time.Second)
			if err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n== result event: %s\n", res.Type)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	}
	for _, topic := range []string{cfg.ConfigTopic, cfg.OffsetsTopic} {
		fmt.Fprintf(stdout, "\n== records in %s\n", topic)
		if err := dumpTopic(ctx, cfg, conns, topic, stdout); err != nil {
			return err
		}
	}
	return nil
}

// dumpTopic prints every record of topic: partition, offset, key and value.
func dumpTopic(ctx context.Context, cfg agent.Config, conns *clientconfig.Connections, topic string, w io.Writer) error {
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: cfg.Brokers, Transport: conns.Transport, Principal: cfg.Security.Principal()})
	cl.Timeout = 10 * time.Second
	ends, err := endOffsets(ctx, cl, topic)
	if err != nil {
		return err
	}
	for p := 0; p < len(ends); p++ {
		if ends[p] == 0 {
			continue
		}
		// Committed records only, up to the last stable offset (kafkaio.FetchPartition).
		for off := kafka.FirstOffset; off < ends[p]; {
			f, err := kafkaio.FetchPartition(ctx, cl, topic, p, off, 1<<20, 100*time.Millisecond)
			if err != nil {
				return err
			}
			for _, m := range f.Messages {
				if m.Offset >= ends[p] {
					break
				}
				value := "null (tombstone)"
				if m.Value != nil {
					value = string(m.Value)
				}
				fmt.Fprintf(w, "partition %d offset %d\n  key:   %s\n  value: %s\n", p, m.Offset, m.Key, value)
			}
			off = f.Next
		}
	}
	return nil
}
