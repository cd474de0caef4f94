package source

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Options say how A is read: through its Connect topics (Topics) and sink groups, its
// Connect REST API (ConnectURL), or both; how a connector's state is settled (StopSource,
// InitialState, the state records in States).
type Options struct {
	// Topics is where A's Connect topics are; nil reads A through ConnectURL only.
	Topics *TopicsSource
	// ConnectURL is A's Connect REST API ("" for none), called by HTTPClient (nil: a client
	// with a 30 s timeout).
	ConnectURL string
	HTTPClient *http.Client
	// StopSource: the run stops the connectors on A (their states are recorded first, in
	// States), and an unreachable REST API is taken for A's workers being down when A's topics
	// are read.
	StopSource bool
	// InitialState overrides the state carried over from A ("" keeps it).
	InitialState string
	// States is where connectors' states on A are recorded before they are stopped; nil or
	// without brokers for none.
	States *StateStore
	// Registry knows connector classes; Logger receives warnings. Neither is nil.
	Registry *connectors.Registry
	Logger   *slog.Logger
}

// A is an open connection to A.
type A struct {
	opts   Options
	topics *topicsReader
	rest   *restReader
	// root is what A's REST API answered to GET / when the source was opened (rest not nil).
	root connectrest.RootInfo
	// restDown is why A's REST API, given with StopSource, could not be reached (nothing
	// answers there): rest is nil, and a connector is stopped when no worker of A holds it.
	restDown error
	// states are the migration's recorded states (nil for none).
	states *States
}

// Unopened is an A that reads nothing: no topics, no REST API, no state records, for the
// checks that only need its options.
func Unopened(opts Options) *A { return &A{opts: opts} }

// Open connects to A (reading its topics to the end).
func Open(ctx context.Context, opts Options) (*A, error) {
	s := &A{opts: opts}
	if opts.ConnectURL != "" {
		r, err := newRESTReader(opts.ConnectURL, opts.HTTPClient, opts.Registry)
		if err != nil {
			return nil, fleet.Precheckf("%s: %v", fleet.FromConnectURL, err)
		}
		root, err := r.c.Root(ctx)
		switch {
		case err == nil:
			s.rest, s.root = r, root
		case opts.StopSource && opts.Topics != nil && restUnreachable(err):
			// Nothing answers at A's REST API: a connector is stopped on A when no worker of
			// A holds it, as A's Kafka cluster tells (workersofa.go).
			s.restDown = err
			fleet.Warn(opts.Logger, fleet.Textf("A's Connect REST API is unreachable: %s takes a connector for stopped on A when no live worker of A holds it, "+
				"as the Connect groups on A's Kafka cluster say", fleet.StopSource), "url", connectrest.Redact(opts.ConnectURL), "err", err)
		case opts.StopSource && restUnreachable(err):
			return nil, fleet.Precheckf("A's Connect REST API is unreachable: %v; with %s, %s takes a connector for stopped on A "+
				"when no live worker of A holds it, as the Connect groups on A's Kafka cluster say", err, fleet.FromBrokers, fleet.StopSource)
		default:
			return nil, fleet.Precheckf("A's Connect REST API is unreachable: %v", err)
		}
	}
	if opts.Topics != nil {
		t, err := openTopics(ctx, *opts.Topics, opts.Registry, opts.Logger)
		if err != nil {
			return nil, fleet.Precheckf("A's Kafka cluster: %v", err)
		}
		s.topics = t
		t.rest = s.rest
	}
	return s, nil
}

// NoneHolds establishes that no worker of A holds connector name (its latest record in A's
// config topic at recordAt, -1 unknown), by the Connect groups on A's Kafka cluster
// (workersofa.go; A's topics read), and says how.
func (s *A) NoneHolds(ctx context.Context, name string, recordAt int64) (string, error) {
	return WorkersOfA{Client: s.topics.client, Principal: s.topics.src.Principal, ConfigTopic: s.topics.src.ConfigTopic}.NoneHolds(ctx, name, recordAt)
}

// RecordAt is the offset of connector name's latest record in A's config topic (false when
// A's topics are not read, or it has none).
func (s *A) RecordAt(name string) (int64, bool) {
	if s.topics == nil {
		return 0, false
	}
	return s.topics.store.ConnectorRecordAt(name)
}

// RESTDown is why A's REST API, given with StopSource, could not be reached (nothing answers
// there); nil when it answered or was not given.
func (s *A) RESTDown() error { return s.restDown }

// Client is the client of A's Kafka cluster; nil when A is read through its REST API only.
func (s *A) Client() *kafka.Client {
	if s.topics == nil {
		return nil
	}
	return s.topics.client
}

// Topics is where A's Connect topics are, as given (nil: A is read through its REST API only).
func (s *A) Topics() *TopicsSource { return s.opts.Topics }

// Offsets reads c's current offsets on A: from its topics and sink groups when they are read,
// else from its REST API.
func (s *A) Offsets(ctx context.Context, c *fleet.Connector) ([]events.ConnectorOffset, error) {
	if s.topics != nil {
		return s.topics.offsets(ctx, c)
	}
	return s.rest.offsets(ctx, c)
}

// GroupMembers is the number of members of a sink's group on A (A's topics read).
func (s *A) GroupMembers(ctx context.Context, group string) (int, error) {
	return s.topics.groupMembers(ctx, group)
}

// Lag is how far group is on topics on A from having consumed every committed record (lag.go;
// A's topics read).
func (s *A) Lag(ctx context.Context, group string, topics []string) (int64, string, error) {
	return s.topics.lag(ctx, group, topics)
}

// Stop is PUT /connectors/{name}/stop on A's REST API.
func (s *A) Stop(ctx context.Context, name string) error { return s.rest.stop(ctx, name) }

// Status is connector name's state and number of tasks on A's REST API.
func (s *A) Status(ctx context.Context, name string) (string, int, error) {
	return s.rest.status(ctx, name)
}

// ActiveTopics are the topics connector name has used, by A's topic tracking (false when A's
// REST API is not given or does not track them: pipeline.go's activeTopics).
func (s *A) ActiveTopics(ctx context.Context, name string) ([]string, bool) {
	if s.rest == nil {
		return nil, false
	}
	return s.rest.activeTopics(ctx, name)
}

// RecordState records state as connector name's state on A before it is stopped, unless one
// is recorded (states.go).
func (s *A) RecordState(ctx context.Context, name, state string) error {
	return s.states.Record(ctx, name, state)
}

// RecordStates is RecordState of each connector of states (name -> state), in one write.
func (s *A) RecordStates(ctx context.Context, states map[string]string) error {
	return s.states.RecordAll(ctx, states)
}

func (s *A) Close() {
	if s.topics != nil {
		s.topics.close()
	}
	s.states.Close()
}

// OpenStates opens the state records of opts.States for migration id (derived from A's
// cluster id when "" and States has none), creating the topic with StopSource. Without
// StopSource and without a topic, there are no records.
func (s *A) OpenStates(ctx context.Context, clusterA, id string) error {
	st := s.opts.States
	if st == nil || len(st.Brokers) == 0 {
		if s.opts.StopSource {
			return fleet.Precheckf("%s records each connector's state on A before stopping it, in topic %q on B: give %s", fleet.StopSource, DefaultStateTopic, fleet.ToBrokers)
		}
		return nil
	}
	cp := *st
	if id != "" {
		cp.MigrationID = id
	}
	if cp.MigrationID == "" {
		cp.MigrationID = fleet.DeriveMigrationID(clusterA, cp.SelectionKey)
	}
	if !fleet.ValidMigrationID(cp.MigrationID) {
		return fleet.Precheckf("%s %q: no '/' or spaces", fleet.MigrationID, cp.MigrationID)
	}
	states, err := OpenStates(ctx, cp, s.Describe(), s.opts.StopSource, s.opts.Logger)
	if err != nil {
		return fleet.Precheckf("the migration's state topic %q: %v", cp.TopicOrDefault(), err)
	}
	s.states = states
	return nil
}

// resolveStates settles the state each selected connector is created in, before anything is
// stopped: the recorded one where an earlier run of the migration recorded it (A now shows the
// STOPPED that run left); else A's state as read. A connector whose state cannot be known is
// refused (it gets a Problem) unless InitialState overrides the state: read through REST only
// with a status that does not tell the target state, or, with StopSource, STOPPED on A with no
// record (stopped by hand or by another migration, so the state it had before is lost).
func (s *A) ResolveStates(selected []*fleet.Connector) {
	for _, c := range selected {
		if !c.Problem.IsZero() {
			continue
		}
		if st, ok := s.states.Get(c.Name); ok {
			c.State, c.StateUnknown = st, ""
			continue
		}
		if s.opts.InitialState != "" {
			continue
		}
		switch {
		case c.StateUnknown != "":
			c.Problem = fleet.Textf("state on A unknown: %s; give %s, or read A with %s", c.StateUnknown, fleet.InitialState, fleet.FromBrokers)
		case s.opts.StopSource && c.State == fleet.StateStopped:
			c.Problem = fleet.Textf("state on A unknown: the connector is STOPPED on A and no run of migration %s recorded its state before stopping it "+
				"(it was stopped by hand or by another migration), so the state to create it in on B is not known; give %s, or resume it on A first",
				s.states.MigrationID(), fleet.InitialState)
		}
	}
}

// describe names A for the report.
func (s *A) Describe() string {
	var parts []string
	if s.opts.Topics != nil {
		parts = append(parts, strings.Join(s.opts.Topics.Brokers, ","))
	}
	if s.opts.ConnectURL != "" {
		parts = append(parts, connectrest.Redact(s.opts.ConnectURL))
	}
	return strings.Join(parts, " ")
}

// ClusterID is A's Kafka cluster id, from its brokers or its Connect REST API.
func (s *A) ClusterID(ctx context.Context) (string, error) {
	if s.topics != nil {
		return s.topics.clusterID(ctx)
	}
	ri, err := s.rest.c.Root(ctx)
	return ri.KafkaClusterID, err
}

// Cluster is A's identity: its Kafka cluster's id (ClusterID), its Connect topics when they
// are read, and what its REST API answered when it was opened.
func (s *A) Cluster(ctx context.Context) (fleet.Cluster, error) {
	id, err := s.ClusterID(ctx)
	if err != nil {
		return fleet.Cluster{}, err
	}
	c := fleet.Cluster{KafkaClusterID: id}
	if t := s.opts.Topics; t != nil {
		c.ConfigTopic, c.OffsetsTopic = t.ConfigTopic, t.OffsetsTopic
	}
	if s.rest != nil {
		c.ConnectURL = s.opts.ConnectURL
		c.Connect = fleet.ConnectRoot{Version: s.root.Version, Commit: s.root.Commit, KafkaClusterID: s.root.KafkaClusterID}
	}
	return c, nil
}

// list reads every connector of A: from the topics when they are read (the REST listing is
// then only cross-checked), else from the REST API.
func (s *A) List(ctx context.Context) ([]*fleet.Connector, error) {
	if s.topics == nil {
		cs, err := s.rest.list(ctx)
		if err != nil {
			return nil, fleet.Precheckf("read A's connectors: %v", err)
		}
		return cs, nil
	}
	cs, err := s.topics.list(ctx)
	if err != nil {
		return nil, fleet.Precheckf("read A's connectors: %v", err)
	}
	if s.rest != nil {
		names, err := s.rest.c.Names(ctx)
		if err != nil {
			return nil, fleet.Precheckf("list A's connectors: %v", err)
		}
		known := map[string]bool{}
		for _, c := range cs {
			known[c.Name] = true
		}
		for _, n := range names {
			if !known[n] {
				s.opts.Logger.Warn("connector listed by A's REST API is not in its config topic", "connector", n)
			}
		}
	}
	return cs, nil
}

// stopPrecheck refuses a stop that could not be a real barrier, before anything is stopped:
// read through REST only, a sink's consumer group on A is out of sight, and its tasks may
// still be members committing offsets after the status says STOPPED (a zombie task), so the
// offsets read would not be final.
func (s *A) CheckStop(selected []*fleet.Connector) error {
	if s.topics != nil {
		return nil
	}
	var sinks []string
	for _, c := range selected {
		if c.Problem.IsZero() && c.Type == connectors.Sink {
			sinks = append(sinks, c.Name)
		}
	}
	if len(sinks) == 0 {
		return nil
	}
	return fleet.Precheckf("%s for sink connectors (%s) needs %s: without A's brokers the stop barrier cannot see "+
		"whether the sink's consumer group on A still has members committing offsets", fleet.StopSource, strings.Join(sinks, ", "), fleet.FromBrokers)
}

// restState maps a config-topic target state to REST's spelling.
func restState(target string) string {
	switch target {
	case offsetstore.TargetPaused:
		return fleet.StatePaused
	case offsetstore.TargetStopped:
		return fleet.StateStopped
	default:
		return fleet.StateRunning
	}
}

// sortedConfig turns a config map into an events.Config in key order. The config topic's
// view keeps configs as maps; Connect readers parse a connector record into a map too, so the
// order carries no meaning.
func sortedConfig(props map[string]string) events.Config {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(events.Config, 0, len(keys))
	for _, k := range keys {
		out = append(out, events.ConfigEntry{Key: k, Value: props[k]})
	}
	return out
}

// setOffsets records the result of reading c's offsets: the offsets, or the error as its
// Problem.
func setOffsets(c *fleet.Connector, offs []events.ConnectorOffset, err error) {
	if err != nil {
		c.Problem = fleet.Textf("%v", err)
		return
	}
	c.Offsets = offs
}
