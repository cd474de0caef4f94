// Package integration holds offsetagent's end-to-end tests: a real Kafka protocol peer (the
// in-process kfake broker by default, testcontainers' Kafka with OFFSETAGENT_TEST_DOCKER=1, an
// external cluster with OFFSETAGENT_TEST_BROKERS), the agent running in-process, requests
// published in both CloudEvents modes, and assertions on the exact records in Connect's
// topics, the sink groups, the result events and the metrics.
package integration
