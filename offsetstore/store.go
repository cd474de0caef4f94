package offsetstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// Options configure a Store.
type Options struct {
	// Brokers are the bootstrap servers of the Connect cluster's Kafka cluster.
	Brokers []string
	// ConfigTopic is Connect's config.storage.topic.
	ConfigTopic string
	// OffsetsTopic is Connect's global offset.storage.topic.
	OffsetsTopic string
	// Transport carries SASL/TLS for clients and writers; nil means kafka.DefaultTransport.
	Transport *kafka.Transport
	// Dialer carries SASL/TLS for code that dials with kafka.Reader; nil means the default. The
	// Store itself reads through Transport.
	Dialer *kafka.Dialer
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// Principal describes who Transport authenticates as (User:alice), named in the
	// *kafkaio.AuthzError of every refused request. Empty means User:ANONYMOUS.
	Principal string
	// SyncedReads says that the views are read after Sync only (the agent's stages): their
	// logs tail quietly (kafkaio.Log.QuietTail), so that the store's own writes do not wake
	// their fetch loops, and Sync fetches what it finds missing. A reader that watches a
	// view without Sync (waiting for others' writes to appear) leaves it false.
	SyncedReads bool
}

// Cluster returns the options of the Kafka cluster that holds the topics, for kafkaio.
func (o Options) Cluster() kafkaio.Options {
	return kafkaio.Options{Brokers: o.Brokers, Transport: o.Transport, Logger: o.Logger, Principal: o.Principal}
}

// Store is the agent's view of one Connect cluster's internal topics plus the writes it makes to
// them.
type Store struct {
	opts   Options
	logger *slog.Logger
	client *kafka.Client
	// producer sends small writes, batched with concurrent ones (large ones go straight to
	// Produce requests, see produce).
	producer *kafkaio.Producer

	config    *configView
	configLog *kafkaio.Log

	mu      sync.Mutex
	offsets map[string]*offsetsTopic // by topic: the global one and tracked ones
	trackCh chan *kafkaio.Log        // hands tracked logs to Run
	running bool
	stopped chan struct{} // closed when Run returns
}

// offsetsTopic is the view and log of one offsets topic.
type offsetsTopic struct {
	view *offsetsView
	log  *kafkaio.Log
}

// New returns a Store for opts. It never dials; Run reads the topics.
func New(opts Options) (*Store, error) {
	var errs []error
	if len(opts.Brokers) == 0 {
		errs = append(errs, errors.New("no brokers"))
	}
	if opts.ConfigTopic == "" {
		errs = append(errs, errors.New("no config topic"))
	}
	if opts.OffsetsTopic == "" {
		errs = append(errs, errors.New("no offsets topic"))
	}
	if opts.ConfigTopic != "" && opts.ConfigTopic == opts.OffsetsTopic {
		errs = append(errs, fmt.Errorf("config and offsets topic are both %q", opts.ConfigTopic))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new offset store: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		opts:     opts,
		logger:   opts.Logger,
		client:   kafkaio.NewClient(opts.Cluster()),
		producer: kafkaio.NewProducer(opts.Cluster()),
		config:   newConfigView(opts.Logger),
		offsets:  map[string]*offsetsTopic{},
		trackCh:  make(chan *kafkaio.Log),
		stopped:  make(chan struct{}),
	}
	var err error
	if s.configLog, err = kafkaio.NewLog(opts.Cluster(), opts.ConfigTopic, s.config.apply); err != nil {
		return nil, fmt.Errorf("new offset store: %w", err)
	}
	if opts.SyncedReads {
		s.configLog.QuietTail()
	}
	if _, err := s.addOffsetsTopic(opts.OffsetsTopic); err != nil {
		return nil, fmt.Errorf("new offset store: %w", err)
	}
	return s, nil
}

func (s *Store) addOffsetsTopic(topic string) (*offsetsTopic, error) {
	view := newOffsetsView()
	// The view copies every key and value it keeps into its arena: it may borrow the records.
	l, err := kafkaio.NewBorrowingLog(s.opts.Cluster(), topic, view.apply)
	if err != nil {
		return nil, err
	}
	l.OnLoad(view.expect)
	if s.opts.SyncedReads {
		l.QuietTail()
	}
	ot := &offsetsTopic{view: view, log: l}
	s.offsets[topic] = ot
	return ot, nil
}

// Run tails the config topic, the global offsets topic and every tracked topic until ctx is done.
// It returns nil when ctx ends it, or the first error of a tailer. Run may be called once.
func (s *Store) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("run offset store: already started")
	}
	s.running = true
	global := s.offsets[s.opts.OffsetsTopic].log
	s.mu.Unlock()
	defer close(s.stopped)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.configLog.Run(gctx) })
	g.Go(func() error { return global.Run(gctx) })
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case l := <-s.trackCh:
				g.Go(func() error { return l.Run(gctx) })
			}
		}
	})
	err := g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("run offset store: %w", err)
	}
	return nil
}

// Close releases the store's resources. Call it after Run returned and the last Write
// finished. The Producer needs no closing: it has no goroutine while nothing is in flight.
func (s *Store) Close() error { return nil }

// Producer is the store's Producer, which the agent shares for its own topics, so that
// concurrent requests' intents and results travel with their config and offsets records.
func (s *Store) Producer() *kafkaio.Producer { return s.producer }

// WaitReady blocks until the initial load of the config and global offsets topics reached the
// end offsets seen when Run started.
func (s *Store) WaitReady(ctx context.Context) error {
	if err := s.configLog.WaitReady(ctx); err != nil {
		return err
	}
	return s.globalLog().WaitReady(ctx)
}

// Ready reports whether both initial loads are complete.
func (s *Store) Ready() bool {
	return s.configLog.Ready() && s.globalLog().Ready()
}

func (s *Store) globalLog() *kafkaio.Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets[s.opts.OffsetsTopic].log
}

// Sync is Connect's readToEnd for topic (the config topic or a read offsets topic): it reads the
// topic's current end offsets and waits until the view has applied everything before them.
// Requests call it before deciding, so writes by others are seen.
func (s *Store) Sync(ctx context.Context, topic string) error {
	l, err := s.syncLog(topic)
	if err != nil {
		return err
	}
	return l.Sync(ctx)
}

// SyncEnds is Sync of several topics whose end offsets are read together, in one round trip
// per broker for all of them (kafkaio.SyncEnds): it returns once they are read, with one wait
// per topic, in the order of topics, that waits until the view has applied everything before
// that topic's ends. A request reads the config topic and the offsets topic to their ends
// this way, each wait on its own goroutine.
func (s *Store) SyncEnds(ctx context.Context, topics ...string) ([]func(context.Context) error, error) {
	logs := make([]*kafkaio.Log, len(topics))
	for i, topic := range topics {
		l, err := s.syncLog(topic)
		if err != nil {
			return nil, err
		}
		logs[i] = l
	}
	bs, err := kafkaio.SyncEnds(ctx, logs...)
	if err != nil {
		return nil, err
	}
	waits := make([]func(context.Context) error, len(bs))
	for i := range bs {
		waits[i] = bs[i].Wait
	}
	return waits, nil
}

// syncLog is the log of topic for Sync: the config topic or a read offsets topic.
func (s *Store) syncLog(topic string) (*kafkaio.Log, error) {
	if l := s.logOf(topic); l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("sync topic %q: not read by the store", topic)
}

// Track starts tailing an extra offsets topic (a connector-specific offsets.storage.topic, docs/connect-internals.md,
// "Connector-specific offsets topics (KIP-618)") and returns after its initial load. It is idempotent, needs Run to be running, and fails
// if the topic does not exist.
func (s *Store) Track(ctx context.Context, topic string) error {
	if topic == s.opts.ConfigTopic {
		return fmt.Errorf("track topic %q: it is the config topic", topic)
	}
	s.mu.Lock()
	ot, ok := s.offsets[topic]
	s.mu.Unlock()
	if ok {
		if err := ot.log.WaitReady(ctx); err != nil {
			return fmt.Errorf("track topic %q: %w", topic, err)
		}
		return nil
	}
	if _, err := kafkaio.PartitionCount(ctx, s.client, topic); err != nil {
		return fmt.Errorf("track topic %q: %w", topic, err)
	}
	s.mu.Lock()
	ot, ok = s.offsets[topic]
	if !ok {
		var err error
		if ot, err = s.addOffsetsTopic(topic); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("track topic %q: %w", topic, err)
		}
	}
	s.mu.Unlock()
	if !ok {
		// Only the caller that added the topic starts its log; Run picks it up.
		select {
		case s.trackCh <- ot.log:
		case <-s.stopped:
			return fmt.Errorf("track topic %q: %w", topic, kafkaio.ErrLogStopped)
		case <-ctx.Done():
			s.mu.Lock()
			delete(s.offsets, topic) // not started: let a later call try again
			s.mu.Unlock()
			return fmt.Errorf("track topic %q: %w", topic, ctx.Err())
		}
	}
	if err := ot.log.WaitReady(ctx); err != nil {
		return fmt.Errorf("track topic %q: %w", topic, err)
	}
	return nil
}

// ConnectorConfig returns the stored properties of connector name and whether it exists.
func (s *Store) ConnectorConfig(name string) (props map[string]string, exists bool) {
	return s.config.connectorConfig(name)
}

// ConnectorRecordAt returns the offset in the config topic of connector name's latest
// connector record, and false when it has none or its latest is a tombstone.
func (s *Store) ConnectorRecordAt(name string) (int64, bool) {
	s.config.mu.RLock()
	defer s.config.mu.RUnlock()
	at, ok := s.config.connectorAt[name]
	return at, ok
}

// ConnectorNames returns the names of the connectors in the config topic, sorted: those with a
// live config, and those whose only or latest connector record is malformed (see
// ConnectorProblem). Deleted (tombstoned) connectors are not listed.
func (s *Store) ConnectorNames() []string { return s.config.names() }

// GroupConnectors returns the connectors of the config view, sorted, whose consumer group as a
// sink connector (SinkGroup) is group, whatever their type: a caller that cares about sinks
// only checks each one's type. It reads an index kept as the view applies records, so its
// cost does not grow with the connectors in the cluster.
func (s *Store) GroupConnectors(group string) []string { return s.config.groupConnectors(group) }

// ConnectorProblem says why connector name's config-topic state cannot be taken as is: its
// latest connector record is malformed (Connect logged and skipped it), or task-config records
// were written after its last commit record (an update Connect has not applied yet). It is ""
// when there is none. ConnectorConfig keeps returning the last good config either way.
func (s *Store) ConnectorProblem(name string) string { return s.config.problem(name) }

// TargetState returns the target state of connector name ("STARTED", "PAUSED" or "STOPPED") per
// the reader rules of docs/connect-internals.md, "Target states": the stored state (even for a
// connector that does not exist, which a future connector of that name would pick up), else
// STARTED for an existing connector; ok is false when there is neither.
func (s *Store) TargetState(name string) (state string, ok bool) {
	return s.config.targetState(name)
}

// SourceOffsets returns the live keys of connector in the offsets topic, ordered by partition,
// then key bytes. A topic the store does not read gives nil.
func (s *Store) SourceOffsets(topic, connector string) []SourceRecord {
	s.mu.Lock()
	ot := s.offsets[topic]
	s.mu.Unlock()
	if ot == nil {
		return nil
	}
	return ot.view.records(connector)
}

// Partitions returns the partition count of topic.
func (s *Store) Partitions(ctx context.Context, topic string) (int, error) {
	return kafkaio.PartitionCount(ctx, s.client, topic)
}
