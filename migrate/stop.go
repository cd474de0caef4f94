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

// stopConcurrency bounds the calls to A (REST and Kafka) the stop barriers of a wave make at
// once, and the sinks that follow their sources stopped at once.
const stopConcurrency = 8

// stopBarriers bounds the stop barriers waiting at once (a wave's, or an export's whole
// selection): each is a goroutine and a ticker.
const stopBarriers = 1024

// stopPrecheck refuses a stop that could not be a real barrier, before anything is stopped:
// read through REST only, a sink's consumer group on A is out of sight, and its tasks may
// still be members committing offsets after the status says STOPPED (a zombie task), so the
// offsets read would not be final.
func (s *source) stopPrecheck(entries []*Entry) error {
	if s.topics != nil {
		return nil
	}
	var sinks []string
	for _, e := range entries {
		if e.connector.Problem == "" && e.connector.Type == connectors.Sink {
			sinks = append(sinks, e.Name)
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

// stopEach stops the entries' connectors without a Problem that follow sources (followers)
// or do not, with stop. The connectors that follow none (stopOne) all wait for their barriers
// at once (up to stopBarriers: entries is one wave, or an export's selection): only their calls to A take one of
// stopConcurrency slots, and a barrier's pauses (the status polls' ticks, StablePause) hold
// none, so a wave stops in about one StablePause rather than one per stopConcurrency
// connectors (a fleet of 10,000 took 10,000/8 StablePauses, over 20 minutes). Followers stop
// stopConcurrency at a time.
func (s *source) stopEach(ctx context.Context, entries []*Entry, followers bool, stop func(context.Context, *Connector) error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stopBarriers)
	if followers {
		g.SetLimit(stopConcurrency)
	}
	if s.stopCalls == nil {
		s.stopCalls = make(chan struct{}, stopConcurrency)
	}
	for _, e := range entries {
		c := e.connector
		if c.Problem != "" || (c.follows != nil) != followers {
			continue
		}
		g.Go(func() error {
			if err := stop(gctx, c); err != nil {
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
// c.Offsets gets the settled offsets.
func (s *source) stopOne(ctx context.Context, c *Connector) error {
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
		c.recordAt = at
		var err error
		if how, err = s.workers().noneHolds(ctx, c.Name, at); err != nil {
			return err
		}
	}
	// A connector STOPPED already is not changed by the stop: nothing to record (a run finding
	// it STOPPED with no record treats it as this one did).
	if c.State != "" && c.State != StateStopped && !c.stateRecorded {
		if err := s.callA(ctx, func() error { return s.states.record(ctx, c.Name, c.State) }); err != nil {
			return fmt.Errorf("not stopped: %w", err)
		}
		c.stateRecorded = true
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
		if err := s.callA(ctx, func() error { return s.rest.stop(ctx, c.Name) }); err != nil {
			return err
		}
		err := wait("the status is STOPPED with no tasks", func() (bool, error) {
			var state string
			var tasks int
			err := s.callA(ctx, func() (err error) {
				state, tasks, err = s.rest.status(ctx, c.Name)
				return err
			})
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
			var n int
			err := s.callA(ctx, func() (err error) {
				n, err = s.topics.groupMembers(ctx, c.Group)
				return err
			})
			return err == nil && n == 0, nil
		})
		if err != nil {
			return err
		}
	}
	read := func() (offs []events.ConnectorOffset, err error) {
		err = s.callA(ctx, func() (err error) {
			if s.topics != nil {
				offs, err = s.topics.offsets(ctx, c)
			} else {
				offs, err = s.rest.offsets(ctx, c)
			}
			return err
		})
		return offs, err
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
			c.Offsets, c.stoppedBy = cur, how
			return nil
		}
		prev = cur
	}
}

// callA runs call, a call to A of a stop barrier, in one of the stopCalls slots (at most
// stopConcurrency at once); without slots (a barrier run alone) it just runs it.
func (s *source) callA(ctx context.Context, call func() error) error {
	if s.stopCalls == nil {
		return call()
	}
	select {
	case s.stopCalls <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.stopCalls }()
	return call()
}
