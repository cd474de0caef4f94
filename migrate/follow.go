package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/mm2"
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

// following is a sink that follows its sources.
type following struct {
	sources []*Connector
	// topics are the sink's topics the sources write, under their names on A.
	topics []string
	// drained is how long A's sink took to consume all its sources wrote on A.
	drained time.Duration
}

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

// follow makes the sink of pairs (one sink) follow their sources.
func follow(pairs []pipelinePair) {
	f := &following{}
	for _, p := range pairs {
		f.sources = append(f.sources, p.source.connector)
		for _, t := range p.topics {
			if !slices.Contains(f.topics, t) {
				f.topics = append(f.topics, t)
			}
		}
	}
	pairs[0].sink.connector.follows = f
}

// cannotFollow says why sink c cannot follow the sources of pairs ("" when it can).
func (s *source) cannotFollow(c *Connector, pairs []pipelinePair, policy mm2.Policy) string {
	if !s.opts.StopSource && !s.opts.stopPlanned {
		return "it needs --stop-source: the sink on B starts where the source on B starts writing, once A's sink has consumed all the source wrote on A, and only a stopped source writes no more"
	}
	if s.topics == nil {
		return "it needs --from-brokers: A's sink's lag on the source's topics is read from A's brokers"
	}
	props := c.Config.Map()
	if strings.TrimSpace(props[mm2.TopicsKey]) == "" {
		return "the sink subscribes with topics.regex; it moves a sink with a topics list"
	}
	var followed, others []string
	for _, p := range pairs {
		followed = append(followed, p.topics...)
	}
	for _, t := range strings.Split(props[mm2.TopicsKey], ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(followed, t) && policy.RemoteTopic(t) != t {
			others = append(others, t)
		}
	}
	if len(others) > 0 {
		return fmt.Sprintf("the sink also reads %s, which no selected source writes and which it would read renamed on B; one sink cannot do both", strings.Join(others, ", "))
	}
	return ""
}

// stopFollower stops sink c on A once its sources are stopped and it has consumed all they
// wrote on A. ctx bounds the wait (the run's --timeout).
func (s *source) stopFollower(ctx context.Context, c *Connector) error {
	for _, src := range c.follows.sources {
		if src.Problem != "" {
			return fmt.Errorf("not stopped: its source %q was not stopped on A (%s), so it stays on A with it", src.Name, src.Problem)
		}
	}
	start := time.Now()
	if err := s.waitDrained(ctx, c); err != nil {
		return fmt.Errorf("not stopped: %w", err)
	}
	c.follows.drained = time.Since(start)
	return s.stopOne(ctx, c)
}

// waitDrained waits until sink c's group on A has committed the end of every partition of
// the topics it follows.
func (s *source) waitDrained(ctx context.Context, c *Connector) error {
	tick := time.NewTicker(s.opts.StopPoll)
	defer tick.Stop()
	why := "its lag not read yet" // the last lag read, or why it could not be read
	for {
		lag, detail, err := s.topics.lag(ctx, c.Group, c.follows.topics)
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
				return fmt.Errorf("group %q did not consume all its sources wrote on A within the run's --timeout: %s", c.Group, why)
			}
			return fmt.Errorf("wait until group %q has consumed all its sources wrote on A: %s: %w", c.Group, why, ctx.Err())
		case <-tick.C:
		}
	}
}

// lag is how far group is on topics on A from having consumed every committed record, and
// per partition where it is not 0. A topic that does not exist has none.
//
// The end is not the log end: an exactly-once source (exactly.once.source.support=enabled)
// writes in transactions, each ended by a marker that takes an offset and is handed to no
// consumer, and a Connect sink commits the offset after the last record it delivered (the
// marker's offset), one below the log end for good. So a partition is consumed when no
// committed record lies between the group's offset and the last stable offset (read
// read_committed: markers and aborted records skipped). While a transaction is open (the
// last stable offset below the log end) its records may still commit, for A's sink to
// deliver: the partition is not consumed until it commits or aborts (the broker aborts it
// after the producer's transaction.timeout.ms), unless the group is past it already.
func (r *topicsReader) lag(ctx context.Context, group string, topics []string) (int64, string, error) {
	gos, err := r.store.GroupOffsets(ctx, group)
	if err != nil {
		return 0, "", fmt.Errorf("read the committed offsets of group %q: %w", group, err)
	}
	var total int64
	var behind []string
	for _, t := range topics {
		n, err := kafkaio.PartitionCount(ctx, r.client, t)
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			continue
		}
		if err != nil {
			return 0, "", err
		}
		firsts, err := kafkaio.ListOffsets(ctx, r.client, t, n, kafka.FirstOffset)
		if err != nil {
			return 0, "", err
		}
		stable, err := kafkaio.ListOffsets(ctx, r.client, t, n, kafka.LastOffset)
		if err != nil {
			return 0, "", err
		}
		ends, err := kafkaio.LogEnds(ctx, r.client, t, n)
		if err != nil {
			return 0, "", err
		}
		for p := range n {
			done := firsts[p]
			if i := slices.IndexFunc(gos, func(g offsetstore.GroupOffset) bool { return g.Topic == t && int(g.Partition) == p }); i >= 0 && gos[i].Offset > done {
				done = gos[i].Offset
			}
			switch {
			case done >= ends[p]:
			case stable[p] < ends[p]:
				total += ends[p] - done
				behind = append(behind, fmt.Sprintf("%s-%d: a transaction open from offset %d, log end %d", t, p, stable[p], ends[p]))
			case done >= stable[p]:
			default:
				left, err := committedFrom(ctx, r.client, t, p, done, stable[p])
				if err != nil {
					return 0, "", err
				}
				if left {
					total += ends[p] - done
					behind = append(behind, fmt.Sprintf("%s-%d: %d", t, p, ends[p]-done))
				}
			}
		}
	}
	return total, strings.Join(behind, ", "), nil
}

// committedScanFetches bounds the fetches committedFrom makes: past them, a partition counts
// as not consumed yet (a later read goes on).
const committedScanFetches = 32

// committedFrom reports whether partition p of topic holds a committed record (not a marker,
// not in an aborted transaction) in [from, stable).
func committedFrom(ctx context.Context, cl *kafka.Client, topic string, p int, from, stable int64) (bool, error) {
	at := from
	for range committedScanFetches {
		if at >= stable {
			return false, nil
		}
		f, err := kafkaio.FetchPartition(ctx, cl, topic, p, at, 1<<20, 100*time.Millisecond)
		if err != nil {
			return false, fmt.Errorf("read topic %q partition %d from offset %d: %w", topic, p, at, err)
		}
		for _, m := range f.Messages {
			if m.Offset >= at && m.Offset < stable {
				return true, nil
			}
		}
		if f.Next <= at {
			return true, nil // no step forward: not known to be consumed
		}
		at = f.Next
	}
	return at < stable, nil
}

// followSource returns the offsets of sink c on B when it follows its sources: the end of
// each followed topic on B as read now, none for a topic B does not have yet. Its config keeps
// the topics' names.
func (m *MM2Sinks) followSource(ctx context.Context, c *Connector) ([]events.ConnectorOffset, any, error) {
	d := &FollowedSources{Topics: c.follows.topics, Drained: c.follows.drained.Round(time.Millisecond).String(), Starts: map[string]string{}}
	for _, src := range c.follows.sources {
		d.FollowsSources = append(d.FollowsSources, src.Name)
	}
	var out []events.ConnectorOffset
	for _, t := range c.follows.topics {
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
