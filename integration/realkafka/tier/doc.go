// Package tier is the real-Kafka tier's shared test harness: the peers a test package runs
// against (one broker, one Connect worker, the agent binary and a main agent, all started once
// per package by its TestMain through Main), the helpers its tests call, and the core proofs
// that every Kafka version the tier covers runs (proofs.go). Package realkafka's own tests run
// them on realkafka.DefaultVersion, package compat39 on Apache Kafka 3.9.1.
//
// It takes plain values (Config); the test packages' TestMain read the environment. Its helpers
// take a testing.TB and fail the test on an error: they are for tests only.
package tier
