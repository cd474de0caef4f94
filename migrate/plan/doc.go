// Package plan decides what a migration moves and how, before anything is stopped on A.
//
// Build lists A's connectors (source.A), selects them and names them on B by the
// Selection (as KafkaConnector names for an operator-managed B), resolves the state each
// is created in, runs the hazard checks against B (hazard.Checks) and the stop's
// preconditions, and returns the Plan: per connector (Connector) A's connector as read, its
// name on B, the hazards found, the config it will have on B (hazard's ConfigOnB), the
// repairs planned (a sink that follows its sources, a fleet.Rekey of a Debezium
// connector's offsets), and every setting the migration itself changed for B (Edit, listed
// in the report and the cutover report, secrets hidden); and the sinks' groups MirrorMaker 2
// will not checkpoint. For an operator-managed B a connector B already holds with another
// config is refused (strimzi.go, with strimzi.Conflict).
//
// A plan is also a file a person reviews and commits before it is carried out (file.go:
// File, YAML, schema version 1, read strictly: an unknown field or a newer version is an
// error; written with mode 0600). File and filebuild.go give per connector its config on B
// with every difference from A's config listed as a FileEdit with what made it (a rename, a
// --set, a --map-value, MirrorMaker 2's policy, the restore transform, a Kubernetes name), and
// never hold a secret: a secret key's value is shown hidden, a config provider placeholder as
// stored, and a --set of a secret key without its value. Fingerprint (fingerprint.go) is the
// sha256 of A's config in a canonical form where a secret's value is a fixed token, so the
// file holds no hash of a secret either; a change of a secret alone is seen by the offset of
// the connector's record in A's config topic, which Connect writes anew on every change.
//
// Drift (drift.go) compares a plan file with the same connectors planned again now: another
// Kafka cluster on either side, or edits that give another config on B for an unchanged
// connector (another version of this program), refuse the whole plan (IdentityDrift,
// WholePlan); a connector whose config or state on A changed, that A has no more, that a
// check refuses now, or whose name on B another writer took since the plan (judged by the
// request mark of B's record, not by its content: OnB), is refused alone (ConnectorDrift).
// Options.Only narrows a Build to the file's connectors: what was not reviewed never moves.
//
// It reads A and B and changes nothing.
package plan
