package apply

import (
	"context"
	"errors"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// StopBarrier runs the stop barrier of a migration (stopOne: PUT stop, the status STOPPED with
// no tasks, a sink's group with no members, two equal reads of the offsets StablePause apart)
// against the Connect cluster on reads, and returns the offsets it settled on. A rollback runs
// it against B (on opened with B's REST API and topics), with c the connector as named there.
// Nothing is recorded in a state topic: c.State is ignored (the state to resume is A's, kept
// by the migration). opts gives StopTimeout, StablePause and StopPoll.
func StopBarrier(ctx context.Context, opts Options, on *source.A, c fleet.Connector) ([]events.ConnectorOffset, error) {
	if on.RESTDown() != nil {
		return nil, errors.New("no Connect REST API to stop the connector through")
	}
	c.State, c.Offsets = "", nil // nothing to record: stopOne records a state other than STOPPED or ""
	ap := &Applier{opts: opts, a: on}
	if err := ap.stopOne(ctx, &Entry{Name: c.Name, Connector: &c}, func() {}); err != nil {
		return nil, err
	}
	if c.Offsets == nil {
		c.Offsets = []events.ConnectorOffset{}
	}
	return c.Offsets, nil
}
