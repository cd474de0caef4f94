package connectsim

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"
)

// The status topic's topic records (KIP-558): key status-topic-<topic>:connector-<connector>,
// value {"topic":{"name","connector","task","discoverTimestamp"}}, a tombstone when the topic
// is reset (KafkaStatusBackingStore; docs/connect-internals.md, "The REST API's answers").
const (
	topicStatusPrefix    = "status-topic-"
	topicStatusSeparator = ":connector-"
)

// applyStatus keeps the topic records of the status topic; its connector and task records
// say what tasks do, and the sim runs none.
func (s *Sim) applyStatus(msgs []kafka.Message) {
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	for _, m := range msgs {
		key, ok := strings.CutPrefix(string(m.Key), topicStatusPrefix)
		if !ok {
			continue
		}
		// As KafkaStatusBackingStore.readTopicStatus: the topic ends at the first ':' (a
		// topic name has none), the connector follows the separator.
		colon := strings.IndexByte(key, ':')
		if colon <= 0 || !strings.HasPrefix(key[colon:], topicStatusSeparator) {
			continue
		}
		topic, connector := key[:colon], key[colon+len(topicStatusSeparator):]
		if connector == "" {
			continue
		}
		if m.Value == nil {
			delete(s.topics[connector], topic)
			continue
		}
		var v struct {
			Topic *struct {
				Name string `json:"name"`
			} `json:"topic"`
		}
		if err := json.Unmarshal(m.Value, &v); err != nil || v.Topic == nil {
			s.logger.Warn("skip a topic status record that does not decode", "topic", s.cfg.StatusTopic, "offset", m.Offset)
			continue
		}
		if s.topics[connector] == nil {
			s.topics[connector] = map[string]bool{}
		}
		s.topics[connector][topic] = true
	}
}

// activeTopics is GET /connectors/{name}/topics: {"<name>": {"topics": [...]}}, sorted. As
// in Connect, a name no connector has is answered too (with the topics its records name).
func (s *Sim) activeTopics(ctx context.Context, name string) (answer, error) {
	if s.cfg.TopicTrackingDisabled {
		return answer{}, errorf(http.StatusForbidden, "Topic tracking is disabled.")
	}
	if s.status != nil {
		if err := s.status.Sync(ctx); err != nil {
			return answer{}, err
		}
	}
	s.topicsMu.RLock()
	topics := make([]string, 0, len(s.topics[name]))
	for t := range s.topics[name] {
		topics = append(topics, t)
	}
	s.topicsMu.RUnlock()
	slices.Sort(topics)
	return answer{code: http.StatusOK, body: map[string]any{name: map[string]any{"topics": topics}}}, nil
}
