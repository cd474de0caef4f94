package source

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// DefaultStateTopic is the compacted topic on B where --stop-source records each connector's
// state on A before it stops the connector.
const DefaultStateTopic = "offsetagent-migration-states"

// StateStore says where the states that connectors had on A before --stop-source stopped them
// are kept: a compacted topic, one record per migration and connector, keyed
// "<migration id>/<name on A>". The record is written before the connector is stopped, and
// every later run of the same migration (from any machine) creates the connector on B in the
// recorded state, not in the STOPPED it finds on A. Kafka, not a local file, holds it: a re-run
// may come from another machine, and a run may die before it writes anything else.
type StateStore struct {
	// Brokers are the Kafka cluster holding the topic (B's, for migrate: --to-brokers).
	Brokers []string
	// Topic is the compacted topic ("" means DefaultStateTopic). --stop-source creates it
	// when it is missing (one partition, cleanup.policy=compact).
	Topic string
	// Transport carries SASL/TLS; nil means none.
	Transport *kafka.Transport
	// Principal describes who Transport authenticates as (clientconfig.Security.Principal),
	// named in the message of a refused request. Empty means User:ANONYMOUS.
	Principal string
	// MigrationID keys the records. Export derives it, when "", from A's cluster id and
	// SelectionKey as Migrate does, so that `export --stop-source` and `migrate` with the same
	// flags share their records.
	MigrationID  string
	SelectionKey string
}

// TopicOrDefault is the state topic's name: Topic, or DefaultStateTopic when Topic is "".
func (st StateStore) TopicOrDefault() string {
	if st.Topic == "" {
		return DefaultStateTopic
	}
	return st.Topic
}

// stateRecord is the value of a state record.
type stateRecord struct {
	MigrationID string    `json:"migration_id"`
	Connector   string    `json:"connector"`
	State       string    `json:"state"`
	From        string    `json:"from"`
	Recorded    time.Time `json:"recorded"`
}

// states are the recorded states of one migration, and the writer of new ones.
type States struct {
	st     StateStore
	from   string // A's description, for the records
	w      *kafka.Writer
	mu     sync.Mutex
	byName map[string]string // connector name on A -> state
}

// openStates loads the records of st.MigrationID. With create, a missing topic is created
// (--stop-source writes to it); without, a missing topic means no records and nil is returned.
func OpenStates(ctx context.Context, st StateStore, from string, create bool, logger *slog.Logger) (*States, error) {
	if st.Transport == nil {
		st.Transport = &kafka.Transport{MetadataTTL: time.Second} // see Migrate
	}
	topic := st.TopicOrDefault()
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: st.Brokers, Transport: st.Transport, Principal: st.Principal})
	cl.Timeout = 30 * time.Second
	if create {
		if err := kafkaio.EnsureTopic(ctx, cl, topic, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
			return nil, err
		}
	} else {
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err != nil {
			return nil, fmt.Errorf("read metadata of topic %q: %w", topic, err)
		}
		if len(md.Topics) == 0 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) == 0 {
			return nil, nil
		}
	}
	s := &States{st: st, from: from, byName: map[string]string{}}
	prefix := st.MigrationID + "/"
	apply := func(msgs []kafka.Message) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range msgs {
			name, ok := strings.CutPrefix(string(m.Key), prefix)
			if !ok {
				continue
			}
			var rec stateRecord
			if m.Value == nil {
				delete(s.byName, name)
				continue
			}
			if err := json.Unmarshal(m.Value, &rec); err != nil || !fleet.KnownState(rec.State) {
				logger.Warn("skip unreadable migration state record", "topic", topic, "offset", m.Offset, "err", err)
				continue
			}
			s.byName[name] = rec.State
		}
	}
	l, err := kafkaio.NewLog(kafkaio.Options{Brokers: st.Brokers, Transport: st.Transport, Logger: logger, Principal: st.Principal}, topic, apply)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- l.Run(lctx) }()
	err = l.WaitReady(ctx)
	cancel()
	<-done
	if err != nil {
		return nil, fmt.Errorf("read topic %q: %w", topic, err)
	}
	s.w = &kafka.Writer{Addr: kafka.TCP(st.Brokers...), Topic: topic, Transport: st.Transport,
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: maxStatesBatch}
	return s, nil
}

// Get is the state recorded for connector name on A.
func (s *States) Get(name string) (string, bool) {
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.byName[name]
	return st, ok
}

// Record writes state as connector name's state on A, acknowledged by all in-sync replicas,
// unless one is recorded already (the first one is the state before the first stop).
func (s *States) Record(ctx context.Context, name, state string) error {
	if s == nil {
		return fmt.Errorf("no state topic to record state %s in", state)
	}
	if _, ok := s.Get(name); ok {
		return nil
	}
	v, err := json.Marshal(stateRecord{MigrationID: s.st.MigrationID, Connector: name, State: state, From: s.from, Recorded: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := s.w.WriteMessages(ctx, kafka.Message{Key: []byte(s.st.MigrationID + "/" + name), Value: v}); err != nil {
		return fmt.Errorf("record state %s in topic %q: %w", state, s.st.TopicOrDefault(), err)
	}
	s.mu.Lock()
	s.byName[name] = state
	s.mu.Unlock()
	return nil
}

// maxStatesBatch bounds the records of one produce request of RecordAll (a wave's, up to
// the stop barriers of a wave).
const maxStatesBatch = 1024

// RecordAll is Record of each connector of states (name -> state) in one write: the states
// of a wave's connectors, recorded before any of them is stopped, in a produce request per
// maxStatesBatch records instead of one round trip per connector. A state recorded already
// stays as it is.
func (s *States) RecordAll(ctx context.Context, states map[string]string) error {
	if s == nil {
		return fmt.Errorf("no state topic to record %d states in", len(states))
	}
	names := make([]string, 0, len(states))
	for name := range states {
		if _, ok := s.Get(name); !ok {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	now := time.Now().UTC()
	msgs := make([]kafka.Message, 0, len(names))
	for _, name := range names {
		v, err := json.Marshal(stateRecord{MigrationID: s.st.MigrationID, Connector: name, State: states[name], From: s.from, Recorded: now})
		if err != nil {
			return err
		}
		msgs = append(msgs, kafka.Message{Key: []byte(s.st.MigrationID + "/" + name), Value: v})
	}
	if err := s.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("record the states of %d connectors in topic %q: %w", len(msgs), s.st.TopicOrDefault(), err)
	}
	s.mu.Lock()
	for _, name := range names {
		s.byName[name] = states[name]
	}
	s.mu.Unlock()
	return nil
}

// Close closes the writer of new records.
func (s *States) Close() {
	if s != nil && s.w != nil {
		_ = s.w.Close()
	}
}

// Recorded is a copy of every state recorded, by connector name on A.
func (s *States) Recorded() map[string]string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.byName)
}

// MigrationID is the id the records are keyed by ("" for none).
func (s *States) MigrationID() string {
	if s == nil {
		return ""
	}
	return s.st.MigrationID
}
