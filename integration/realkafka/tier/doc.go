// Package tier is the real-Kafka tier's one test harness, which every real-tier test package
// (realkafka's own tests, compat39, cdc, secured) uses, and the core proofs that every Kafka
// version the tier covers runs (proofs.go, migration.go, cutover.go, rollback.go).
//
// A package's TestMain builds its Env from a Config and calls Env.Main: the run (a folder for
// data and logs, a name part unique to the run, what to stop at the end; run.go), the jars, the
// agent binary build, and the peers the package's tests share (env.go). By default those are a
// broker (or an external cluster), a Connect worker and a main agent; the package's differences
// are Config fields, not copies: Debezium's plugins, a PostgreSQL and a MariaDB server (cdc;
// Env.RequireMariaDB skips a test where MariaDB is not installed), another program the tier
// needs and a prebuilt agent binary (secured), peers of the package's own (Config.Peers: cdc's
// cluster A, secured's two secured clusters) and a start at the first Env.RequirePeers instead
// of before the tests (Config.Lazy).
//
// What the tests call, for every package alike:
//   - the peers and the one way to skip (env.go, skip.go): RequirePeers, which every test that
//     uses them calls first, and SkipOrFail, for a test that cannot run here: a skip, or a
//     failure under RequireEnv=1 (OFFSETAGENT_REQUIRE_REAL_KAFKA), never t.Skip;
//   - Connect's REST API (rest.go): Rest, RestOK, WaitState (with TasksOptional for
//     MirrorMaker 2's source; it restarts once a connector Connect's config snapshot race left
//     FAILED, docs/connect-internals.md, "A connector started from a snapshot without its
//     config"), OffsetsOf, SortedOffsetsOf, RequireOffsets, ConnectorStatus;
//   - MirrorMaker 2 as connectors on a worker: MM2Config, MirrorSource, MirrorCheckpoint;
//   - workers and clusters (env.go): StartWorker, StartWorkerOn, StartTestWorker (stopped when
//     the test ends, StopAfter), StartBroker, StartCluster, StartClusterB, ConnectNames, Unique;
//   - agents (agent.go): StartAgent and StartAgentOn (ready before they return), LaunchAgent
//     (returns at once; Readyz, WaitReady, LogText, ExitErr), Publish, Create, PublishAs (as
//     another principal), Offsetagent (a CLI run), CleanEnv;
//   - topics and files (topics.go): ReadTopic, OffsetRecords, WaitValues, CreateTopic(On),
//     Produce(To), GroupOffsets, WriteFile, Lines.
//
// It takes plain values (Config); the test packages' TestMain read the environment. Its helpers
// take a testing.TB and fail the test on an error: they are for tests only. What starts a
// process is package realkafka's (the fixture); when and how a test uses it is this package's.
package tier
