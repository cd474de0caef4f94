package hazard

import (
	"log/slog"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// checksOn are the hazard checks of opts, with the defaults Export and Migrate give them,
// against an A that reads nothing and B (b).
func checksOn(opts Options, b *B) *Checks {
	if opts.Registry == nil {
		opts.Registry = connectors.Builtin()
	}
	opts.Selection.SetRegistry(opts.Registry)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SinkOffsets == "" {
		opts.SinkOffsets = fleet.SinkOffsetsCopy
	}
	opts.Translated = opts.MM2 != nil
	return NewChecks(opts, source.Unopened(source.Options{Registry: opts.Registry, Logger: opts.Logger}), b)
}

// regexRouterT is Kafka's RegexRouter, spelled out as a config holds it.
const regexRouterT = "org.apache.kafka.connect.transforms.RegexRouter"

// routedChain is a transform chain whose output depends on the record's topic at every step:
// a RegexRouter renaming "orders" to "db_orders", then an InsertField writing the topic into
// the value when a TopicNameMatches predicate matches the routed name.
func routedChain(kv ...string) []string {
	return append([]string{"transforms", "route,tag",
		"transforms.route.type", regexRouterT, "transforms.route.regex", "orders", "transforms.route.replacement", "db_$0",
		"transforms.tag.type", "org.apache.kafka.connect.transforms.InsertField$Value", "transforms.tag.topic.field", "dest",
		"transforms.tag.predicate", "isDb", "predicates", "isDb",
		"predicates.isDb.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "predicates.isDb.pattern", "db_.*"}, kv...)
}
