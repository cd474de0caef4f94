package offsetstore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"sync"
	"unsafe"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/segmentio/kafka-go"
)

// SourceRecord is one live key of an offsets topic: its exact key bytes, latest value (never nil:
// tombstoned keys are dropped) and the topic partition it was read from.
type SourceRecord struct {
	Key, Value []byte
	Partition  int
}

// offsetsView is KafkaOffsetBackingStore's data map plus its connectorPartitions index (docs/connect-internals.md
// §3.4): the latest value per exact key bytes, and the live keys of each connector, so a request
// for one connector never scans the topic.
type offsetsView struct {
	mu sync.RWMutex
	// byConn maps a connector name to its live keys (exact key bytes) and their latest values:
	// one map insert per record, and a request reads only its connector's keys. The map's
	// string keys alias the record buffers Log hands over (see apply), so each live key costs
	// its record bytes plus one map slot.
	byConn map[string]map[string]offsetEntry
	// other holds live keys that are not [string, object|null]: kept, as Connect keeps them,
	// but never listed for a connector.
	other map[string]offsetEntry
}

// offsetEntry is a live key's latest value (aliasing its record buffer, as the key does: a
// string, not a slice, is 8 bytes less in each of the view's map slots) and partition.
type offsetEntry struct {
	value     string
	partition int32
}

func newOffsetsView() *offsetsView {
	return &offsetsView{byConn: map[string]map[string]offsetEntry{}, other: map[string]offsetEntry{}}
}

// apply keeps the latest value per key. Keys that are not [string, object|null] are stored but
// not indexed, as Connect does.
func (v *offsetsView) apply(msgs []kafka.Message) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Records of one fetch mostly belong to a few connectors: remember the last one's set.
	var lastName string
	var lastSet map[string]offsetEntry
	for i := range msgs {
		m := &msgs[i]
		if m.Key == nil {
			continue // Connect never writes a null key; a foreign one cannot be looked up
		}
		if m.Value == nil {
			v.remove(m.Key)
			lastSet = nil // remove may have dropped the connector's set
			continue
		}
		// Log gives every record fresh, never-mutated bytes, so the key can be viewed as a string
		// without a copy. Assigning to an existing map key also replaces the stored key string
		// (Go updates string keys on overwrite), so the previous record's buffer is released.
		key := unsafe.String(unsafe.SliceData(m.Key), len(m.Key))
		e := offsetEntry{value: unsafe.String(unsafe.SliceData(m.Value), len(m.Value)), partition: int32(m.Partition)}
		name, ok := keyConnector(m.Key)
		if !ok {
			v.other[key] = e
			continue
		}
		set := lastSet
		if set == nil || name != lastName {
			if set = v.byConn[name]; set == nil {
				set = map[string]offsetEntry{}
				v.byConn[string([]byte(name))] = set // own copy: name may alias a buffer
			}
			lastName, lastSet = name, set
		}
		set[key] = e
	}
}

func (v *offsetsView) remove(key []byte) {
	name, ok := keyConnector(key)
	if !ok {
		delete(v.other, string(key))
		return
	}
	if set := v.byConn[name]; set != nil {
		delete(set, string(key))
		if len(set) == 0 {
			delete(v.byConn, name)
		}
	}
}

func (v *offsetsView) records(connector string) []SourceRecord {
	v.mu.RLock()
	set := v.byConn[connector]
	out := make([]SourceRecord, 0, len(set))
	for k, e := range set {
		// Copies: the view's buffers are shared, callers may change theirs.
		out = append(out, SourceRecord{Key: []byte(k), Value: []byte(e.value), Partition: int(e.partition)})
	}
	v.mu.RUnlock()
	slices.SortFunc(out, func(a, b SourceRecord) int {
		if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return out
}

// keyConnector returns the connector name of an offsets key, [name, partition], following
// OffsetUtils.processPartitionKey: a 2-element JSON array whose first element is a string and
// whose second is an object or null. It scans the bytes without decoding them (loads call it for
// every record), falling back to encoding/json only for a name with escapes. The returned string
// may alias key.
func keyConnector(key []byte) (string, bool) {
	i := jsonvalue.SkipSpace(key, 0)
	if i >= len(key) || key[i] != '[' {
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i+1)
	if i >= len(key) || key[i] != '"' {
		return "", false
	}
	end, escaped := scanString(key, i)
	if end < 0 {
		return "", false
	}
	raw := key[i : end+1]
	i = jsonvalue.SkipSpace(key, end+1)
	if i >= len(key) || key[i] != ',' {
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i+1)
	switch {
	case i < len(key) && key[i] == '{':
		if i = skipObject(key, i); i < 0 {
			return "", false
		}
	case bytes.HasPrefix(key[i:], []byte("null")):
		i += len("null")
	default:
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i)
	if i >= len(key) || key[i] != ']' || jsonvalue.SkipSpace(key, i+1) != len(key) {
		return "", false
	}
	if !escaped {
		inner := raw[1 : len(raw)-1]
		return unsafe.String(unsafe.SliceData(inner), len(inner)), true
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return "", false
	}
	return name, true
}

// scanString returns the index of the closing quote of the JSON string opening at b[i], or -1,
// and whether the string has escapes.
func scanString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}

// skipObject returns the index after the JSON object opening at b[i] (balanced braces and
// brackets, strings honoured), or -1. It does not validate the members: Connect's readers would
// reject a malformed key anyway, and the agent never writes one.
func skipObject(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			end, _ := scanString(b, j)
			if end < 0 {
				return -1
			}
			j = end
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}
