// Package cutover is the cutover report of a migration, and its verification on B.
//
// New builds the report (Cutover) from a migration's report (apply.Report): per connector
// moved (Connector) and partition (Partition), the offset on A, the offset placed on B, how
// it was translated, and a Verdict, each waiting at first; ReadHistoryOnA adds what A's
// offsets topic holds of each moved source (history.go: the commits that tell an offset set
// back on A from A's output it never committed). Read reads a report back.
//
// Verify (verify.go) follows B's commits until each partition is decided or its timeout:
// a source's first offset committed on B after the placed one must follow it in its family's
// order (order.go), or, better evidence, its change events on B are judged where its
// family's offset says they stand (records.go, families.go); a sink's group on B must be past
// the offset placed (sinks.go); a connector stopped on A without A's REST API is asked about
// again, whether a worker of A holds it (WorkersCheck). Its progress is told as Waiting.
package cutover
