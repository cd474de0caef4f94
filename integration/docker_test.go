//go:build docker

// This file links testcontainers, and only a build with the docker tag compiles it: make test
// adds the tag when OFFSETAGENT_TEST_DOCKER=1 (nodocker_test.go stands in for it otherwise), so
// that a run without Docker does not compile testcontainers' dependencies twice, with and
// without the race detector.

package integration

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
)

// containerImage is the Kafka image testcontainers runs; OFFSETAGENT_TEST_KAFKA_IMAGE
// overrides it (the module supports confluentinc/confluent-local and apache/kafka in KRaft).
const containerImage = "confluentinc/confluent-local:7.5.0"

// container is the one Kafka container shared by every test of the run (tests use unique
// topic and group names); TestMain terminates it.
var container struct {
	once    sync.Once
	kc      *tckafka.KafkaContainer
	brokers []string
	err     error
}

// startContainer runs a real Kafka broker in Docker through testcontainers and returns its
// bootstrap addresses. It needs a Docker engine: with OFFSETAGENT_TEST_DOCKER=1 and none
// reachable the test fails rather than silently testing against something else.
func startContainer(t *testing.T) []string {
	t.Helper()
	container.once.Do(func() {
		image := containerImage
		if v := os.Getenv("OFFSETAGENT_TEST_KAFKA_IMAGE"); v != "" {
			image = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		container.kc, container.err = tckafka.Run(ctx, image, tckafka.WithClusterID("offsetagent-test"))
		if container.err == nil {
			container.brokers, container.err = container.kc.Brokers(ctx)
		}
	})
	require.NoError(t, container.err, "OFFSETAGENT_TEST_DOCKER=1 needs a Docker engine")
	return container.brokers
}

func TestMain(m *testing.M) {
	code := m.Run()
	if container.kc != nil {
		_ = testcontainers.TerminateContainer(container.kc)
	}
	os.Exit(code)
}
