package handlers

import (
	"context"
	"fmt"
)

// Claims make the requests for one connector take turns across lanes and replicas: a request
// claims its connector's name before anything else in validate_config, and only the holder of
// the claim runs its stages. The agent keeps claims in its intent topic, so Kafka's order of
// the claim records decides between replicas (docs/architecture.md, "One request per
// connector at a time").
type Claims interface {
	// Claim records that request (source, id) works on connector name. It returns nil when the
	// request holds the claim (now, or already from an earlier delivery of the same request),
	// and the holder otherwise; a request that did not get the claim leaves none behind.
	Claim(ctx context.Context, name, source, id string) (*ClaimHolder, error)
}

// ClaimHolder names the request that holds a connector's claim.
type ClaimHolder struct {
	RequestID     string
	RequestSource string
}

// claim takes the claim of j's connector, or fails with a 409 that names the request holding
// it: Connect's own answer to a second create of one connector is a 409 too.
func (c *Creator) claim(ctx context.Context, j *job) error {
	if c.opts.Claims == nil || j.name == "" {
		return nil
	}
	var holder *ClaimHolder
	if err := c.retry(ctx, func(ctx context.Context) (err error) {
		holder, err = c.opts.Claims.Claim(ctx, j.name, j.req.Source, j.req.ID)
		return err
	}); err != nil {
		return fmt.Errorf("claim connector %q: %w", j.name, err)
	}
	if holder != nil {
		return conflict(fmt.Sprintf("Connector %s already exists: request %s from source %q is creating it",
			j.name, holder.RequestID, holder.RequestSource))
	}
	return nil
}
