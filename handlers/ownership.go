package handlers

import (
	"context"
	"fmt"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// checkGroupFree refuses, with 409, a sink request whose initial offsets would go to a
// consumer group that is not its own to rewrite: the group of another connector in the config
// view (a sink whose consumer.override.group.id, or connect-<name>, is the same group), or a
// group with live members (someone consumes with it now). The wipe deletes the group and the
// write commits into it, so either would take the offsets of whoever the group belongs to; an
// existing connector that is stopped has no members, and only the config view tells that the
// group is its. It runs at validate_config, after the config topic was read to its end, for
// dry runs too: a plan must not promise what the real run refuses.
func (c *Creator) checkGroupFree(ctx context.Context, j *job) error {
	if j.typ != connectors.Sink || !j.req.Data.HasInitialOffsets {
		return nil // the group is neither wiped nor written
	}
	// The connectors whose group is j.group, from the view's index: reading every
	// connector's config here made each sink request's cost grow with the cluster's
	// connectors (a fleet of thousands moved in one burst paid it squared).
	for _, name := range c.opts.Store.GroupConnectors(j.group) {
		if name == j.name {
			continue
		}
		props, ok := c.opts.Store.ConnectorConfig(name)
		if !ok || c.opts.Registry.TypeOf(props) != connectors.Sink || offsetstore.SinkGroup(name, props) != j.group {
			continue
		}
		return conflict(fmt.Sprintf("Consumer group %s belongs to connector %s: a sink connector's initial offsets may not replace another connector's (set consumer.override.group.id to a group of its own)", j.group, name))
	}
	var g offsetstore.GroupActivity
	if err := c.retry(ctx, func(ctx context.Context) (err error) {
		g, err = c.opts.Store.DescribeGroup(ctx, j.group)
		return err
	}); err != nil {
		return fmt.Errorf("describe group %q: %w", j.group, err)
	}
	if g.Live() {
		return conflict(fmt.Sprintf("Consumer group %s has %d live member(s) (state %s): its offsets belong to the consumers using it; stop them, or set consumer.override.group.id to a group of its own", j.group, g.Members, g.State))
	}
	return nil
}
