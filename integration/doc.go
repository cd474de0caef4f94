// Package integration holds offsetagent's end-to-end tests: a real Kafka protocol peer (the
// in-process kfake broker by default, testcontainers' Kafka with OFFSETAGENT_TEST_DOCKER=1, an
// external cluster with OFFSETAGENT_TEST_BROKERS), the agent running in-process, requests
// published in both CloudEvents modes, and assertions on the exact records in Connect's
// topics, the sink groups, the result events and the metrics.
//
// testcontainers is linked only by a build with the docker tag (docker_test.go), which make
// test adds when OFFSETAGENT_TEST_DOCKER=1; without the tag that setting fails the tests that
// would start the container (nodocker_test.go). So a run without Docker does not compile its
// hundred-odd packages, twice.
//
// Tests run one after another unless they call t.Parallel: those that do have brokers of their
// own and spend most of their time waiting out a timeout they set (a request's deadline and
// giveup, a migration run's timeout and grace, a retry's backoff, the lag's measurement
// interval), so that the waits of make test's race-detector run overlap (its -parallel).
// Tests that keep the CPU busy (large inputs, agent processes built with the race detector)
// stay serial: side by side they would only share the machine's cores, and slow the
// deadline-bound tests beside them. The crash matrices are the exception: their points run six
// at a time, each with topics and a group of its own.
package integration
