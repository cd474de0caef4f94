// Package migrate moves connectors from one Kafka Connect cluster (A) to another (B): it reads
// A's connectors (their configs, target states and offsets) from A's internal topics and sink
// groups, or from A's Connect REST API, selects and edits them (include, exclude, rename, set,
// unset, map-value), optionally stops them on A behind a real stop barrier, builds one KIP-995 create body
// per connector, publishes the bodies as create requests to the agents running on B and
// collects their results into a report.
//
// Runs are idempotent: request ids derive from the migration id, the connector's name on B
// and what the request creates (a connector, or its offsets alone), and B's result topic is
// read first, so a connector that already succeeded is not published
// again and one whose last attempt failed is published under the next attempt's id. Before
// StopSource stops a connector, its state is recorded in a compacted topic on B (states.go), and
// every run of the migration creates it in that state, not in the STOPPED a re-run finds on A;
// a connector whose state cannot be known (STOPPED without a record, or a REST status that does
// not tell the target state) is refused unless InitialState gives one.
//
// Before anything is stopped, each selected connector is checked for what would go wrong on B
// (hazards.go), among them the state its family keeps outside Connect's topics (family.go:
// Debezium's schema history, signal and heartbeat topics, its logical name and PostgreSQL's
// slot; a sink's own progress); a logical name changed by the edits re-keys a Debezium
// connector's offsets. Across a replication policy that renames topics, what a sink derives
// from its topics' names (tables, indices, paths, its transforms' output) stays as on A through
// a transform that gives its records back their names on A, or the sink is refused
// (topicnames.go); every setting the migration changes for B is listed in the report.
//
// Nothing is stopped or published before B's agents are checked through what they advertise
// in their group membership (agents.go): that they write B's Connect cluster, publish to the
// result topic the run reads and accept the run's source.
//
// Outcomes are true: every request carries a deadline (events.ExtensionDeadline, Timeout after
// its wave starts publishing: with StopSource the selection is stopped on A and published in
// waves, each bounded by Timeout, waves.go) that B's agents honour, and the end of the wait for
// its result (events.ExtensionGiveUp, the deadline plus Grace) by which B's agents finish its
// writes, less a reserve for the result, or roll them back; a connector is reported failed only
// once its request can no longer be carried out (B refused the write, or no result by the
// deadline plus Grace and no connector record of it in B's config topic, read from the giveup
// on, when no write of the request is in flight: giveup.go); each request
// of a batch is judged by its own write, and one whose write may have appended it is awaited.
// An interrupted run reports its requests in flight pending, except a dry run's: it creates
// nothing.
//
// Every migration that is not a dry run gets a cutover report (Migrate returns it with the report; cutover.go): per
// moved connector and partition, the offset on A, the offset placed on B and how it was
// translated. With MigrateOptions.Verify, VerifyCutover then reads on B, read committed and
// bounded by Verify, what each connector committed after the offsets placed: a source's first
// new offset in its connector's offsets topic, compared in its family's order
// (cutover_order.go), and for a Debezium source the change events it produced on B and A's
// found there, each placed against the offset as its family's offset says (cutover_records.go,
// cutover_families.go; A's offsets topic tells a set-back offset from A's uncommitted output:
// cutover_history.go), a sink's group offsets and the log start of its topics on B; each
// partition is verified, waiting, mismatch, unordered or replay, with the evidence it rests
// on. VerifyCutover runs again on a report read back with ReadCutover.
//
// Reading flags and the environment, terminals and exit codes are left to the caller (cmd/).
// Sink offsets are carried as read (SinkOffsetsCopy), left out (SinkOffsetsNone) or
// translated through MirrorMaker 2's checkpoints on B (SinkOffsetsTranslate with MM2Sinks, which
// also renames the sink's topics and fails a connector whose offsets are not all exact unless
// replay is allowed, and refuses before anything is stopped a sink whose group MirrorMaker 2
// will not checkpoint: mm2health.go); a caller can plug another mode in through
// Options.SinkTranslator.
//
// A B whose connectors the Strimzi operator manages (MigrateOptions.Strimzi, strimzi.go) gets
// the offsets only, through requests with "create": "offsets-only", and the caller gets one
// KafkaConnector manifest per connector (kafka.strimzi.io/v1 unless Target.APIVersion
// asks for v1beta2; checked against its version's rules before it is written,
// strimzi_check.go): the operator deletes every connector no resource
// declares, so it, not the agent, must create them. A connector that B has already with
// another config is refused before anything is stopped (its manifest would replace that
// config), and secret values can go to a Kubernetes Secret the manifests reference
// (Target.Secret, strimzi_secret.go: a value with config provider placeholders keeps
// them, and each part of it in clear text is referenced in its place, since Connect reads a
// provider's value once; events.SecretSpans says which parts those are). Applying the manifests completes the
// migration; VerifyStrimzi (verify.go) checks afterwards that B runs each connector with the
// offsets placed.
package migrate
