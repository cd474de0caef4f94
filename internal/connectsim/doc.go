// Package connectsim serves a Kafka Connect worker's REST API over a Connect cluster's own
// topics, with no worker: no connector and no task runs. It is the Connect cluster of `make
// demo-migrate`, of tests that need a Connect REST API on the embedded broker, and of the fleet
// benchmark's migration of thousands of connectors; the real tier proves it answers as a real
// worker does where the two should agree (integration/realkafka, TestConnectSimMatchesWorker).
//
// What it holds is what the topics hold, read through offsetstore's views as the agent reads
// them: the config topic (connectors, their configs and target states), the offsets topics
// (a source connector's offsets: the worker's offset.storage.topic and a connector's own
// offsets.storage.topic), a sink connector's consumer group (consumer.override.group.id, else
// connect-<name>), and, when it is given, the status topic's topic records (KIP-558). Nothing
// else: a connector's status is its target state (STARTED is RUNNING, PAUSED, STOPPED) with
// no task, since none runs; its info lists no task.
//
// What it writes is what a worker writes, byte for byte, to the same topics, so that a real
// worker reading them (or offsetagent's agent) sees Connect's own records:
//   - PUT /connectors/{name}/stop: commit-<name> with no task ({"tasks":0}), then
//     target-state-<name> STOPPED, as DistributedHerder.stopConnector writes them;
//   - PUT pause and resume: target-state-<name> PAUSED or STARTED, in the two-field form of
//     docs/connect-internals.md, "Target states";
//   - DELETE /connectors/{name}: tombstones of connector-<name> and target-state-<name>;
//   - PUT /connectors/{name}/config and POST /connectors: connector-<name> (POST with
//     initial_state writes target-state-<name> first, KIP-980's order, "Write order");
//   - PATCH and DELETE /connectors/{name}/offsets, only while the connector is STOPPED (Connect
//     3.6+): a source connector's records encoded by offsetstore.EncodeOffsets in Java's
//     HashMap order (Connect's PATCH round-trips the maps through its converter) after the
//     KIP-875 checks and the connector class's alterOffsets twin (handlers/connectors), to
//     the connector's offsets topic and the worker's (docs/connect-internals.md,
//     "Connector-specific offsets topics (KIP-618)"); a sink connector's committed offsets
//     through offsetstore's admin commit (no leader epoch, empty metadata), its reset by
//     deleting the group (docs/connect-internals.md, "Sink connector offsets").
//
// Reads answer from the views, as a worker answers from its snapshot; a connector the views
// do not hold is looked for again after reading the config topic to its end, so that one an
// agent created a moment ago is found, and every write reads it to its end first, as a
// worker's leader does. A call never scans a topic: the views are kept by tailing the topics,
// and a connector's offsets are found by its name (offsetstore's index).
//
// Errors answer in Connect's shape, {"error_code": <status>, "message": "<text>"}, with
// Connect's status and text (docs/connect-internals.md, "The REST API's answers"). The
// plugins are the ones Config names, typed (source or sink) and versioned; a connector
// whose class is not among them has type "unknown", and validate and create refuse that
// class as Connect does. Validating an installed class answers no error: connectsim has no
// ConfigDef.
//
// Left to callers: serving HTTP (a Sim is an http.Handler), running tasks, and anything that
// needs them (task statuses and configs, restarts that do something, the status topic's
// connector and task records).
package connectsim
