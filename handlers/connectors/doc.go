// Package connectors is the registry of Kafka Connect connector classes and the KIP-875 offset rules
// that apply to them: the generic sink and source checks Connect runs on every PATCH
// /connectors/{name}/offsets body (docs/connect-internals.md, "Checks of an alter, in order"), and
// per class the Go twin of the connector's alterOffsets (docs/connect-internals.md, "alterOffsets")
// or, for connectors without one (Debezium, Confluent JDBC), the rules
// of the offset loader their tasks run at start-up, so that a bad initial offset fails the create request
// instead of the task.
//
// The package only validates and describes. It does not encode offsets or talk to Kafka: callers take
// the validated entries, order partition maps with Class.PartitionOrder (nil: the Java HashMap order,
// offsetstore.JavaHashMapOrder) and write them with offsetstore.
//
// Every failure is an *Error carrying the HTTP status Connect's REST API would answer and Connect's
// exact text where one exists. Where Connect itself would accept an offset that the connector later
// rejects, the text is our own and names the entry and the field.
//
// Each class also says what state it keeps outside Connect's topics (Class.Outside: Debezium's
// logical name, schema history and replication slot, a sink's own progress), which migrate checks
// before moving a connector.
//
// Adding a connector family is one small file with a func returning its []Class, one line in
// builtinFamilies, and a table test.
package connectors
