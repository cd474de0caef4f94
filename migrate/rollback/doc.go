// Package rollback is the way back of a migration: for the connectors of a cutover report, it
// stops each on B, carries B's progress back to A where A can take it, resumes each on A in
// the state it had before the move, and deletes it on B only when that is safe. Without
// Options.Execute it only reads A and B and says, per connector and partition, what it would
// do (`migrate rollback REPORT`); with it, it does that (`--execute`), at most MaxParallel
// connectors at a time (docs/migration.md, "Rollback").
//
// # Refusals first
//
// A connector is left exactly as it is, named with why (outcome refused), when it is not the
// one the report moved or not in the state the report says: a name the report does not list
// (Options.Names narrows the input; a pending or failed connector of the migration is never in a
// cutover report); absent on A; absent on B while A is still STOPPED (B's progress went with
// it); a connector record on B that does not carry the mark of the request this migration
// published for it (offsetstore.ConfigRecord's Writer.IsRequest): someone else created or
// rewrote it; A not STOPPED although the migration stopped it; the state topic's record of its
// state before the move disagreeing with the report's, or neither giving one; B operator-managed
// (the operator would undo a stop made through the REST API: the reason names the steps); A's
// Connect older than 3.6, which has no PATCH of offsets (the partitions then list what would be
// carried, for a hand carry). A check that could not read what it needs fails the connector
// (outcome failed) and changes nothing.
//
// # Stop, carry, resume, delete
//
// B's connector is stopped behind a barrier (Options.StopOnB, migrate's stop barrier run
// against B): its progress is what the barrier read once nothing commits any more. A's
// connector is STOPPED, so Connect's own PATCH /connectors/{name}/offsets on A's REST API takes
// B's progress, partition by partition, by how the migration placed it:
//
//   - a source: B's offsets as they are (Connect's source offsets are positions in the external
//     system, the same on A and B), with a re-keyed partition (Rekey) put back under A's key.
//     Partitions only A has stay as they are. A's connector refusing them (a 4xx: its
//     alterOffsets says no) leaves them not carried: A resumes at its own stop offsets and
//     produces again what B produced from there;
//   - a sink copied (one Kafka cluster, or a link that keeps offsets: translation "as read"):
//     B's committed offset as it is;
//   - a sink across MirrorMaker 2 (exact, replay, missing): mm2.Translator.Back, which finds
//     the topic on A by the replication policy and the offset on A by the cuts below B's
//     committed offset (MirrorMaker 2's offset syncs, and the report's exact pairs of offset on
//     A and offset placed) and the record B's sink consumed last, looked for on A; a partition it
//     cannot place is not carried, and A replays what B delivered since the cutover (Replay
//     counts it: B's committed offset minus the offset placed);
//   - a sink that followed its sources (--sink-follows-source): nothing to carry; A's offsets
//     are right as they are.
//
// A sink partition whose offset on A is below A's log start (retention deleted records while B
// ran) is a skip, counted, when A's brokers are given (Options.AKafka); without them it is
// "not checked", never silent. After the PATCH, A's offsets are read back and must equal what
// was sent. Then A is resumed in its state before the move (RUNNING: resume; PAUSED: pause;
// STOPPED: left) and its status waited for (Options.ResumeTimeout); one that does not get there
// is kept on B. Last, B's connector is deleted, only when all held: the connector is this
// migration's, stopped behind the barrier, its progress on A (or nothing to carry), A in its
// state before the move, and no request of the migration for it pending on B
// (Options.Pending; without it nothing is deleted). Deleting removes neither B's source
// offsets nor its sink group: Connect keeps them.
//
// A connector A was never stopped for (a migration without --stop-source) gets neither carry
// nor resume: A kept its own progress and B's output duplicated A's; it is only stopped and
// deleted on B.
//
// # Idempotence
//
// A run again after an interruption does what is left: a connector absent on B with A in its
// state before the move is already rolled back; one stopped on B and resumed on A goes on with
// the delete; one stopped on both is carried again (the PATCH writes the same offsets).
//
// # The input, from the cutover report
//
// The package reads no report file: the caller maps the cutover report (migrate's Cutover,
// CutoverConnector, CutoverPartition) onto Connector and Partition:
//
//	Connector.Name            <- connectors[].name
//	Connector.TargetName      <- connectors[].target_name
//	Connector.Type            <- connectors[].type
//	Connector.Group           <- connectors[].group (a sink's group on B)
//	Connector.StoppedOnA      <- connectors[].stopped_on_a (with stopped_on_a_by "rest": a stop
//	                             without A's REST API left A's target state unchanged)
//	Connector.StateOnA        <- connectors[].state_on_a (added by apply, design 3.2)
//	Connector.MigrationID     <- migration_id
//	Connector.RequestSource   <- the migration's request source: "/offsetagent/migrate/" + migration_id
//	Connector.RequestID       <- connectors[].request_id (added by apply)
//	Connector.Rekey           <- connectors[].rekey (added by apply)
//	Connector.OperatorManaged <- operator_managed (top level, added by apply)
//	Partition.Partition       <- partitions[].partition_on_b when set, else partitions[].partition
//	Partition.OnA             <- partitions[].offset_on_a
//	Partition.Placed          <- partitions[].offset_placed
//	Partition.Translation     <- partitions[].translation ("as read", "exact", "replay",
//	                             "missing"); FollowedSources for a sink that followed its sources
//	Options.StateTopic        <- state_topic (added by apply)
//	Options.MM2.Policy        <- mm2 (source_alias, target_alias, policy, separator)
//
// Options.StopOnB and Options.Pending are migrate's stop barrier and its result topic's view,
// which live with the apply stage; this package takes them as functions so that it imports
// no stage.
//
// # Output
//
// The Report: per connector its Outcome (rolled_back, would_roll_back, refused, failed,
// kept_on_b), the state of A, whether it was deleted on B, and per partition B's progress,
// what A resumes at, the verdict (carried, not_carried, skip) with the replay or skip count;
// WriteFile writes it as JSON with mode 0600, and ExitCode maps it to the exit status (0 all
// rolled back with nothing replayed or skipped, 4 rolled back with replays or skips
// announced, 1 any refused, failed or kept on B).
package rollback
