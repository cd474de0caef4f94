package offsetstore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// ReadConnectorConfigs reads a Connect cluster's config topic to its end once, through the view
// a Store keeps of it, and returns every connector's config by name: the connectors a worker
// reading the topic now would have, each with its properties as stored (the last good ones of
// a connector whose latest record is malformed). It needs Read on the topic, and no offsets
// topic.
func ReadConnectorConfigs(ctx context.Context, opts kafkaio.Options, topic string) (map[string]map[string]string, error) {
	v, err := readConfigView(ctx, opts, topic)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, name := range v.names() {
		if props, ok := v.connectorConfig(name); ok {
			out[name] = props
		}
	}
	return out, nil
}

// ReadConfigRecords reads a Connect cluster's config topic to its end once, as
// ReadConnectorConfigs does, and returns what it holds of each of keys (connector-<name> or
// target-state-<name>): whether its latest record is live, and the request whose mark it
// carries.
func ReadConfigRecords(ctx context.Context, opts kafkaio.Options, topic string, keys []string) (map[string]ConfigRecord, error) {
	v, err := readConfigView(ctx, opts, topic)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ConfigRecord, len(keys))
	for _, k := range keys {
		out[k] = v.record(k)
	}
	return out, nil
}

// readConfigView reads topic, a config topic, to its end once into a view.
func readConfigView(ctx context.Context, opts kafkaio.Options, topic string) (*configView, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	v := newConfigView(opts.Logger)
	l, err := kafkaio.NewLog(opts, topic, v.apply)
	if err != nil {
		return nil, fmt.Errorf("read config topic %q: %w", topic, err)
	}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(lctx) }()
	ready := make(chan error, 1)
	go func() { ready <- l.WaitReady(lctx) }()
	select {
	case err = <-ready:
	case err = <-done:
		done <- err
		if err == nil {
			err = ctx.Err()
		}
	}
	cancel()
	<-done
	if err != nil {
		return nil, fmt.Errorf("read config topic %q: %w", topic, err)
	}
	return v, nil
}
