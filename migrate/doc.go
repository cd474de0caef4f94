// Package migrate moves connectors from one Kafka Connect cluster (A) to another (B): it reads
// A's connectors (their configs, target states and offsets) from A's internal topics and sink
// groups, or from A's Connect REST API, selects and edits them (include, exclude, rename, set,
// unset), optionally stops them on A behind a real stop barrier, builds one KIP-995 create body
// per connector, publishes the bodies as create requests to the agents running on B and
// collects their results into a report.
//
// Runs are idempotent: request ids derive from the migration id and the connector's name on B,
// and B's result topic is read first, so a connector that already succeeded is not published
// again and one whose last attempt failed is published under the next attempt's id.
//
// Reading flags and the environment, terminals and exit codes are left to the caller (cmd/).
// Sink offsets are carried as read (SinkOffsetsCopy), left out (SinkOffsetsNone) or
// translated through MirrorMaker 2's checkpoints on B (SinkOffsetsTranslate with MM2Sinks, which
// also renames the sink's topics and fails a connector whose offsets are not all exact unless
// replay is allowed); a caller can plug another mode in through Options.SinkTranslator.
package migrate
