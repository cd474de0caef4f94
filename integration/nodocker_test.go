//go:build !docker

package integration

import "testing"

// startContainer stands in for docker_test.go's in a build without the docker tag, which does
// not link testcontainers: OFFSETAGENT_TEST_DOCKER=1 then fails the test, naming the tag, rather
// than running it against another broker.
func startContainer(t *testing.T) []string {
	t.Helper()
	t.Fatal("OFFSETAGENT_TEST_DOCKER=1: this test binary was built without the docker build tag, " +
		"which links testcontainers (go test -tags docker; make test adds it when OFFSETAGENT_TEST_DOCKER=1)")
	return nil
}
