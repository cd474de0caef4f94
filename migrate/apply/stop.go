package apply

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// stopConcurrency bounds the stop barriers making their calls to A at once (the sinks that
// follow their sources too), and, apart, the offsets reads after their stable pauses. Each
// call is a round trip that waits on A (a state record, a PUT /stop, a status, a group's
// members, an offsets read); A's REST client makes 8 of its calls at once whatever this is
// (connectrest), the others go to A's and B's brokers. With 8 barriers at a time, the calls
// of the waves stopping ahead bounded a fleet's rate (a wave of 1,000 spent 0.8 s calling A,
// its pause 1 s); 32 halve it.
const stopConcurrency = 32

// stopBarriers bounds the stop barriers under way at once (a wave's, or an export's whole
// selection): each is a goroutine and a ticker.
const stopBarriers = 1024

// stopAll stops every selected, readable connector on A and waits for its stop barrier. A
// connector whose barrier is not reached gets a Problem and is skipped. called, when not nil,
// is called once every barrier of a connector that follows no source has made its calls to A
// (it is in its stable pause, or done): the next wave's barriers may start calling A.
func (ap *Applier) stopAll(ctx context.Context, entries []*Entry, called func()) {
	ap.recordStates(ctx, entries)
	ap.stopEach(ctx, entries, false, ap.stopOne, called)
	// The sinks that follow their sources (--sink-follows-source) stop once their sources
	// have stopped and they have consumed all those wrote on A.
	ap.stopEach(ctx, entries, true, ap.stopFollower, nil)
}

// recordStates records, in one write before any of them is stopped, the state on A of every
// connector of entries whose stop barrier stops it through A's REST API (stopOne records it
// before the stop; found recorded, it writes nothing): the barriers of a wave would otherwise
// each wait for a write of their own. A connector whose state cannot be recorded is not
// stopped. Without A's REST API each barrier records its connector's state once no worker of
// A holds it (stopOne), as before.
func (ap *Applier) recordStates(ctx context.Context, entries []*Entry) {
	if ap.a.RESTDown() != nil {
		return
	}
	states := map[string]string{}
	for _, e := range entries {
		if c := e.Connector; c.Problem.IsZero() && e.follows() == nil && c.State != "" && c.State != fleet.StateStopped {
			states[c.Name] = c.State
		}
	}
	if len(states) == 0 {
		return
	}
	if err := ap.a.RecordStates(ctx, states); err != nil {
		for _, e := range entries {
			if c := e.Connector; states[c.Name] != "" {
				c.Problem = fleet.Textf("stop on A: not stopped: %v", err)
				ap.opts.Logger.Warn("stop on A", "connector", c.Name, "err", err)
			}
		}
	}
}

// stopEach stops the entries' connectors without a Problem that follow sources (followers)
// or do not, with stop. A barrier makes its calls to A holding one of stopConcurrency slots
// (stopSlots), as each did when the barriers ran stopConcurrency at a time, but lets it go for
// its stable pause, when it only waits, and reads the offsets after it in a pool of its own
// (stopReads). The barriers of a wave (entries, up to stopBarriers of them) so sleep their
// pauses together: a wave stops in about one StablePause rather than one per stopConcurrency
// connectors (a fleet of 10,000 took 10,000/8 pauses, over 20 minutes). Followers stop
// stopConcurrency at a time. A barrier calls paused once it has made its calls to A (before
// its stable pause); called, when not nil, is called once every barrier has, or is done.
func (ap *Applier) stopEach(ctx context.Context, entries []*Entry, followers bool, stop func(ctx context.Context, e *Entry, paused func()) error, called func()) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stopBarriers)
	if followers {
		g.SetLimit(stopConcurrency)
	}
	var calling sync.WaitGroup
	for _, e := range entries {
		c := e.Connector
		if !c.Problem.IsZero() || (e.follows() != nil) != followers {
			continue
		}
		calling.Add(1)
		paused := sync.OnceFunc(calling.Done)
		g.Go(func() error {
			defer paused()
			if err := stop(gctx, e, paused); err != nil {
				c.Problem = fleet.Textf("stop on A: %v", err)
				ap.opts.Logger.Warn("stop on A", "connector", c.Name, "err", err)
			}
			return nil
		})
	}
	if called != nil {
		calling.Wait()
		called()
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
// paused is called once the barrier has made its calls to A, before its stable pause.
func (ap *Applier) stopOne(ctx context.Context, e *Entry, paused func()) error {
	c := e.Connector
	// The barrier's calls hold a slot; StopTimeout runs from when it has one, so that the
	// barriers waiting their turn do not spend the connector's.
	release, err := acquire(ctx, ap.stopSlots)
	if err != nil {
		return fmt.Errorf("not stopped: %w", err)
	}
	defer func() { release() }()
	ctx, cancel := context.WithTimeout(ctx, ap.opts.StopTimeout)
	defer cancel()
	var how string
	if ap.a.RESTDown() != nil {
		// Nobody can stop it through A's REST API: it is stopped when no worker of A holds
		// it (workersofa.go), or refused untouched.
		at, ok := ap.a.RecordAt(c.Name)
		if !ok {
			at = -1
		}
		e.RecordAt = at
		var err error
		if how, err = ap.a.NoneHolds(ctx, c.Name, at); err != nil {
			return err
		}
	}
	// A connector STOPPED already is not changed by the stop: nothing to record (a run finding
	// it STOPPED with no record treats it as this one did). A state recorded already (by an
	// earlier run: resolveStates took it from there) stays as it is.
	if c.State != "" && c.State != fleet.StateStopped {
		if err := ap.a.RecordState(ctx, c.Name, c.State); err != nil {
			return fmt.Errorf("not stopped: %w", err)
		}
	}
	tick := time.NewTicker(ap.opts.StopPoll)
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
	if ap.a.RESTDown() == nil {
		if err := ap.a.Stop(ctx, c.Name); err != nil {
			return err
		}
		err := wait("the status is STOPPED with no tasks", func() (bool, error) {
			state, tasks, err := ap.a.Status(ctx, c.Name)
			return err == nil && state == fleet.StateStopped && tasks == 0, nil
		})
		if err != nil {
			return err
		}
		how = StoppedByREST
	} else {
		ap.opts.Logger.Warn("stopped on A without A's REST API: no live worker of A holds it; do not restart A's workers with it "+
			"(its target state on A is unchanged: they would resume it on A); stop or delete it there once they are back", "connector", c.Name)
	}
	if c.Type == connectors.Sink && ap.a.Client() != nil {
		err := wait(fmt.Sprintf("group %q has no members", c.Group), func() (bool, error) {
			n, err := ap.a.GroupMembers(ctx, c.Group)
			return err == nil && n == 0, nil
		})
		if err != nil {
			return err
		}
	}
	read := func() ([]events.ConnectorOffset, error) { return ap.a.Offsets(ctx, c) }
	prev, err := read()
	if err != nil {
		return err
	}
	release()           // the pause holds no slot: the other barriers call A meanwhile
	release = func() {} // nor does what follows, but for each read
	paused()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait until two reads of the offsets agree: %w", ctx.Err())
		case <-time.After(ap.opts.StablePause):
		}
		done, err := acquire(ctx, ap.stopReads)
		if err != nil {
			return fmt.Errorf("wait until two reads of the offsets agree: %w", err)
		}
		cur, err := read()
		done()
		if err != nil {
			return err
		}
		if sameOffsets(prev, cur) {
			c.Offsets, e.StoppedBy = cur, how
			return nil
		}
		prev = cur
	}
}

// sameOffsets reports whether two offset lists hold the same entries, in any order. Each
// entry is compared by its JSON (jsonvalue.Append, the encoding Map.MarshalJSON writes), as
// encoding/json wrote it before: every stop barrier compares twice its connector's offsets
// (12 entries a sink), and encoding/json's reflection and compaction of each Map's own JSON
// cost a wave's barriers more CPU than their reads' decoding.
func sameOffsets(a, b []events.ConnectorOffset) bool {
	if len(a) != len(b) {
		return false
	}
	ea, ok1 := offsetKeys(a)
	eb, ok2 := offsetKeys(b)
	return ok1 && ok2 && slices.Equal(ea, eb)
}

// offsetKeys are the entries of l, each its partition's JSON and its offset's, sorted.
func offsetKeys(l []events.ConnectorOffset) ([]string, bool) {
	out := make([]string, 0, len(l))
	var buf []byte
	for _, o := range l {
		buf = buf[:0]
		var err error
		for i, m := range []jsonvalue.Map{o.Partition, o.Offset} {
			if i > 0 {
				buf = append(buf, ',')
			}
			if m == nil {
				buf = append(buf, "null"...) // as encoding/json writes a nil map
				continue
			}
			if buf, err = jsonvalue.Append(buf, m); err != nil {
				return nil, false
			}
		}
		out = append(out, string(buf))
	}
	slices.Sort(out)
	return out, true
}

// StoppedByREST is CutoverConnector.StoppedOnABy for a connector stopped through A's REST API.
const StoppedByREST = "rest"

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
