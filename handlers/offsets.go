package handlers

import (
	"context"
	"fmt"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Offsets returns a connector's current offsets in the GET /connectors/{name}/offsets shape
// (docs/connect-internals.md, "Listing offsets"). The type comes from the connector's config when
// it exists; for a name with no config (e.g. a deleted connector whose offsets outlived it) source
// offsets win when there are any, else the default sink group connect-<name> is read.
func Offsets(ctx context.Context, store Store, reg *connectors.Registry, offsetsTopic, name string) (*events.ConnectorOffsets, error) {
	if err := store.Sync(ctx, offsetsTopic); err != nil {
		return nil, fmt.Errorf("read offsets topic %q: %w", offsetsTopic, err)
	}
	props, exists := store.ConnectorConfig(name)
	typ := connectors.Source
	group := "connect-" + name
	topics := []string{offsetsTopic}
	if exists {
		typ = reg.TypeOf(props)
		if g := props["consumer.override.group.id"]; g != "" {
			group = g
		}
		if t := props["offsets.storage.topic"]; t != "" && t != offsetsTopic {
			if err := store.Track(ctx, t); err != nil {
				return nil, fmt.Errorf("read connector offsets topic %q: %w", t, err)
			}
			topics = append(topics, t)
		}
	} else if len(store.SourceOffsets(offsetsTopic, name)) == 0 {
		typ = connectors.Sink
	}
	out := &events.ConnectorOffsets{Offsets: []events.ConnectorOffset{}}
	if typ == connectors.Sink {
		gos, err := store.GroupOffsets(ctx, group)
		if err != nil {
			return nil, fmt.Errorf("list offsets of group %q: %w", group, err)
		}
		offsetstore.JavaTopicPartitionOrder(gos)
		for _, g := range gos {
			out.Offsets = append(out.Offsets, SinkOffset(g))
		}
		return out, nil
	}
	lists := make([][]offsetstore.SourceRecord, 0, len(topics))
	for _, t := range topics {
		lists = append(lists, store.SourceOffsets(t, name))
	}
	out.Offsets = unionSourceOffsets(lists...)
	return out, nil
}
