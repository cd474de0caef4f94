// Package compat39 runs the real-Kafka tier's core proofs (package tier) on Apache Kafka and
// Kafka Connect 3.9.1, the last 3.x release line, beside package realkafka's tests on
// realkafka.DefaultVersion: one broker and one worker of 3.9.1, the agent writing to that
// worker's topics. Its migration moves connectors from a 3.9.1 cluster to a DefaultVersion one.
package compat39
