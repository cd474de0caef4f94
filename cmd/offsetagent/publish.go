package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

func cmdPublish(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	wait := fs.Bool("wait", false, "wait for the result event, print it and exit non-zero when it failed")
	timeout := fs.Duration("timeout", 60*time.Second, "how long --wait waits")
	mode := fs.String("mode", "binary", "CloudEvents Kafka binding mode: binary or structured")
	dry := fs.Bool("dry-run", false, "ask for a plan instead of acting (CloudEvent extension dryrun=true)")
	source := fs.String("source", "/offsetagent/cli", "the request's CloudEvent source")
	connectTimeout := connectTimeoutFlag(fs)
	if code, done := parseArgs(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: offsetagent publish [--wait] [--timeout D] [--mode binary|structured] [--dry-run] FILE|-")
		return 2
	}
	var body []byte
	var err error
	if fs.Arg(0) == "-" {
		body, err = io.ReadAll(stdin)
	} else {
		body, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: read request body: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, conns, err := clientConfig(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 2
	}
	if err := reach(ctx, stderr, conns.Transport, *connectTimeout, 500*time.Millisecond,
		cluster{"the Kafka cluster", "OFFSETAGENT_BROKERS", cfg.Brokers, nil, cfg.Security.Principal()}); err != nil {
		fmt.Fprintf(stderr, "offsetagent publish: %v\n", err)
		return 1
	}
	res, err := publish(ctx, cfg, conns, body, events.RequestOptions{Mode: events.Mode(*mode), Source: *source, DryRun: *dry}, *wait, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 1
	}
	if res == nil {
		return 0
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(res)
	if res.Type == events.TypeCreateFailed {
		return 1
	}
	return 0
}

// publish sends body as a request event and, with wait, returns its result.
func publish(ctx context.Context, cfg agent.Config, conns *clientconfig.Connections, body []byte, opts events.RequestOptions, wait bool, timeout time.Duration) (*printableResult, error) {
	if opts.ID == "" {
		opts.ID = uuid.NewString()
	}
	msg, err := events.RequestMessage(cfg.RequestTopic, body, opts)
	if err != nil {
		return nil, fmt.Errorf("build request event: %w", err)
	}
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: cfg.Brokers, Transport: conns.Transport, Principal: cfg.Security.Principal()})
	cl.Timeout = 10 * time.Second
	var from map[int]int64
	if wait {
		if from, err = endOffsets(ctx, cl, cfg.ResultTopic); err != nil {
			return nil, err
		}
	}
	codec, err := cfg.RequestCompression.Codec()
	if err != nil {
		return nil, err
	}
	// BatchBytes: kafka-go refuses a message above it by its size before compression (1 MiB
	// by default); the agent takes requests up to MaxRequestBytes, plus their headers.
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: conns.Transport, Compression: codec,
		BatchBytes: int64(cfg.MaxRequestBytes) + 1<<20}
	defer w.Close()
	msg.Topic = cfg.RequestTopic
	if err := w.WriteMessages(ctx, msg); err != nil {
		return nil, fmt.Errorf("publish request to %q: %w", cfg.RequestTopic, err)
	}
	if !wait {
		return nil, nil
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := waitResult(wctx, cfg, conns, from, opts.ID)
	if err != nil {
		return nil, err
	}
	p, err := toPrintable(m)
	if err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	return &p, nil
}
