// Package hazard finds what would go wrong on Kafka Connect cluster B, per connector, before
// anything on A is stopped, and changes nothing anywhere.
//
// Its input is one Subject per selected connector (A's connector as read, its name on B),
// and Checks runs every check on them against A (source.A) and B (B: B's brokers and its
// Connect REST API, nil for an export, which has no B). Each check adds Hazards with the fix
// it knows; a refusing one gives the connector its Problem, so that it is skipped with
// nothing stopped:
//
//   - settings that still point at A once on B (pointsat.go), judged by which Kafka cluster
//     their addresses answer as, by cluster id (identity.go), with --map-value and --keep-a;
//   - state a connector family keeps outside Connect's topics (family.go: Debezium's schema
//     history, slots, signals, heartbeats; a logical name the move must change decides a
//     fleet.Rekey of the offsets);
//   - B's plugins and B's validate of the config (plugins.go);
//   - MirrorMaker 2's health for sinks moved across it (mm2health.go: the groups it will not
//     checkpoint are Blocked);
//   - across a renaming replication policy, what a sink derives from its topics' names
//     (topicnames.go, topicnames_families.go): a RegexRouter first in its chain on B that
//     gives records back their names on A (TopicRestore), or a refusal;
//   - a source and a sink that the policy would cut apart on B (pipeline.go), refused, or
//     moved together with --sink-follows-source (Following).
//
// ConfigOnB (config.go) is the one config a connector will have on B, which the body, the
// manifest and every check that compares or judges B's config share.
package hazard
