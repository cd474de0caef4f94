package offsetstore

import (
	"bytes"
	"strings"

	"github.com/segmentio/kafka-go"
)

// The headers with which the agent marks the config records a request writes (the connector
// and target-state records of write_config). Connect reads its config topic by key and value
// only (KafkaConfigBackingStore hands record.value() to its converter; headers are never read,
// docs/connect-internals.md, "Config topic records"), so a marked record is the same record to every worker. The
// mark lets a rollback tell the records an interrupted request wrote from those it found: it
// tombstones or restores a key only while its latest record carries the request's mark.
const (
	HeaderRequestID     = "offsetagent-request-id"
	HeaderRequestSource = "offsetagent-request-source"
)

// RequestMark returns the headers that mark a record as written by request (source, id).
func RequestMark(source, id string) []kafka.Header {
	return []kafka.Header{{Key: HeaderRequestID, Value: []byte(id)}, {Key: HeaderRequestSource, Value: []byte(source)}}
}

// The decoded forms of the config records the agent writes, which it hands with their bytes
// (Record.Decoded): the config view applies such a record of its own from them instead of
// parsing the bytes again. Each must be exactly what the bytes decode to, and is the view's
// once written.
type (
	// DecodedConnector is a connector-<name> record's properties, every value a string.
	DecodedConnector map[string]string
	// DecodedTargetState is a target-state-<name> record's state (state.v2), one of
	// TargetStarted, TargetPaused and TargetStopped.
	DecodedTargetState string
)

// Writer is the request whose mark a config record carries.
type Writer struct {
	RequestID, RequestSource string
}

// IsRequest reports whether the record was written by request (source, id).
func (w Writer) IsRequest(source, id string) bool {
	return w != Writer{} && w.RequestID == id && w.RequestSource == source
}

// writerOf reads the request mark of a record's headers (zero when it has none). A request
// writes two records with the same mark, applied one after the other: the strings of last,
// the mark read before, are taken again when equal, instead of new copies.
func writerOf(headers []kafka.Header, last *Writer) Writer {
	var w Writer
	for _, h := range headers {
		switch h.Key {
		case HeaderRequestID:
			w.RequestID = last.RequestID
			if string(h.Value) != last.RequestID {
				w.RequestID = string(h.Value)
			}
		case HeaderRequestSource:
			w.RequestSource = last.RequestSource
			if string(h.Value) != last.RequestSource {
				w.RequestSource = string(h.Value)
			}
		}
	}
	if w != (Writer{}) {
		*last = w
	}
	return w
}

// ConfigRecord is what the store knows of the latest record of a connector's
// connector-<name> or target-state-<name> key in the config topic.
type ConfigRecord struct {
	// Live is false when the key has no record or its latest record is a tombstone.
	Live bool
	// Value is the record's bytes, kept for target-state records (a few dozen bytes) and for
	// connector records that are malformed; a valid connector record's content is
	// ConnectorConfig's, and its bytes are not kept (nil).
	Value []byte
	// Writer is the request whose mark the record carries (zero for records without one:
	// Connect's, another tool's).
	Writer Writer
}

// Equal reports whether two ConfigRecords hold the same record as far as the store knows it.
func (r ConfigRecord) Equal(o ConfigRecord) bool {
	return r.Live == o.Live && r.Writer == o.Writer && bytes.Equal(r.Value, o.Value)
}

// ConfigRecord returns what the store knows of the latest record of key (connector-<name> or
// target-state-<name>) in the config topic.
func (s *Store) ConfigRecord(key string) ConfigRecord {
	return s.config.record(key)
}

// keepRecord records the latest record of a connector or target-state key (see
// ConfigRecord). value is kept when keepValue is set. Tombstoned keys and records
// of Connect without anything to keep are not held, so the view's memory per connector does
// not grow for clusters the agent never wrote to.
func (v *configView) keepRecord(key string, m *kafka.Message, keepValue bool) {
	if m.Value == nil {
		delete(v.latest, key)
		return
	}
	rec := ConfigRecord{Live: true, Writer: writerOf(m.Headers, &v.lastWriter)}
	if keepValue {
		rec.Value = bytes.Clone(m.Value)
	}
	if rec.Value == nil && rec.Writer == (Writer{}) {
		// Only "live" to say: the connectors and states maps say that much already for
		// valid records; remember it for malformed ones below.
		delete(v.latest, key)
		return
	}
	v.latest[key] = rec
}

func (v *configView) record(key string) ConfigRecord {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if r, ok := v.latest[key]; ok {
		return r
	}
	// A live record without anything kept: a valid connector record, or a target-state record
	// (whose bytes are always kept, so this is never reached for a live one).
	if name, ok := strings.CutPrefix(key, connectorKeyPrefix); ok {
		if _, live := v.connectors[name]; live {
			return ConfigRecord{Live: true}
		}
	}
	return ConfigRecord{}
}
