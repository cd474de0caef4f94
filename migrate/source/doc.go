// Package source reads a Kafka Connect cluster, A, and chooses what moves from it.
//
// A is read one of two ways, or both. Through its Kafka cluster (TopicsSource): its config
// and offsets topics through offsetstore's views, and a sink's consumer group, whose offsets
// are proven complete or the sink is refused (read_sinks.go: Kafka hides the topics a
// principal may not Describe). Through its REST API (internal/connectrest): the listing,
// each connector's config, state and offsets, and the stop. Open gives an A, the open
// connection; its Cluster is A's identity (its Kafka cluster's id, Connect topics, what its
// REST API answered), which B's prechecks compare with B's, so that neither side imports
// the other. When A's REST API does not answer at all and --stop-source is given, a
// connector is stopped de facto when no live worker of A holds it, as the Connect groups on
// A's Kafka cluster say (WorkersOfA, workersofa.go); the verification asks again.
//
// What moves is the Selection's: include and exclude patterns, renames, and the edits of a
// config (EditConfig, Kept); a selection that matches nothing is an error naming what there
// was (NoneSelectedError, UnmatchedError). With --stop-source each connector's state before
// the stop is recorded in a compacted topic on B (StateStore, States), and ResolveStates
// decides the state each connector is created in on B.
//
// It writes nothing to A but the stop, and nothing to B but the state records.
package source
