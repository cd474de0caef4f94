// Package fleet is what every stage of a migration shares about a connector on its way from
// Kafka Connect cluster A to cluster B, and nothing that one stage alone decides.
//
// A connector is as it was read from A (Connector: its name, stored config, type, state,
// offsets in the KIP-875 shape, a sink's group, and its Problem, the one reason it does not
// move, which any stage may set); its states are REST's spelling (StateRunning, StatePaused,
// StateStopped). The offsets' shapes are the same at every stage: a sink's partition and
// offset (SinkTopicPartition, SinkOffset, KafkaOffset), and the re-key of a Debezium
// connector's offsets to its logical name on B (Rekey: decided by the hazard check of its
// family, applied to the offsets placed, undone by Inverse on the way back).
//
// The rules every stage applies the same way live here too: which keys of a config hold a
// secret and how a message quoting the config is scrubbed of them (Secret, Scrub), a Connect
// cluster's identity, judged by what it is and not by how it was reached (Cluster: its Kafka
// cluster's id, its Connect topics, what its REST API answered), a migration's id and the
// source of its requests (DeriveMigrationID, ValidMigrationID, RequestSourcePrefix),
// MirrorMaker 2's settings for sinks moved across it (MM2, SinkOffsetsMode), and the error
// of a run refused before anything was stopped or published (ErrPrecheck).
//
// No stage names a setting of the run as its caller's user gives it: a message that names one
// (a refusal, a hazard's fix, a report's note, a log record) is a Text whose Setting, Fix and
// Next arguments stay typed until the reader's Words spell them (Text.Spell, SpellError,
// SpellIn for a report's JSON; GoWords, the library's own words, for its tests). Error is an
// error with a Text and the Fixes that answer it. The command line spells them as its flags
// (cmd/offsetagent, words.go). These words live in internal/wording, below mm2, whose
// MirrorMaker 2 findings name settings of the run too; fleet keeps them under the same names
// (wording.go: aliases of its types, its settings and its functions).
//
// Every I/O is the stages': fleet reads and writes nothing.
package fleet
