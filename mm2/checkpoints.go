package mm2

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// ErrNoCheckpointsTopic means the checkpoints topic does not exist on the target cluster: MM2's
// checkpoint connector never ran for this source alias, or the alias or separator is wrong.
// Callers should stop and report it: no partition of any group can be translated.
var ErrNoCheckpointsTopic = errors.New("checkpoints topic does not exist")

// checkpointKey identifies a checkpoint: group, downstream topic, partition.
type checkpointKey struct {
	group     string
	topic     string
	partition int32
}

// refusal is a checkpoint record that was read but not used.
type refusal struct {
	offset int64 // of the record in the checkpoints topic
	err    error
}

// checkpointStore is the materialised checkpoints topic: the last valid checkpoint per (group,
// downstream topic, partition), as MirrorClient keeps it (docs/mirrormaker2.md, "Reading the
// checkpoints"), plus what was refused.
type checkpointStore struct {
	// readMu serialises reads of the topic.
	readMu sync.Mutex
	tail   logTail

	mu    sync.Mutex
	valid map[checkpointKey]Checkpoint
	// refused holds the last refused record per key; a valid record wins over it.
	refused map[checkpointKey]refusal
	// groups counts the records attributed to each group, valid or refused; validOf and
	// refusedOf count the valid and the refused ones, and lastRefused is the latest refused one.
	groups, validOf, refusedOf map[string]int
	lastRefused                map[string]refusal
	// written is the timestamp of each group's newest valid checkpoint record.
	written map[string]time.Time
	// unattributed counts records whose key cannot be read even after unwrapping, and keeps the
	// last one's error.
	unattributed     int
	lastUnattributed refusal
}

func newCheckpointStore(b kafkaio.Options, topic string) *checkpointStore {
	return &checkpointStore{
		tail:        logTail{cl: kafkaio.NewClient(b), topic: topic},
		valid:       map[checkpointKey]Checkpoint{},
		refused:     map[checkpointKey]refusal{},
		groups:      map[string]int{},
		validOf:     map[string]int{},
		refusedOf:   map[string]int{},
		lastRefused: map[string]refusal{},
		written:     map[string]time.Time{},
	}
}

// read applies everything written to the topic since the last read. A missing topic is
// ErrNoCheckpointsTopic.
func (s *checkpointStore) read(ctx context.Context) error {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	err := s.tail.readToEnd(ctx, s.apply)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return fmt.Errorf("read checkpoints topic %q: %w", s.tail.topic, ErrNoCheckpointsTopic)
	}
	if err != nil {
		return fmt.Errorf("read checkpoints topic %q: %w", s.tail.topic, err)
	}
	return nil
}

func (s *checkpointStore) apply(r record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := DecodeCheckpoint(r.Key, r.Value)
	if err == nil {
		k := checkpointKey{c.Group, c.Topic, c.Partition}
		s.valid[k] = c
		s.groups[c.Group]++
		s.validOf[c.Group]++
		if r.Time.After(s.written[c.Group]) {
			s.written[c.Group] = r.Time
		}
		return
	}
	// Attribute a refused record to its key when the key can be read, unwrapping a converter's
	// JSON and ignoring trailing bytes if need be, so that the partition's report says why it
	// has no checkpoint.
	key := r.Key
	if raw, ok := unwrapConverted(key); ok {
		key = raw
	}
	group, topic, partition, kerr := decodeCheckpointKey(key, false)
	if kerr != nil {
		s.unattributed++
		s.lastUnattributed = refusal{offset: r.Offset, err: err}
		return
	}
	k := checkpointKey{group, topic, partition}
	s.groups[group]++
	if r.Value == nil {
		// A tombstone deletes the key, as compaction would. MM2 never writes one
		// (docs/mirrormaker2.md, "Reading the checkpoints").
		delete(s.valid, k)
		delete(s.refused, k)
		return
	}
	s.refused[k] = refusal{offset: r.Offset, err: err}
	s.refusedOf[group]++
	s.lastRefused[group] = s.refused[k]
}

// lookup returns the checkpoint for k, if valid, and the last refused record for k, if any.
func (s *checkpointStore) lookup(k checkpointKey) (c Checkpoint, ok bool, ref *refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok = s.valid[k]
	if r, found := s.refused[k]; found {
		ref = &r
	}
	return c, ok, ref
}

// newest returns the timestamp of group's newest valid checkpoint record (zero for none).
func (s *checkpointStore) newest(group string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written[group]
}

// groupStats is what the store holds about one group and the others.
type groupStats struct {
	// mine counts the records attributed to the group, valid and refused the valid and the
	// refused ones among them; otherGroups counts the other groups with records. lastMine is
	// the group's latest refused record.
	mine, valid, refused, otherGroups int
	lastMine                          refusal
	// unattributed counts the records no group could be named for; last is the latest of them.
	unattributed int
	last         refusal
}

func (s *checkpointStore) stats(group string) groupStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := groupStats{unattributed: s.unattributed, last: s.lastUnattributed}
	for g, n := range s.groups {
		if g == group {
			st.mine, st.valid, st.refused, st.lastMine = n, s.validOf[g], s.refusedOf[g], s.lastRefused[g]
		} else if n > 0 {
			st.otherGroups++
		}
	}
	return st
}
