package offsetstore

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/segmentio/kafka-go"
)

// Target states as the config topic spells them (docs/connect-internals.md, "Target states"). REST's "RUNNING" is STARTED here.
const (
	TargetStarted = "STARTED"
	TargetPaused  = "PAUSED"
	TargetStopped = "STOPPED"
)

// Config topic key prefixes (docs/connect-internals.md, "Config topic records"). Records with other prefixes (task-, commit-, session-key,
// ...) carry nothing the agent decides on and are skipped.
const (
	connectorKeyPrefix   = "connector-"
	targetStateKeyPrefix = "target-state-"
	taskKeyPrefix        = "task-"
	commitKeyPrefix      = "commit-"
)

// configView is the state of the config topic that creation decides on: which connectors exist
// with which properties, and the stored target states.
type configView struct {
	logger *slog.Logger

	mu         sync.RWMutex
	connectors map[string]map[string]string
	states     map[string]string
	// malformed holds, per connector, why its latest connector record could not be read (the
	// previous config, if any, stays in connectors as Connect keeps it). A valid record or a
	// tombstone clears it.
	malformed map[string]string
	// pendingTasks counts, per connector, task-<name>-<n> records seen since its last
	// commit-<name> record: a task-config update the leader has not committed yet.
	pendingTasks map[string]int
	// latest holds, by key, what the view keeps of the latest connector and target-state
	// records beyond the maps above: their request marks, the bytes of target-state records
	// and of malformed connector records (configmark.go).
	latest map[string]ConfigRecord
	// connectorAt is, per connector, the offset of its latest live connector record: a Connect
	// group's leader that has read its config topic past it has seen the connector.
	connectorAt map[string]int64
	// groups indexes connectors by the consumer group they would consume with as sinks
	// (SinkGroup), so that a sink request finds the connectors of its group without reading
	// every connector's config: with thousands of connectors, that scan was most of a sink
	// request's CPU, growing with the connectors already there.
	groups map[string][]string
	// lastWriter is the request mark of the record kept last (writerOf).
	lastWriter Writer
}

func newConfigView(logger *slog.Logger) *configView {
	return &configView{
		logger:       logger,
		connectors:   map[string]map[string]string{},
		states:       map[string]string{},
		malformed:    map[string]string{},
		pendingTasks: map[string]int{},
		latest:       map[string]ConfigRecord{},
		connectorAt:  map[string]int64{},
		groups:       map[string][]string{},
	}
}

// apply follows KafkaConfigBackingStore's routing: target-state before connector (a connector
// named "state-x" has key "connector-state-x", which must not be read as a target state, and
// "target-state-x" never starts with "connector-", so the order only mirrors Connect's).
func (v *configView) apply(msgs []kafka.Message) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := range msgs {
		m := &msgs[i]
		key := string(m.Key)
		switch {
		case strings.HasPrefix(key, targetStateKeyPrefix):
			v.applyTargetState(strings.TrimPrefix(key, targetStateKeyPrefix), m)
			v.keepRecord(key, m, true)
		case strings.HasPrefix(key, connectorKeyPrefix):
			name := strings.TrimPrefix(key, connectorKeyPrefix)
			v.applyConnector(name, m)
			if m.Value == nil {
				delete(v.connectorAt, name)
			} else {
				v.connectorAt[name] = m.Offset
			}
			_, malformed := v.malformed[name]
			v.keepRecord(key, m, malformed)
		case strings.HasPrefix(key, taskKeyPrefix):
			// task-<name>-<n>: the name may contain '-', the task number is after the last one.
			if i := strings.LastIndexByte(key, '-'); i > len(taskKeyPrefix) && m.Value != nil {
				v.pendingTasks[key[len(taskKeyPrefix):i]]++
			}
		case strings.HasPrefix(key, commitKeyPrefix):
			delete(v.pendingTasks, strings.TrimPrefix(key, commitKeyPrefix))
		}
	}
}

func (v *configView) applyConnector(name string, m *kafka.Message) {
	if m.Value == nil {
		v.unindexGroup(name)
		delete(v.connectors, name)
		delete(v.malformed, name)
		delete(v.pendingTasks, name) // processConnectorRemoval drops deferred task updates
		return
	}
	if props, ok := m.WriterData.(DecodedConnector); ok {
		// The agent's own record, applied from what it encoded (Record.Decoded).
		delete(v.malformed, name)
		v.setConnector(name, props)
		return
	}
	var rec struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(m.Value, &rec); err != nil || rec.Properties == nil {
		// Connect logs and skips a connector record whose value is not {"properties":{...}}.
		v.logger.Error("skip malformed connector config record", "connector", name, "offset", m.Offset, "err", err)
		reason := "not a {\"properties\":{...}} object"
		if err != nil {
			reason = err.Error()
		}
		v.malformed[name] = fmt.Sprintf("connector record at offset %d is malformed: %s", m.Offset, reason)
		return
	}
	delete(v.malformed, name)
	props := make(map[string]string, len(rec.Properties))
	for k, val := range rec.Properties {
		var s string
		if err := json.Unmarshal(val, &s); err != nil {
			// Connect's REST layer only ever writes strings; a non-string is a foreign writer's
			// record. Keep its JSON text so existence checks and diffs still see the key.
			s = string(val)
		}
		props[k] = s
	}
	v.setConnector(name, props)
}

// setConnector records connector name's properties and indexes it by its sink group.
func (v *configView) setConnector(name string, props map[string]string) {
	v.unindexGroup(name)
	v.connectors[name] = props
	g := SinkGroup(name, props)
	v.groups[g] = append(v.groups[g], name)
}

// unindexGroup removes connector name from the group index, under the write lock, before its
// config is replaced or removed.
func (v *configView) unindexGroup(name string) {
	props, ok := v.connectors[name]
	if !ok {
		return
	}
	g := SinkGroup(name, props)
	names := slices.DeleteFunc(v.groups[g], func(n string) bool { return n == name })
	if len(names) == 0 {
		delete(v.groups, g)
	} else {
		v.groups[g] = names
	}
}

// groupConnectors returns the connectors whose sink consumer group is group, sorted.
func (v *configView) groupConnectors(group string) []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := slices.Clone(v.groups[group])
	slices.Sort(out)
	return out
}

// applyTargetState implements the reader rules of docs/connect-internals.md, "Target states": prefer state.v2 when it is a
// string, else state (V0 records only have it); an unknown value is logged and ignored, leaving
// the previous state; a tombstone removes the state.
func (v *configView) applyTargetState(name string, m *kafka.Message) {
	if m.Value == nil {
		delete(v.states, name)
		return
	}
	if state, ok := m.WriterData.(DecodedTargetState); ok {
		v.states[name] = string(state) // the agent's own record (Record.Decoded)
		return
	}
	var rec map[string]any
	if err := json.Unmarshal(m.Value, &rec); err != nil || rec == nil {
		v.logger.Error("skip malformed target state record", "connector", name, "offset", m.Offset, "err", err)
		return
	}
	state, ok := rec["state.v2"].(string)
	if !ok {
		state, ok = rec["state"].(string)
	}
	switch {
	case !ok:
		v.logger.Error("skip target state record without a state", "connector", name, "offset", m.Offset)
	case state == TargetStarted || state == TargetPaused || state == TargetStopped:
		v.states[name] = state
	default:
		v.logger.Error("skip target state record with an unknown state", "connector", name, "offset", m.Offset, "state", state)
	}
}

func (v *configView) connectorConfig(name string) (map[string]string, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	props, ok := v.connectors[name]
	if !ok {
		return nil, false
	}
	return maps.Clone(props), true
}

// targetState returns the target state of connector name ("STARTED", "PAUSED" or "STOPPED") per
// Connect's reader rules (docs/connect-internals.md, "Target states"): the stored state (even for a connector that does not
// exist, which a future connector of that name would pick up), else STARTED for an existing
// connector; ok is false when there is neither.
func (v *configView) targetState(name string) (string, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if s, ok := v.states[name]; ok {
		return s, true
	}
	if _, ok := v.connectors[name]; ok {
		// A connector without a target-state record runs (docs/connect-internals.md, "Target states").
		return TargetStarted, true
	}
	return "", false
}

// names returns the connectors that exist or whose latest record is malformed, sorted.
func (v *configView) names() []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make([]string, 0, len(v.connectors)+len(v.malformed))
	for n := range v.connectors {
		out = append(out, n)
	}
	for n := range v.malformed {
		if _, ok := v.connectors[n]; !ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (v *configView) problem(name string) string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if p, ok := v.malformed[name]; ok {
		return p
	}
	if n := v.pendingTasks[name]; n > 0 {
		return fmt.Sprintf("%d task config record(s) are not committed yet (a task-config update is pending)", n)
	}
	return ""
}
