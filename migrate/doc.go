// Package migrate moves connectors from one Kafka Connect cluster (A) to another (B), often
// across MirrorMaker 2, and is the front door of the packages that do each stage of it. Its
// own code maps the public options (Options for Export, MigrateOptions for Migrate) onto each
// stage's options and runs the stages in their order; no stage imports it.
//
// The stages, in the order a migration runs them, each a package under migrate/ that imports
// only the ones before it (layers_test.go holds the graph):
//
//   - fleet: what every stage shares about a connector on its way from A to B (Connector as
//     read from A, its states, the offsets' shapes and a Debezium connector's Rekey), the
//     secret keys of a config, a Connect cluster's identity (Cluster), migration ids,
//     MirrorMaker 2's settings (MM2, SinkOffsetsMode) and ErrPrecheck. It does no I/O.
//   - source: reading A (its Connect topics and sink groups, or its REST API; its worker
//     groups when its REST API is down), the Selection and its edits, the state records of
//     --stop-source (States, on B) and the state each connector is created in.
//   - target: B before anything is published: its prechecks (Open), B's agents judged by
//     what they advertise, and A and B compared by identity, never by address.
//   - strimzi: KafkaConnector manifests for an operator-managed B, written from plain
//     values, checked against the CRD's rules, their secrets in a Secret; VerifyStrimzi.
//   - hazard: what would go wrong on B per connector, found before anything is stopped:
//     settings that point at A, state kept outside Connect, B's plugins, MirrorMaker 2's
//     health, names derived from topics across a renaming policy, pipelines cut apart; and
//     ConfigOnB, the one config a connector will have on B.
//   - plan: the selection named on B, checked, with the repairs planned and every setting
//     the migration itself changes listed (Edit): what the run will do (Build).
//   - apply: doing the plan: the stop barrier on A, waves, KIP-995 bodies from the offsets
//     read at the stop (a sink's copied or translated through MirrorMaker 2's checkpoints),
//     publishing to B's agents with a deadline and a giveup, results, and the report
//     (Report, Entry, Outcome).
//   - cutover: the cutover report built from the run's report, and its verification on B,
//     partition by partition, with the evidence each verdict rests on.
//   - rollback: the way back for the connectors of a cutover report (refusals, the stop on B
//     behind a barrier it is given, B's progress carried to A, A resumed, B's connector
//     deleted when safe); it imports none of the stages.
//
// Runs are idempotent: request ids derive from the migration id, the connector's name on B
// and what the request creates, and B's result topic is read first, so a connector that
// already succeeded is not published again and one whose last attempt failed is published
// under the next attempt's id. Outcomes are true: a connector is reported failed only once
// its request can no longer be carried out, and an interrupted run reports its requests in
// flight pending. Every migration that is not a dry run returns its cutover report with
// its report (Migrate); MigrateOptions.Verify verifies it on B at once.
//
// A migration runs in one go (Migrate), or in two steps a person reviews between: Plan is a
// dry run written as a plan file (plan.File: A's and B's identities, the settings and
// selection, and per connector its config on B with every edit shown, secrets hidden, and a
// fingerprint of A's config), and Apply carries out exactly that file later. Apply reads A
// and B again and builds the plan again for the file's connectors only, before anything is
// stopped; another A or B, or edits that come out otherwise, refuse the whole run, and a
// connector whose config or state on A, or whose presence on B, is not what the file saw is
// skipped at StepDrift, naming what changed (plan.Drift), while the others move. Apply runs
// under the file's migration id, so applying the same file again continues the migration as
// running Migrate again does.
//
// Reading flags and the environment, terminals, what a person reads (tables, progress) and
// exit codes are the caller's (cmd/offsetagent): this package and the stages write JSON and
// tell progress through typed values.
package migrate
