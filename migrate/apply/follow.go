package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// With --sink-follows-source a pipeline that MirrorMaker 2's policy would cut apart on B
// (pipeline.go) moves as one: the sink on B reads the topics its sources write on B, under
// their names on A, and nothing of A's history twice or never:
//
//  1. the sources are stopped on A first (--stop-source), so they write nothing more on A;
//  2. A's sink goes on until its committed offsets reach the end of those topics on A (its
//     lag is 0: it has delivered all the sources wrote on A), within the run's --timeout,
//     and is stopped then;
//  3. the sink on B starts at the end of those topics on B as read now, before the sources on B
//     are created (no offset for a topic B does not have yet: the sink reads it from its
//     first record), so it reads exactly what the sources write on B.
//
// A's history stays in the renamed copies MirrorMaker 2 keeps on B ("A.T"), which the sink on
// B does not read.

// FollowedSources is the "translation" of a sink moved with --sink-follows-source in the
// report.
type FollowedSources struct {
	// FollowsSources names the selected sources whose topics the sink reads.
	FollowsSources []string `json:"follows_sources"`
	// Topics are the topics the sink reads on B: as on A, where its sources write on B.
	Topics []string `json:"topics"`
	// Drained is how long A's sink took, after its sources stopped, to consume all they wrote
	// on A (its lag on Topics reaching 0).
	Drained string `json:"drained"`
	// Starts says per topic where the sink on B starts.
	Starts map[string]string `json:"starts"`
}

// stopFollower stops e's sink on A once its sources are stopped and it has consumed all they
// wrote on A. ctx bounds the wait (the run's --timeout); paused is stopOne's.
func (ap *Applier) stopFollower(ctx context.Context, e *Entry, paused func()) error {
	c, f := e.Connector, e.follows()
	for _, src := range f.Sources {
		if !src.Problem.IsZero() {
			return fleet.Errorf("not stopped: its source %q was not stopped on A (%v), so it stays on A with it", src.Name, src.Problem)
		}
	}
	start := time.Now()
	if err := ap.waitDrained(ctx, c, f.Topics); err != nil {
		return fmt.Errorf("not stopped: %w", err)
	}
	e.drained = time.Since(start)
	return ap.stopOne(ctx, e, paused)
}

// waitDrained waits until sink c's group on A has committed the end of every partition of
// topics, those it follows.
func (ap *Applier) waitDrained(ctx context.Context, c *fleet.Connector, topics []string) error {
	tick := time.NewTicker(ap.opts.StopPoll)
	defer tick.Stop()
	why := "its lag not read yet" // the last lag read, or why it could not be read
	for {
		lag, detail, err := ap.a.Lag(ctx, c.Group, topics)
		switch {
		case err == nil && lag == 0:
			return nil
		case err == nil:
			why = fmt.Sprintf("lag %d (%s)", lag, detail)
		case ctx.Err() == nil && !kafkaio.Expired(ctx): // not a read cut short by the end of the wait
			why = err.Error()
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fleet.Errorf("group %q did not consume all its sources wrote on A within the run's %s: %s", c.Group, fleet.Timeout, why)
			}
			return fmt.Errorf("wait until group %q has consumed all its sources wrote on A: %s: %w", c.Group, why, ctx.Err())
		case <-tick.C:
		}
	}
}

// followSource returns the offsets of sink c on B when it follows its sources (f; A's sink
// took drained to consume what they wrote on A): the end of each followed topic on B as read
// now, none for a topic B does not have yet. Its config keeps the topics' names.
func followSource(ctx context.Context, m *fleet.MM2, c *fleet.Connector, f *hazard.Following, drained time.Duration) ([]events.ConnectorOffset, any, error) {
	d := &FollowedSources{Topics: f.Topics, Drained: drained.Round(time.Millisecond).String(), Starts: map[string]string{}}
	for _, src := range f.Sources {
		d.FollowsSources = append(d.FollowsSources, src.Name)
	}
	var out []events.ConnectorOffset
	for _, t := range f.Topics {
		ends, err := m.Translator.TargetEnds(ctx, t)
		if err != nil {
			return nil, d, fmt.Errorf("read the end offsets of topic %q on B: %w", t, err)
		}
		if ends == nil {
			d.Starts[t] = "not on B yet: the sink reads it from its first record"
			continue
		}
		for p, end := range ends {
			out = append(out, handlers.SinkOffset(offsetstore.GroupOffset{Topic: t, Partition: int32(p), Offset: end}))
		}
		d.Starts[t] = fmt.Sprintf("at its end on B, offsets %v by partition", ends)
	}
	return out, d, nil
}
