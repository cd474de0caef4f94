// Package apply carries out a plan: it stops the connectors on A, reads their offsets,
// builds their KIP-995 bodies and publishes them to B's agents, and reports what became of
// each.
//
// Applier (New) works on the report's entries of a plan (EntriesOf: one Entry per
// connector, carrying the plan's Connector). With --stop-source the stop barrier on A
// (stop.go) stops each connector and waits until A no longer runs it, through A's REST API or,
// when nothing answers there, as A's Connect groups show (StoppedBy); the connectors go in
// waves (waves.go: the stops of the next few waves run ahead, their stable pauses
// overlapping, and the waves are published as one stream, each once it is stopped and the
// one before it published, within Concurrency requests in flight across them), a sink that
// follows its sources drained with them (follow.go). A body
// (body.go) is built from the plan's config on B and the offsets read at the stop, a
// Debezium connector's re-keyed by the plan's fleet.Rekey, a sink's copied or translated
// through MirrorMaker 2's checkpoints (translate.go; SinkTranslator for another
// translation); an operator-managed B gets offsets-only requests (PrepareStrimzi). The
// requests are published with a deadline to the agents on B's request topic (publish.go),
// their results read from the result topic (results.go, Results), and a request without a
// result by its giveup is judged by what B's config topic holds (giveup.go). Request ids
// (requests.go) carry the migration id and the attempt, so that a re-run continues.
//
// The Report (report.go: Entry, Outcome, WriteJSON, WriteBodies) is the record of the run,
// and Progress is told of each step as it happens.
package apply
