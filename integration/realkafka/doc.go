// Package realkafka runs Apache Kafka and Kafka Connect as the tests' peers: a single-node KRaft
// broker (combined mode) and Kafka Connect distributed workers, started as JVM processes on
// loopback with free ports and temporary directories, from jars that the pinned Maven project in
// this folder resolves once into a cache folder outside the repository. With JarsConfig.Debezium
// the same project also unpacks Debezium's PostgreSQL source and JDBC sink plugin archives into a
// plugin.path folder (PluginPath) that WorkerConfig.PluginPath gives a worker, and StartPostgres
// runs a PostgreSQL server with logical decoding from the machine's packages, for the change
// data capture tests of package cdc.
//
// The package's tests are offsetagent's proof against the system it writes for: the agent binary
// writes a connector born at chosen offsets, and the real worker's own REST API shows the
// connector in the asked state at the asked offsets; the records Connect's own
// PATCH /connectors/NAME/offsets writes are compared byte for byte with the agent's, and the
// messages of its validation rules with the agent's failed results. Package tier holds the tests'
// harness and the core proofs; this package's tests run them on DefaultVersion, package
// compat39's on Apache Kafka 3.9.1.
//
// The fixture takes plain values; the test's TestMain and cmd/realkafka read the environment:
// OFFSETAGENT_KAFKA_VERSION (the Kafka version, default DefaultVersion), OFFSETAGENT_KAFKA_CACHE
// (the jar cache folder), OFFSETAGENT_TEST_BROKERS (an external cluster instead of the JVM broker),
// OFFSETAGENT_TEST_DOCKER=1 (testcontainers' Kafka instead of the JVM broker) and
// OFFSETAGENT_REQUIRE_REAL_KAFKA=1 (a missing java or mvn fails the tests instead of skipping them).
//
// The JVMs start cheaply: workers find plugins with plugin.discovery=service_load (no classpath
// scan), and every JVM maps a class-data-sharing archive its kind wrote on its first run in the
// cache folder (cds.go; OFFSETAGENT_JVM_CDS=off turns it off). A worker's start-up went from 12
// to 4 CPU-seconds. The processes a test starts for itself stop when the test ends
// (StopAfter), not with the package.
package realkafka
