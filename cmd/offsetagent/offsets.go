package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func cmdOffsets(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("offsets", flag.ContinueOnError)
	connectTimeout := connectTimeoutFlag(fs)
	if code, done := parseArgs(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: offsetagent offsets [--connect-timeout D] NAME")
		return 2
	}
	name := fs.Arg(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, conns, err := clientConfig(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 2
	}
	if err := reach(ctx, stderr, conns.Transport, *connectTimeout, 500*time.Millisecond,
		cluster{"the Kafka cluster", "OFFSETAGENT_BROKERS", cfg.Brokers, nil, cfg.Security.Principal()}); err != nil {
		fmt.Fprintf(stderr, "offsetagent offsets: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	offs, err := readOffsets(ctx, cfg, conns, name)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent offsets: %s on %s: %v\n", name, strings.Join(cfg.Brokers, ","), err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(offs)
	return 0
}

// readOffsets loads a view of Connect's topics and returns name's offsets.
func readOffsets(ctx context.Context, cfg agent.Config, conns *clientconfig.Connections, name string) (*events.ConnectorOffsets, error) {
	store, err := offsetstore.New(offsetstore.Options{
		Brokers: cfg.Brokers, ConfigTopic: cfg.ConfigTopic, OffsetsTopic: cfg.OffsetsTopic,
		Transport: conns.Transport, Dialer: conns.Dialer, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- store.Run(ctx) }()
	select {
	case err := <-errc:
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("read Connect topics %q and %q: %w", cfg.ConfigTopic, cfg.OffsetsTopic, err)
	case <-waitReady(ctx, store):
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// A reader that stopped with an error: its cause, not "log is not running".
	select {
	case err := <-errc:
		if err != nil {
			return nil, fmt.Errorf("read Connect topics %q and %q: %w", cfg.ConfigTopic, cfg.OffsetsTopic, err)
		}
	default:
	}
	return handlers.Offsets(ctx, store, connectors.Builtin(), cfg.OffsetsTopic, name)
}

func waitReady(ctx context.Context, s *offsetstore.Store) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		_ = s.WaitReady(ctx)
		close(ch)
	}()
	return ch
}
