// Package cdc is the real tier's change data capture proof: a PostgreSQL 15 server and a MariaDB
// 10.11 server started from Debian's packages, Debezium's PostgreSQL and MariaDB source
// connectors and its JDBC sink connector installed in a plugin.path folder as an operator
// installs them, Apache Kafka brokers and Kafka Connect workers as JVM processes, and
// MirrorMaker 2 between two clusters, all started by the tests' TestMain (package realkafka's
// fixtures) on loopback and stopped at the end.
//
// The tests show what the use case needs, in numbers: a Debezium connector born through a
// request at the offsets Debezium itself commits streams every change after that point, none
// before it and no snapshot, from the replication slot it is given, in each initial state
// (TestDebeziumBornAtCommittedOffsets); and a whole pipeline (PostgreSQL, Debezium, Kafka, the
// JDBC sink into a second database) moved by `offsetagent migrate` to another cluster across
// MirrorMaker 2 while a writer keeps changing rows, with a clean stop and after a SIGKILL of
// the first cluster's worker, leaves the target equal to the source, counts every change on
// the second cluster's topic and the ones sent twice (TestPipelineMigratedAcrossMirrorMaker2);
// and a Debezium connector whose Kafka signal channel or schema history is on the first
// cluster's brokers is refused before anything stops, and moved with --map-value
// (TestSettingsPointingAtARefusedThenMapped). `migrate --verify` judges moved Debezium sources by
// the change events they produce on B, which sit beside A's in the same topics when B is a
// second Connect cluster on A's Kafka cluster: PostgreSQL connectors verified and, placed before
// A's last transaction, a mismatch (TestVerifyByRecords); MariaDB connectors the same with
// --stop-source, and after A's worker is SIGKILLed in the middle of a transaction (A's REST API
// gone with it: --stop-source judges by A's Connect group, refusing while the dead worker is
// still a member and moving the connector once it has none) a replay that counts exactly the
// changes B produces again, none lost (TestMariaDBMoved).
// `make demo-cdc` runs the pipeline verbosely and prints what an operator checks.
//
// The package has no code of its own beyond its tests. They run on package tier's harness (its
// Env with Config.Debezium, Config.Postgres and Config.MariaDB, cluster A as Config.Peers, and
// its REST, wait, agent and MirrorMaker 2 functions) over package realkafka's fixtures
// (StartPostgres, StartMariaDB, StartBroker, StartWorker with a PluginPath, Jars with Debezium
// set), and read the same environment as realkafka's, plus OFFSETAGENT_POSTGRES_BIN (the folder
// of initdb, postgres and psql; default /usr/lib/postgresql/15/bin) and
// OFFSETAGENT_MARIADB_PREFIX (the folder whose bin or sbin holds mariadbd, mariadb-install-db
// and mariadb; default /usr). Without PostgreSQL the package skips; without MariaDB only its
// tests do (under OFFSETAGENT_REQUIRE_REAL_KAFKA=1 both are failures).
package cdc
