package migrate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// stopConcurrency bounds the stop barriers making their calls to A at once (the sinks that
// follow their sources too), and, apart, the offsets reads after their stable pauses.
const stopConcurrency = 8

// stopBarriers bounds the stop barriers under way at once (a wave's, or an export's whole
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
// or do not, with stop. A barrier makes its calls to A holding one of stopConcurrency slots
// (stopSlots), as each did when the barriers ran stopConcurrency at a time, but lets it go for
// its stable pause, when it only waits, and reads the offsets after it in a pool of its own
// (stopReads). The barriers of a wave (entries, up to stopBarriers of them) so sleep their
// pauses together: a wave stops in about one StablePause rather than one per stopConcurrency
// connectors (a fleet of 10,000 took 10,000/8 pauses, over 20 minutes). Followers stop
// stopConcurrency at a time.
func (s *source) stopEach(ctx context.Context, entries []*Entry, followers bool, stop func(context.Context, *Connector) error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stopBarriers)
	if followers {
		g.SetLimit(stopConcurrency)
	}
	if s.stopSlots == nil {
		s.stopSlots, s.stopReads = make(chan struct{}, stopConcurrency), make(chan struct{}, stopConcurrency)
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
	// The barrier's calls hold a slot; StopTimeout runs from when it has one, so that the
	// barriers waiting their turn do not spend the connector's.
	release, err := acquire(ctx, s.stopSlots)
	if err != nil {
		return fmt.Errorf("not stopped: %w", err)
	}
	defer func() { release() }()
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
		if err := s.states.record(ctx, c.Name, c.State); err != nil {
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
	release()           // the pause holds no slot: the other barriers call A meanwhile
	release = func() {} // nor does what follows, but for each read
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait until two reads of the offsets agree: %w", ctx.Err())
		case <-time.After(s.opts.StablePause):
		}
		done, err := acquire(ctx, s.stopReads)
		if err != nil {
			return fmt.Errorf("wait until two reads of the offsets agree: %w", err)
		}
		cur, err := read()
		done()
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

// acquire takes one of slots (none when slots is nil: a barrier run alone) and returns the
// function that gives it back, once.
func acquire(ctx context.Context, slots chan struct{}) (func(), error) {
	if slots == nil {
		return func() {}, nil
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-slots }) }, nil
}
