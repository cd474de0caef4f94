//go:build !docker

package tier

import (
	"context"
	"errors"
)

// startContainer stands in for container_docker.go's in a build without the docker tag, which
// does not link testcontainers: OFFSETAGENT_TEST_DOCKER=1 then fails the tier's setup, naming
// the tag, rather than running it against another broker.
func (e *Env) startContainer(context.Context) error {
	return errors.New("OFFSETAGENT_TEST_DOCKER=1: this test binary was built without the docker build tag, " +
		"which links testcontainers (go test -tags docker; make test adds it when OFFSETAGENT_TEST_DOCKER=1)")
}
