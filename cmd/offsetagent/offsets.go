package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func cmdOffsets(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: offsetagent offsets NAME")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, conns, err := clientConfig(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	offs, err := readOffsets(ctx, cfg, conns, args[0])
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(offs)
	return 0
}

// readOffsets loads a view of Connect's topics and returns name's offsets.
func readOffsets(ctx context.Context, cfg agent.Config, conns *agent.Connections, name string) (*events.ConnectorOffsets, error) {
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
		return nil, fmt.Errorf("read Connect topics: %w", err)
	case <-waitReady(ctx, store):
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
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
