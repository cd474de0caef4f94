package connectsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Connect's texts for the offsets API (docs/connect-internals.md, "Checks of an alter, in
// order", "Sink connector offsets", "Success messages").
const (
	msgNoOffsets  = "Partitions / offsets need to be provided for an alter offsets request"
	msgNotStopped = "Connectors must be in the STOPPED state before their offsets can be modified. " +
		"This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint"
	msgGroupBusy = "Failed to %s consumer group offsets for connector %s either because its tasks haven't stopped completely yet " +
		"or the connector was resumed before the request to %s its offsets could be successfully completed. If the connector " +
		"is in a stopped state, this operation can be safely retried. If it doesn't eventually succeed, the Connect cluster may " +
		"need to be restarted to get rid of the zombie sink tasks."
)

// parseOffsets reads a PATCH body, {"offsets": [{"partition": {...}, "offset": {...}}, ...]},
// as Jackson binds ConnectorOffsets: an unknown field, or a value of the wrong kind, is a 500;
// no list, a null or an empty one is Connect's 400.
func parseOffsets(b []byte) ([]events.OffsetEntry, error) {
	const entity = "org.apache.kafka.connect.runtime.rest.entities."
	sc := jsonvalue.NewScanner(b)
	m, err := sc.Object()
	if err == nil && !sc.AtEnd() {
		err = fmt.Errorf("trailing data at byte %d", sc.Pos())
	}
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "Cannot deserialize value of type `%sConnectorOffsets`: %v", entity, err)
	}
	var list []any
	for _, f := range m {
		if f.Key != "offsets" {
			return nil, errorf(http.StatusInternalServerError, "Unrecognized field %q (class %sConnectorOffsets), not marked as ignorable", f.Key, entity)
		}
		switch v := f.Value.(type) {
		case nil:
			list = nil
		case []any:
			list = v
		default:
			return nil, errorf(http.StatusInternalServerError, "Cannot deserialize value of type `java.util.ArrayList<%sConnectorOffset>` from %s value", entity, kindOf(v))
		}
	}
	if len(list) == 0 {
		return nil, errorf(http.StatusBadRequest, msgNoOffsets)
	}
	entries := make([]events.OffsetEntry, len(list))
	for i, item := range list {
		em, ok := item.(jsonvalue.Map)
		if !ok {
			return nil, errorf(http.StatusInternalServerError, "Cannot construct instance of `%sConnectorOffset` from offsets[%d]", entity, i)
		}
		for _, f := range em {
			var into *jsonvalue.Map
			switch f.Key {
			case "partition":
				into = &entries[i].Partition
			case "offset":
				into = &entries[i].Offset
			default:
				return nil, errorf(http.StatusInternalServerError, "Unrecognized field %q (class %sConnectorOffset), not marked as ignorable", f.Key, entity)
			}
			switch v := f.Value.(type) {
			case nil:
				*into = nil
			case jsonvalue.Map:
				*into = v
			default:
				return nil, errorf(http.StatusInternalServerError, "Cannot deserialize value of type `java.util.LinkedHashMap<java.lang.String,java.lang.Object>` from offsets[%d].%s", i, f.Key)
			}
		}
	}
	return entries, nil
}

// connectorError answers a *connectors.Error with its status and text; code, when not 0,
// replaces its status (ValidateSource's 400s, which Connect's PATCH answers as 500s).
func connectorError(err error, code int) error {
	var ce *connectors.Error
	if errors.As(err, &ce) {
		if code == 0 {
			code = ce.Code
		}
		return errorf(code, "%s", ce.Message)
	}
	return err
}

// stopped checks what Connect checks before an offsets change, in its order: the connector
// exists (read to the end of the config topic), and it is STOPPED.
func (s *Sim) stopped(ctx context.Context, name string) (map[string]string, error) {
	cfg, ok, err := s.current(ctx, name)
	if err != nil || !ok {
		return nil, firstErr(err, notFound(name))
	}
	if state, _ := s.store.TargetState(name); state != offsetstore.TargetStopped {
		return nil, errorf(http.StatusBadRequest, msgNotStopped, name)
	}
	return cfg, nil
}

// isSink tells a sink connector: its plugin's type, or the registry's guess for a class that
// is not installed.
func (s *Sim) isSink(cfg map[string]string) bool {
	if t := s.typeOf(cfg); t != "unknown" {
		return t == string(connectors.Sink)
	}
	return s.reg.TypeOf(cfg) == connectors.Sink
}

// groupOf is a sink connector's consumer group: consumer.override.group.id, else
// connect-<name> (docs/connect-internals.md, "Sink connector offsets").
func groupOf(name string, cfg map[string]string) string {
	if g := cfg["consumer.override.group.id"]; g != "" {
		return g
	}
	return "connect-" + name
}

// offsetsTopics are the offsets topics a source connector's offsets are written to, in the
// order of the write: its own (offsets.storage.topic) first, then the worker's; with
// tombstones, the worker's first (docs/connect-internals.md, "Connector-specific offsets
// topics (KIP-618)"). Its own topic is tracked by the store from here on.
func (s *Sim) offsetsTopics(ctx context.Context, cfg map[string]string, tombstones bool) ([]string, error) {
	global := s.cfg.Topics.OffsetsTopic
	own := cfg["offsets.storage.topic"]
	if own == "" || own == global {
		return []string{global}, nil
	}
	if err := s.store.Track(ctx, own); err != nil {
		return nil, fmt.Errorf("read connector offsets topic %q: %w", own, err)
	}
	if tombstones {
		return []string{global, own}, nil
	}
	return []string{own, global}, nil
}

// alterOffsets is PATCH /connectors/{name}/offsets (Connect 3.6+): Connect's checks in
// Connect's order, then the connector class's alterOffsets twin, then the write; 200 with the
// success text.
func (s *Sim) alterOffsets(ctx context.Context, name string, r *http.Request) (answer, error) {
	b, err := readBody(r)
	if err != nil {
		return answer{}, err
	}
	entries, err := parseOffsets(b)
	if err != nil {
		return answer{}, err
	}
	defer s.lock(name)()
	cfg, err := s.stopped(ctx, name)
	if err != nil {
		return answer{}, err
	}
	class, _ := s.reg.Lookup(cfg["connector.class"])
	if s.isSink(cfg) {
		err = s.alterSink(ctx, name, cfg, class, entries)
	} else {
		err = s.alterSource(ctx, name, cfg, class, entries)
	}
	if err != nil {
		return answer{}, err
	}
	return answer{code: http.StatusOK, body: map[string]string{"message": connectors.SuccessMessage(class)}}, nil
}

// alterSink commits a sink connector's offsets as Worker.alterSinkConnectorOffsets does: the
// null ones deleted, the others committed by an admin commit (offsetstore.CommitGroupOffsets).
func (s *Sim) alterSink(ctx context.Context, name string, cfg map[string]string, class *connectors.Class, entries []events.OffsetEntry) error {
	parsed, err := connectors.ValidateSink(entries)
	if err != nil {
		return connectorError(err, 0)
	}
	if err := connectors.CheckSinkOffsets(name, parsed); err != nil {
		return connectorError(err, 0)
	}
	if class != nil && class.Validate != nil {
		if err := class.Validate(cfg, entries); err != nil {
			return connectorError(err, 0)
		}
	}
	var commits, deletes []offsetstore.GroupOffset
	for _, p := range parsed {
		g := offsetstore.GroupOffset{Topic: p.Topic, Partition: p.Partition}
		if p.Offset == nil {
			deletes = append(deletes, g)
			continue
		}
		g.Offset = *p.Offset
		commits = append(commits, g)
	}
	group := groupOf(name, cfg)
	err = s.store.DeleteGroupOffsets(ctx, group, deletes)
	if err == nil {
		err = s.store.CommitGroupOffsets(ctx, group, commits)
	}
	if errors.Is(err, offsetstore.ErrGroupNotEmpty) {
		return errorf(http.StatusInternalServerError, msgGroupBusy, "alter", name, "alter")
	}
	return err
}

// entryList hands a request's entries to offsetstore.EncodeOffsets.
type entryList []events.OffsetEntry

func (l entryList) Len() int             { return len(l) }
func (l entryList) HasOffset(i int) bool { return l[i].Offset != nil }
func (l entryList) Take(i int) (jsonvalue.Map, jsonvalue.Map) {
	e := l[i]
	l[i] = events.OffsetEntry{}
	return e.Partition, e.Offset
}

// alterSource writes a source connector's offsets as Connect's PATCH does: the maps checked
// as OffsetUtils.validateFormat does (a 500 in Connect's PATCH), the last of equal partitions
// kept, the class's alterOffsets twin, then the records in Java's HashMap order (the maps
// went through Connect's converter) and a tombstone for each null offset.
func (s *Sim) alterSource(ctx context.Context, name string, cfg map[string]string, class *connectors.Class, entries []events.OffsetEntry) error {
	if err := connectors.ValidateSource(entries); err != nil {
		return connectorError(err, http.StatusInternalServerError)
	}
	entries = connectors.Dedupe(entries)
	if class != nil && class.Validate != nil {
		if err := class.Validate(cfg, entries); err != nil {
			return connectorError(err, 0)
		}
	}
	var tombstones []offsetstore.Record
	for _, e := range entries {
		if e.Offset == nil {
			key := offsetstore.AppendKey(nil, name, offsetstore.JavaHashMapOrder(e.Partition))
			tombstones = append(tombstones, offsetstore.Record{Key: key, Partition: -1})
		}
	}
	recs := append(offsetstore.EncodeOffsets(name, entryList(entries), nil), tombstones...)
	return s.writeOffsets(ctx, cfg, recs, len(tombstones) > 0)
}

// writeOffsets writes recs to the connector's offsets topics, in offsetsTopics' order.
func (s *Sim) writeOffsets(ctx context.Context, cfg map[string]string, recs []offsetstore.Record, tombstones bool) error {
	topics, err := s.offsetsTopics(ctx, cfg, tombstones)
	if err != nil {
		return err
	}
	for _, topic := range topics {
		if err := s.store.Write(ctx, topic, recs); err != nil {
			return fmt.Errorf("write to offsets topic %q: %w", topic, err)
		}
	}
	return nil
}

// resetOffsets is DELETE /connectors/{name}/offsets (Connect 3.6+): a sink connector's group
// deleted; a tombstone for every partition of a source connector in its offsets topics, after
// its class's alterOffsets twin saw them all reset. 200 with the success text.
func (s *Sim) resetOffsets(ctx context.Context, name string) (answer, error) {
	defer s.lock(name)()
	cfg, err := s.stopped(ctx, name)
	if err != nil {
		return answer{}, err
	}
	class, _ := s.reg.Lookup(cfg["connector.class"])
	msg := strings.ReplaceAll(connectors.SuccessMessage(class), "altered", "reset")
	if s.isSink(cfg) {
		err := s.store.DeleteGroup(ctx, groupOf(name, cfg))
		if errors.Is(err, offsetstore.ErrGroupNotEmpty) {
			return answer{}, errorf(http.StatusInternalServerError, msgGroupBusy, "reset", name, "reset")
		}
		if err != nil {
			return answer{}, err
		}
		return answer{code: http.StatusOK, body: map[string]string{"message": msg}}, nil
	}
	topics, err := s.offsetsTopics(ctx, cfg, true)
	if err != nil {
		return answer{}, err
	}
	var recs []offsetstore.Record
	var entries []events.OffsetEntry
	seen := map[string]bool{}
	for _, topic := range topics {
		if err := s.store.Sync(ctx, topic); err != nil {
			return answer{}, fmt.Errorf("read offsets topic %q: %w", topic, err)
		}
		for _, r := range s.store.SourceOffsets(topic, name) {
			if seen[string(r.Key)] {
				continue
			}
			seen[string(r.Key)] = true
			recs = append(recs, offsetstore.Record{Key: r.Key, Partition: -1})
			if _, partition, ok := offsetstore.DecodeKey(r.Key); ok {
				entries = append(entries, events.OffsetEntry{Partition: partition})
			}
		}
	}
	if class != nil && class.Validate != nil {
		if err := class.Validate(cfg, entries); err != nil {
			return answer{}, connectorError(err, 0)
		}
	}
	if err := s.writeOffsets(ctx, cfg, recs, true); err != nil {
		return answer{}, err
	}
	return answer{code: http.StatusOK, body: map[string]string{"message": msg}}, nil
}
