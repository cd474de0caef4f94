package migrate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// stopConcurrency bounds the connectors stopped on A at once.
const stopConcurrency = 8

// stopPrecheck refuses a stop that could not be a real barrier, before anything is stopped:
// read through REST only, a sink's consumer group on A is out of sight, and its tasks may
// still be members committing offsets after the status says STOPPED (a zombie task), so the
// offsets read would not be final.
func (s *source) stopPrecheck(selected []*Connector) error {
	if s.topics != nil {
		return nil
	}
	var sinks []string
	for _, c := range selected {
		if c.Problem == "" && c.Type == connectors.Sink {
			sinks = append(sinks, c.Name)
		}
	}
	if len(sinks) == 0 {
		return nil
	}
	return precheckf("--stop-source for sink connectors (%s) needs --from-brokers: without A's brokers the stop barrier cannot see "+
		"whether the sink's consumer group on A still has members committing offsets", strings.Join(sinks, ", "))
}

// stopAll stops every selected, readable connector on A and waits for its stop barrier. A
// connector whose barrier is not reached gets a Problem and is skipped.
func (s *source) stopAll(ctx context.Context, entries []*Entry) {
	s.stopEach(ctx, entries, false, s.stopOne)
	// The sinks that follow their sources (--sink-follows-source) stop once their sources
	// have stopped and they have consumed all those wrote on A.
	s.stopEach(ctx, entries, true, s.stopFollower)
}

// stopEach stops, stopConcurrency at a time, the entries' connectors without a Problem that
// follow sources (followers) or do not, with stop.
func (s *source) stopEach(ctx context.Context, entries []*Entry, followers bool, stop func(context.Context, *Entry) error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stopConcurrency)
	for _, e := range entries {
		c := e.connector
		if c.Problem != "" || (e.follows() != nil) != followers {
			continue
		}
		g.Go(func() error {
			if err := stop(gctx, e); err != nil {
				c.Problem = fmt.Sprintf("stop on A: %v", err)
				s.opts.Logger.Warn("stop on A", "connector", c.Name, "err", err)
			}
			return nil
		})
	}
	_ = g.Wait()
}

// stopOne is the stop barrier of docs/migration.md, "Stop on A and create on B": PUT /stop
// (answered before the tasks stop and commit), then wait until the status is STOPPED with no
// tasks and, for a sink, its group on A has no members, then read the offsets until two reads
// StablePause apart agree.
// c.State keeps the state A had before the stop, and is recorded in the migration's state
// topic before the stop (RUNNING or PAUSED; a STOPPED connector is not recorded) (a later run finds the connector STOPPED and takes the recorded state);
// c.Offsets gets the settled offsets, e how the stop was established (stoppedBy, recordAt).
func (s *source) stopOne(ctx context.Context, e *Entry) error {
	c := e.connector
	ctx, cancel := context.WithTimeout(ctx, s.opts.StopTimeout)
	defer cancel()
	var how string
	if s.restDown != nil {
		// Nobody can stop it through A's REST API: it is stopped when no worker of A holds
		// it (workersofa.go), or refused untouched.
		at, ok := s.topics.store.ConnectorRecordAt(c.Name)
		if !ok {
			at = -1
		}
		e.recordAt = at
		var err error
		if how, err = s.workers().noneHolds(ctx, c.Name, at); err != nil {
			return err
		}
	}
	// A connector STOPPED already is not changed by the stop: nothing to record (a run finding
	// it STOPPED with no record treats it as this one did). A state recorded already (by an
	// earlier run: resolveStates took it from there) stays as it is.
	if c.State != "" && c.State != StateStopped {
		if err := s.states.record(ctx, c.Name, c.State); err != nil {
			return fmt.Errorf("not stopped: %w", err)
		}
	}
	tick := time.NewTicker(s.opts.StopPoll)
	defer tick.Stop()
	wait := func(what string, done func() (bool, error)) error {
		for {
			ok, err := done()
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("wait until %s: %w", what, ctx.Err())
			case <-tick.C:
			}
		}
	}
	if s.restDown == nil {
		if err := s.rest.stop(ctx, c.Name); err != nil {
			return err
		}
		err := wait("the status is STOPPED with no tasks", func() (bool, error) {
			state, tasks, err := s.rest.status(ctx, c.Name)
			return err == nil && state == StateStopped && tasks == 0, nil
		})
		if err != nil {
			return err
		}
		how = stoppedByREST
	} else {
		s.opts.Logger.Warn("stopped on A without A's REST API: no live worker of A holds it; do not restart A's workers with it "+
			"(its target state on A is unchanged: they would resume it on A); stop or delete it there once they are back", "connector", c.Name)
	}
	if c.Type == connectors.Sink && s.topics != nil {
		err := wait(fmt.Sprintf("group %q has no members", c.Group), func() (bool, error) {
			n, err := s.topics.groupMembers(ctx, c.Group)
			return err == nil && n == 0, nil
		})
		if err != nil {
			return err
		}
	}
	read := func() ([]events.ConnectorOffset, error) {
		if s.topics != nil {
			return s.topics.offsets(ctx, c)
		}
		return s.rest.offsets(ctx, c)
	}
	prev, err := read()
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait until two reads of the offsets agree: %w", ctx.Err())
		case <-time.After(s.opts.StablePause):
		}
		cur, err := read()
		if err != nil {
			return err
		}
		if sameOffsets(prev, cur) {
			c.Offsets, e.stoppedBy = cur, how
			return nil
		}
		prev = cur
	}
}
