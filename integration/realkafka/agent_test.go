package realkafka_test

import (
	"context"
	"testing"

	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// agentProc is an `offsetagent run` process (tier.Agent).
type agentProc struct {
	*tier.Agent
	env []string
}

func wrapAgent(a *tier.Agent) *agentProc { return &agentProc{Agent: a, env: a.Env} }

// startAgent runs the agent binary with its own request, result and intent topics plus extra
// (which names the Connect topics), and returns once /readyz answers 200. It is stopped after
// the tests.
func startAgent(ctx context.Context, name string, extra map[string]string) (*agentProc, error) {
	a, err := env.StartAgent(ctx, name, extra)
	if err != nil {
		return nil, err
	}
	return wrapAgent(a), nil
}

func (a *agentProc) stop() { a.Stop() }

// result is a result event as `offsetagent publish --wait` prints it.
type result = tier.Result

const (
	typeSucceeded = tier.TypeSucceeded
	typeFailed    = tier.TypeFailed
)

// publish sends a request through `offsetagent publish --wait` and returns its result.
func (a *agentProc) publish(t *testing.T, body any) result {
	t.Helper()
	return a.Publish(t, body)
}

// create publishes a creation request and requires it to succeed.
func (a *agentProc) create(t *testing.T, body any) result {
	t.Helper()
	return a.Create(t, body)
}
