//go:build docker

package tier

import (
	"context"
	"fmt"

	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
)

// startContainer runs testcontainers' apache/kafka of the tier's version as its broker. Only a
// build with the docker tag links testcontainers (make test adds it when
// OFFSETAGENT_TEST_DOCKER=1; container_nodocker.go stands in for this file otherwise).
func (e *Env) startContainer(ctx context.Context) error {
	kc, err := tckafka.Run(ctx, "apache/kafka:"+e.Cfg.Version)
	if err != nil {
		return fmt.Errorf("start the Kafka container: %w", err)
	}
	e.AtExit(func() { _ = testcontainers.TerminateContainer(kc) })
	e.Brokers, err = kc.Brokers(ctx)
	return err
}
