package connectsim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// maxBody bounds a request body the sim reads.
const maxBody = 16 << 20

// Config topic keys (docs/connect-internals.md, "Config topic records").
func connectorKey(name string) []byte   { return []byte("connector-" + name) }
func targetStateKey(name string) []byte { return []byte("target-state-" + name) }
func commitKey(name string) []byte      { return []byte("commit-" + name) }

// targetStateRecord is target-state-<name> in the form writers since 3.5 write: state for
// older workers (STOPPED is PAUSED there), state.v2 (docs/connect-internals.md, "Target states").
func targetStateRecord(name, state string) offsetstore.Record {
	v1 := state
	if state == offsetstore.TargetStopped {
		v1 = offsetstore.TargetPaused
	}
	v := offsetstore.AppendJSON(nil, jsonvalue.Map{{Key: "state", Value: v1}, {Key: "state.v2", Value: state}})
	return offsetstore.Record{Key: targetStateKey(name), Value: v, Partition: 0}
}

// connectorRecord is connector-<name>: {"properties":{...}} in the config's order.
func connectorRecord(name string, cfg events.Config) offsetstore.Record {
	props := make(jsonvalue.Map, 0, len(cfg))
	for _, e := range cfg {
		var v any = e.Value
		if e.Null {
			v = nil
		}
		props = append(props, jsonvalue.Field{Key: e.Key, Value: v})
	}
	v := offsetstore.AppendJSON(nil, jsonvalue.Map{{Key: "properties", Value: props}})
	return offsetstore.Record{Key: connectorKey(name), Value: v, Partition: 0}
}

// writeConfig writes recs to the config topic's single partition, in order.
func (s *Sim) writeConfig(ctx context.Context, recs ...offsetstore.Record) error {
	if err := s.store.Write(ctx, s.cfg.Topics.ConfigTopic, recs); err != nil {
		return fmt.Errorf("write to config topic %q: %w", s.cfg.Topics.ConfigTopic, err)
	}
	return nil
}

// current reads the config topic to its end, as a worker's leader does before it writes, and
// returns connector name's config.
func (s *Sim) current(ctx context.Context, name string) (map[string]string, bool, error) {
	if err := s.store.Sync(ctx, s.cfg.Topics.ConfigTopic); err != nil {
		return nil, false, fmt.Errorf("read config topic %q: %w", s.cfg.Topics.ConfigTopic, err)
	}
	cfg, ok := s.store.ConnectorConfig(name)
	return cfg, ok, nil
}

// stop is PUT /connectors/{name}/stop: no task configs ({"tasks":0}), then STOPPED, the
// records and order of DistributedHerder.stopConnector; 204.
func (s *Sim) stop(ctx context.Context, name string) (answer, error) {
	defer s.lock(name)()
	_, ok, err := s.current(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, unknownConnector(name))
	}
	commit := offsetstore.Record{Key: commitKey(name), Value: offsetstore.AppendJSON(nil, jsonvalue.Map{{Key: "tasks", Value: jsonvalue.Number("0")}}), Partition: 0}
	if err := s.writeConfig(ctx, commit, targetStateRecord(name, offsetstore.TargetStopped)); err != nil {
		return answer{}, err
	}
	return answer{code: http.StatusNoContent}, nil
}

// setState is PUT /connectors/{name}/pause (PAUSED) and resume (STARTED): 202.
func (s *Sim) setState(ctx context.Context, name, state string) (answer, error) {
	defer s.lock(name)()
	_, ok, err := s.current(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, unknownConnector(name))
	}
	if err := s.writeConfig(ctx, targetStateRecord(name, state)); err != nil {
		return answer{}, err
	}
	return answer{code: http.StatusAccepted}, nil
}

// restart is POST /connectors/{name}/restart: nothing runs, so nothing restarts; 204, or with
// includeTasks or onlyFailed 202 and the status, as Connect answers.
func (s *Sim) restart(ctx context.Context, name string, q url.Values) (answer, error) {
	cfg, ok, err := s.lookup(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, errorf(http.StatusNotFound, "Unknown connector: %s", name))
	}
	if q.Get("includeTasks") == "true" || q.Get("onlyFailed") == "true" {
		return answer{code: http.StatusAccepted, body: s.stateOf(name, cfg)}, nil
	}
	return answer{code: http.StatusNoContent}, nil
}

// delete is DELETE /connectors/{name}: tombstones of connector-<name> and target-state-<name>,
// in KafkaConfigBackingStore.removeConnectorConfig's order; 204. Offsets and groups stay.
func (s *Sim) delete(ctx context.Context, name string) (answer, error) {
	defer s.lock(name)()
	_, ok, err := s.current(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, notFound(name))
	}
	if err := s.writeConfig(ctx, offsetstore.Record{Key: connectorKey(name), Partition: 0},
		offsetstore.Record{Key: targetStateKey(name), Partition: 0}); err != nil {
		return answer{}, err
	}
	return answer{code: http.StatusNoContent}, nil
}

// readBody reads a request body, bounded.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	return b, nil
}

// parseConfig reads a JSON object of strings into a config in its order, as Jackson reads a
// Map<String, String> into a LinkedHashMap: numbers and booleans become their text, null stays
// null, a repeated key keeps its first place and takes its last value. What Jackson cannot
// read is a 500, as ConnectExceptionMapper answers it.
func parseConfig(b []byte) (events.Config, error) {
	sc := jsonvalue.NewScanner(b)
	m, err := sc.Object()
	if err == nil && !sc.AtEnd() {
		err = fmt.Errorf("trailing data at byte %d", sc.Pos())
	}
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "Cannot deserialize the connector config: %v", err)
	}
	var cfg events.Config
	at := map[string]int{}
	for _, f := range m {
		e := events.ConfigEntry{Key: f.Key}
		switch v := f.Value.(type) {
		case nil:
			e.Null = true
		case string:
			e.Value = v
		case jsonvalue.Number:
			e.Value = string(v)
		case bool:
			e.Value = fmt.Sprint(v)
		default:
			return nil, errorf(http.StatusInternalServerError, "Cannot deserialize value of type `java.lang.String` from %s value (config key %q)", kindOf(v), f.Key)
		}
		if i, ok := at[f.Key]; ok {
			cfg[i] = e
			continue
		}
		at[f.Key] = len(cfg)
		cfg = append(cfg, e)
	}
	return cfg, nil
}

func kindOf(v any) string {
	if _, ok := v.([]any); ok {
		return "Array"
	}
	return "Object"
}

// checkConfig applies Connect's checks of a config sent for connector name
// (docs/connect-internals.md, "Validating a new connector"): the name in the config, a
// connector.class, an installed plugin; it appends "name" when missing.
func (s *Sim) checkConfig(name string, cfg events.Config) (events.Config, error) {
	if got, ok := cfg.Get("name"); ok && got != name {
		return nil, errorf(http.StatusBadRequest, "Connector name configuration (%s) doesn't match connector name in the URL (%s)", got, name)
	}
	if _, ok := cfg.Get("name"); !ok {
		cfg = append(cfg, events.ConfigEntry{Key: "name", Value: name})
	}
	class, ok := cfg.Get("connector.class")
	if !ok || class == "" {
		return nil, errorf(http.StatusBadRequest, "Connector config %s contains no connector type", javaMapString(cfg))
	}
	if _, ok := s.byName[class]; !ok {
		return nil, errorf(http.StatusBadRequest, "%s", s.noSuchClass(class))
	}
	return cfg, nil
}

// javaMapString is a config as Java's Map.toString prints a HashMap of it.
func javaMapString(cfg events.Config) string {
	m := make(jsonvalue.Map, 0, len(cfg))
	for _, e := range cfg {
		var v any = e.Value
		if e.Null {
			v = nil
		}
		m = append(m, jsonvalue.Field{Key: e.Key, Value: v})
	}
	return offsetstore.JavaString(m, true)
}

// putConfig is PUT /connectors/{name}/config: creates the connector (201) or replaces its
// config (200), answering its ConnectorInfo. It writes connector-<name> only (a new
// connector takes a target state left for its name, or runs).
func (s *Sim) putConfig(ctx context.Context, name string, r *http.Request) (answer, error) {
	b, err := readBody(r)
	if err != nil {
		return answer{}, err
	}
	cfg, err := parseConfig(b)
	if err != nil {
		return answer{}, err
	}
	if cfg, err = s.checkConfig(name, cfg); err != nil {
		return answer{}, err
	}
	defer s.lock(name)()
	_, exists, err := s.current(ctx, name)
	if err != nil {
		return answer{}, err
	}
	if err := s.writeConfig(ctx, connectorRecord(name, cfg)); err != nil {
		return answer{}, err
	}
	code := http.StatusCreated
	if exists {
		code = http.StatusOK
	}
	return answer{code: code, body: s.infoOf(name, cfg.Map())}, nil
}

// create is POST /connectors: {"name", "config", "initial_state"} (KIP-980), a 409 for a name
// that exists; with an initial state the target state goes first ("Write order"). 201 and the
// ConnectorInfo.
func (s *Sim) create(ctx context.Context, r *http.Request) (answer, error) {
	b, err := readBody(r)
	if err != nil {
		return answer{}, err
	}
	req, err := events.ParseCreateRequest(b)
	if err != nil {
		return answer{}, errorf(http.StatusInternalServerError, "%v", err)
	}
	if req.HasInitialOffsets || req.Create != "" {
		// Connect's CreateConnectorRequest has neither field: Jackson refuses it.
		field := "initial_offsets"
		if req.Create != "" {
			field = "create"
		}
		return answer{}, errorf(http.StatusInternalServerError, "Unrecognized field %q (class org.apache.kafka.connect.runtime.rest.entities.CreateConnectorRequest), not marked as ignorable", field)
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		return answer{}, errorf(http.StatusBadRequest, "Connector name must not be empty")
	}
	if req.Config == nil {
		return answer{}, errorf(http.StatusBadRequest, "Connector config must not be empty")
	}
	state := ""
	switch strings.ToUpper(req.InitialState) {
	case "":
	case "RUNNING":
		state = offsetstore.TargetStarted
	case "PAUSED", "STOPPED":
		state = strings.ToUpper(req.InitialState)
	default:
		return answer{}, errorf(http.StatusInternalServerError, "Cannot construct instance of `CreateConnectorRequest`, problem: Unknown initial state %s", req.InitialState)
	}
	cfg, err := s.checkConfig(name, req.Config)
	if err != nil {
		return answer{}, err
	}
	defer s.lock(name)()
	_, exists, err := s.current(ctx, name)
	if err != nil {
		return answer{}, err
	}
	if exists {
		return answer{}, errorf(http.StatusConflict, "Connector %s already exists", name)
	}
	recs := []offsetstore.Record{connectorRecord(name, cfg)}
	if state != "" {
		recs = append([]offsetstore.Record{targetStateRecord(name, state)}, recs...)
	}
	if err := s.writeConfig(ctx, recs...); err != nil {
		return answer{}, err
	}
	return answer{code: http.StatusCreated, body: s.infoOf(name, cfg.Map())}, nil
}
