package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// TopicsSource says where A's Connect topics are.
type TopicsSource struct {
	Brokers      []string
	ConfigTopic  string
	OffsetsTopic string
	// Transport and Dialer carry SASL/TLS; nil means none.
	Transport *kafka.Transport
	Dialer    *kafka.Dialer
	// Principal describes who Transport authenticates as (clientconfig.Security.Principal), for the
	// messages of refused permissions.
	Principal string
	// AllowUnreadable goes on with a sink whose committed offsets cannot all be read (a topic
	// the principal may not Describe): those partitions get no offset, with a warning. By
	// default such a sink is skipped (see sinkOffsets).
	AllowUnreadable bool
}

// topicsReader reads A's state from its config and offsets topics and sink groups, through
// the same views the agent keeps of B (works for every Connect version).
type topicsReader struct {
	src    TopicsSource
	store  *offsetstore.Store
	client *kafka.Client
	reg    *connectors.Registry
	logger *slog.Logger
	// rest is A's Connect REST API when it is given too: the worker's view of a sink's
	// offsets, which sinkOffsets compares with its own for a topics.regex sink.
	rest *restReader
	// topics describes the sinks' topics for their checks, together (describe.go).
	topics *describer
	cancel context.CancelFunc
	done   chan error
}

// openTopics starts reading src and returns once the initial load of the config and offsets
// topics is complete.
func openTopics(ctx context.Context, src TopicsSource, reg *connectors.Registry, logger *slog.Logger) (*topicsReader, error) {
	if src.Transport == nil {
		src.Transport = &kafka.Transport{MetadataTTL: time.Second} // see Migrate
	}
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: src.Brokers, Transport: src.Transport, Principal: src.Principal})
	// Refused at once and named, not retried by the readers below until ctx ends.
	if err := kafkaio.RequireTopicOps(ctx, cl, src.Principal, []kafkaio.TopicOps{
		{Topic: src.ConfigTopic, Ops: []string{kafkaio.OpRead}}, {Topic: src.OffsetsTopic, Ops: []string{kafkaio.OpRead}},
	}); err != nil {
		return nil, err
	}
	store, err := offsetstore.New(offsetstore.Options{
		Brokers: src.Brokers, ConfigTopic: src.ConfigTopic, OffsetsTopic: src.OffsetsTopic,
		Transport: src.Transport, Dialer: src.Dialer, Logger: logger, Principal: src.Principal,
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &topicsReader{src: src, store: store, client: cl, reg: reg, logger: logger, topics: &describer{client: cl}, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- store.Run(rctx) }()
	ready := make(chan error, 1)
	go func() { ready <- store.WaitReady(ctx) }()
	select {
	case err := <-ready:
		if err != nil {
			r.close()
			return nil, fmt.Errorf("read Connect topics %q and %q: %w", src.ConfigTopic, src.OffsetsTopic, err)
		}
	case err := <-r.done:
		r.done <- err
		r.close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("read Connect topics %q and %q: %w", src.ConfigTopic, src.OffsetsTopic, err)
	}
	return r, nil
}

func (r *topicsReader) close() {
	r.cancel()
	<-r.done
}

// clusterID is the id of A's Kafka cluster.
func (r *topicsReader) clusterID(ctx context.Context) (string, error) {
	return kafkaio.ClusterID(ctx, r.client)
}

// list returns every connector in A's config topic (deleted ones are not listed), sorted by
// name, with its offsets. A connector that cannot be read has Problem set.
func (r *topicsReader) list(ctx context.Context) ([]*fleet.Connector, error) {
	if err := r.store.Sync(ctx, r.src.ConfigTopic); err != nil {
		return nil, fmt.Errorf("read config topic %q: %w", r.src.ConfigTopic, err)
	}
	// Each offsets topic is read to its end once for the whole listing, not once per
	// connector (a round trip each, thousands of them one after the other for a fleet): the
	// listing is A as of its start. A stop barrier reads a connector's offsets to the end of
	// its topics again (offsets).
	synced := map[string]bool{}
	var out, sinks []*fleet.Connector
	for _, name := range r.store.ConnectorNames() {
		c := &fleet.Connector{Name: name, Problem: fleet.Plain(r.store.ConnectorProblem(name))}
		out = append(out, c)
		props, ok := r.store.ConnectorConfig(name)
		if !ok {
			continue // only a malformed record: Problem says so
		}
		c.Config = sortedConfig(props)
		c.Type = r.reg.TypeOf(props)
		state, _ := r.store.TargetState(name)
		c.State = restState(state)
		if c.Type == connectors.Sink {
			c.Group = fleet.SinkGroup(name, props)
		}
		if !c.Problem.IsZero() {
			continue
		}
		if c.Type == connectors.Sink {
			sinks = append(sinks, c)
			continue
		}
		offs, err := r.offsetsSynced(ctx, c, synced)
		setOffsets(c, offs, err)
	}
	// A sink's offsets are its group's on A, a few round trips each (sinkOffsets): the sinks
	// are read sinkReads at a time, not one after the other.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sinkReads)
	for _, c := range sinks {
		g.Go(func() error {
			offs, err := r.sinkOffsets(gctx, c)
			setOffsets(c, offs, err)
			return nil
		})
	}
	_ = g.Wait()
	return out, nil
}

// sinkReads bounds the sinks whose offsets a listing of A reads at once.
const sinkReads = 32

// errBadOffsets marks an offsets record Connect could not read either.
var errBadOffsets = errors.New("undecodable offsets record")

// offsets reads c's current offsets: its sink group's committed offsets, or the live keys of
// its source partitions in the global offsets topic and its own offsets.storage.topic (whose
// values win, as in Connect's reads). A key Connect skips when listing partitions is skipped;
// a value that is not a JSON object is an error wrapping errBadOffsets.
func (r *topicsReader) offsets(ctx context.Context, c *fleet.Connector) ([]events.ConnectorOffset, error) {
	return r.offsetsSynced(ctx, c, nil)
}

// offsetsSynced is offsets, reading an offsets topic to its end only when synced (nil: none)
// does not hold it yet, and adding it then.
func (r *topicsReader) offsetsSynced(ctx context.Context, c *fleet.Connector, synced map[string]bool) ([]events.ConnectorOffset, error) {
	if c.Type == connectors.Sink {
		return r.sinkOffsets(ctx, c)
	}
	topics := []string{r.src.OffsetsTopic}
	if t, _ := c.Config.Get("offsets.storage.topic"); t != "" && t != r.src.OffsetsTopic {
		if err := r.store.Track(ctx, t); err != nil {
			return nil, fmt.Errorf("read connector offsets topic %q: %w", t, err)
		}
		topics = append(topics, t)
	}
	out := []events.ConnectorOffset{}
	// seen indexes out by key, for the values of a second topic to win: within one topic the
	// view holds one record per key already, and a source without an offsets topic of its own
	// (most of a fleet, read three times each over a migration) needs no index, nor a copy of
	// each key to index it by.
	var seen map[string]int
	if len(topics) > 1 {
		seen = map[string]int{}
	}
	for _, topic := range topics {
		if !synced[topic] {
			if err := r.store.Sync(ctx, topic); err != nil {
				return nil, fmt.Errorf("read offsets topic %q: %w", topic, err)
			}
			if synced != nil {
				synced[topic] = true
			}
		}
		recs := r.store.SourceOffsets(topic, c.Name)
		out = slices.Grow(out, len(recs))
		for _, rec := range recs {
			_, partition, ok := offsetstore.DecodeKey(rec.Key)
			if !ok || partition == nil {
				continue // Connect skips it when listing partitions
			}
			offset, err := decodeOffset(rec.Value)
			if err != nil {
				return nil, fmt.Errorf("%w: topic %q partition %d key %s: %v", errBadOffsets, topic, rec.Partition, rec.Key, err)
			}
			if offset == nil {
				continue // a JSON null value: no offset for that partition
			}
			o := events.ConnectorOffset{Partition: partition, Offset: offset}
			if seen != nil {
				if i, dup := seen[string(rec.Key)]; dup {
					out[i] = o
					continue
				}
				seen[string(rec.Key)] = len(out)
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// groupMembers is the number of members of a sink's group on A.
func (r *topicsReader) groupMembers(ctx context.Context, group string) (int, error) {
	return r.store.GroupMembers(ctx, group)
}
