// Package handlers holds what each request event does: the staged creation of a connector with
// initial offsets (validate_config, validate_offsets, wipe_offsets, write_offsets, write_config,
// in that order, as KIP-995 and our design lay them out) and, in handlers/connectors, the
// per-connector-class offset rules.
//
// A Creator runs one request to its Outcome: the stage reports, the result event data and the
// failure classification. It never publishes results or commits request offsets; the agent
// runtime does that with the Outcome. Errors from Kafka are classified once (kafkaio.Classify): a
// transient error is retried with capped exponential backoff inside the stage, a permanent one
// fails the request. A failed request is cleaned up by the undo of each stage that wrote,
// in reverse order. A request interrupted by the agent's death is rolled back from its intent
// (intent.go) before its connector is worked on again, and before the agent answers a
// redelivery it refuses (Refuse); a rollback is tried until it is done, never given up. It
// undoes only what the request wrote, judged by identity: an intent of another Connect
// cluster is not the agent's to roll back, and a connector another writer created is never
// touched, its offsets included (they carry no mark of their writer): what differs from before
// the request is said, not undone.
//
// The destructive stages write within the request's giveup less the reserve for its result
// (deadline.go): no write begins past it, and each one begun before asks the broker to answer
// by then (its Produce requests' own timeout ends before it, kafkaio.Producer.Write), so that
// no write of the request is in flight when its sender looks at the cluster at the giveup. A
// write answered later (a broker that held it past its timeout) is waited for, and rolled back.
package handlers
