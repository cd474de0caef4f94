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
// It reads A and B and changes nothing.
package plan
