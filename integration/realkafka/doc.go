// Package realkafka runs Apache Kafka and Kafka Connect as the tests' peers: a single-node KRaft
// broker (combined mode) and Kafka Connect distributed workers, started as JVM processes on
// loopback with free ports and temporary directories, from jars that the pinned Maven project in
// this folder resolves once into a cache folder outside the repository. With JarsConfig.Debezium
// the same project also unpacks Debezium's PostgreSQL and MariaDB source and JDBC sink plugin
// archives into a plugin.path folder (PluginPath) that WorkerConfig.PluginPath gives a worker;
// StartPostgres runs a PostgreSQL server with logical decoding and StartMariaDB a MariaDB server
// writing a row-based binary log, both from the machine's packages, for the change data capture
// tests of package cdc.
//
// The package is a fixture only: it starts processes from plain values and leaves every test
// policy (which peers a package shares, its run folder and names, when a process stops, what
// skips the tier, how a test waits) to package tier, the harness that every real-tier test
// package uses. Its folder also holds what the fixture needs to run: the pinned Maven project
// (pom.xml, src/) that jars.go embeds and resolves, and cmd/realkafka, the command that starts
// the fixture by hand for a demo, a benchmark, or package integration's run against a real
// broker (`make demo-real`, `make bench-real`, `make test-integration-real`).
//
// The package's own tests are offsetagent's proof against the system it writes for, on
// DefaultVersion: the agent binary writes a connector born at chosen offsets, and the real
// worker's own REST API shows the connector in the asked state at the asked offsets; the records
// Connect's own PATCH /connectors/NAME/offsets writes are compared byte for byte with the
// agent's, and the messages of its validation rules with the agent's failed results. The core
// proofs are tier's (proofs.go), which package compat39 runs on Apache Kafka 3.9.1 too; cdc and
// secured are the change data capture and secured variants.
//
// The fixture takes plain values; the tests' TestMain (through tier) and cmd/realkafka read the
// environment: OFFSETAGENT_KAFKA_VERSION (the Kafka version, default DefaultVersion),
// OFFSETAGENT_KAFKA_CACHE (the jar cache folder), OFFSETAGENT_TEST_BROKERS (an external cluster
// instead of the JVM broker), OFFSETAGENT_TEST_DOCKER=1 (testcontainers' Kafka instead of the
// JVM broker; only a build with the docker tag links testcontainers, and make test adds the tag
// with that setting) and OFFSETAGENT_REQUIRE_REAL_KAFKA=1 (a missing java or mvn, or anything else a
// test of the tier would skip for, fails the tests instead of skipping them: tier.SkipOrFail).
//
// The JVMs start cheaply: workers find plugins with plugin.discovery=service_load (no classpath
// scan), and every JVM maps a class-data-sharing archive its kind wrote on its first run in the
// cache folder (cds.go; OFFSETAGENT_JVM_CDS=off turns it off). A worker's start-up went from 12
// to 4 CPU-seconds.
package realkafka
