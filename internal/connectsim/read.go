package connectsim

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// lookup returns connector name's config: from the view, else after reading the config topic
// to its end (a connector written a moment ago).
func (s *Sim) lookup(ctx context.Context, name string) (map[string]string, bool, error) {
	if cfg, ok := s.store.ConnectorConfig(name); ok {
		return cfg, true, nil
	}
	if err := s.store.Sync(ctx, s.cfg.Topics.ConfigTopic); err != nil {
		return nil, false, fmt.Errorf("read config topic %q: %w", s.cfg.Topics.ConfigTopic, err)
	}
	cfg, ok := s.store.ConnectorConfig(name)
	return cfg, ok, nil
}

// restState is the state the REST API shows for a connector: its target state, STARTED
// spelled RUNNING (docs/connect-internals.md, "Target states").
func (s *Sim) restState(name string) string {
	state, _ := s.store.TargetState(name)
	if state == offsetstore.TargetStarted || state == "" {
		return "RUNNING"
	}
	return state
}

// typeOf is the connector's type as the worker reports it: its plugin's, "unknown" for a class
// that is not installed.
func (s *Sim) typeOf(cfg map[string]string) string {
	if p, ok := s.byName[cfg["connector.class"]]; ok {
		return p.Type
	}
	return "unknown"
}

// connectorInfo is Connect's ConnectorInfo; no task, since none runs.
type connectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []any             `json:"tasks"`
	Type   string            `json:"type"`
}

// stateInfo is Connect's ConnectorStateInfo.
type stateInfo struct {
	Name      string `json:"name"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		// Version is the plugin's version, since 4.1 (KIP-891), when the plugin is installed.
		Version string `json:"version,omitempty"`
	} `json:"connector"`
	Tasks []any  `json:"tasks"`
	Type  string `json:"type"`
}

func (s *Sim) infoOf(name string, cfg map[string]string) connectorInfo {
	return connectorInfo{Name: name, Config: cfg, Tasks: []any{}, Type: s.typeOf(cfg)}
}

func (s *Sim) stateOf(name string, cfg map[string]string) stateInfo {
	st := stateInfo{Name: name, Tasks: []any{}, Type: s.typeOf(cfg)}
	st.Connector.State, st.Connector.WorkerID = s.restState(name), s.cfg.WorkerID
	if p, ok := s.byName[cfg["connector.class"]]; ok && s.pluginVersions {
		st.Connector.Version = p.Version
	}
	return st
}

// root is GET /: ServerInfo.
func (s *Sim) root(ctx context.Context) (answer, error) {
	id, err := s.kafkaClusterID(ctx)
	if err != nil {
		return answer{}, err
	}
	return answer{code: http.StatusOK, body: map[string]string{"version": s.cfg.Version, "commit": s.cfg.Commit, "kafka_cluster_id": id}}, nil
}

// list is GET /connectors: the names, or with expand=status and/or expand=info (repeated;
// other values ignored, as Connect logs and ignores them) an object by name.
func (s *Sim) list(q url.Values) (answer, error) {
	names := s.store.ConnectorNames()
	expand, expanded := q["expand"]
	if !expanded {
		out := make([]string, 0, len(names))
		for _, n := range names {
			if _, ok := s.store.ConnectorConfig(n); ok {
				out = append(out, n)
			}
		}
		return answer{code: http.StatusOK, body: out}, nil
	}
	status, info := slices.Contains(expand, "status"), slices.Contains(expand, "info")
	out := make(map[string]map[string]any, len(names))
	for _, n := range names {
		cfg, ok := s.store.ConnectorConfig(n)
		if !ok {
			continue // only a malformed record: a worker skips it
		}
		e := map[string]any{}
		if status {
			e["status"] = s.stateOf(n, cfg)
		}
		if info {
			e["info"] = s.infoOf(n, cfg)
		}
		out[n] = e
	}
	return answer{code: http.StatusOK, body: out}, nil
}

// info is GET /connectors/{name}.
func (s *Sim) info(ctx context.Context, name string) (answer, error) {
	cfg, ok, err := s.lookup(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, notFound(name))
	}
	return answer{code: http.StatusOK, body: s.infoOf(name, cfg)}, nil
}

// config is GET /connectors/{name}/config.
func (s *Sim) config(ctx context.Context, name string) (answer, error) {
	cfg, ok, err := s.lookup(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, notFound(name))
	}
	return answer{code: http.StatusOK, body: cfg}, nil
}

// statusOf is GET /connectors/{name}/status. Connect answers a connector without a status
// record "No status found"; here every connector has the status of its target state.
func (s *Sim) statusOf(ctx context.Context, name string) (answer, error) {
	cfg, ok, err := s.lookup(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, errorf(http.StatusNotFound, "No status found for connector %s", name))
	}
	return answer{code: http.StatusOK, body: s.stateOf(name, cfg)}, nil
}

// tasks is GET /connectors/{name}/tasks: none.
func (s *Sim) tasks(ctx context.Context, name string) (answer, error) {
	_, ok, err := s.lookup(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, notFound(name))
	}
	return answer{code: http.StatusOK, body: []any{}}, nil
}

// offsets is GET /connectors/{name}/offsets, read as the agent reads them
// (handlers.Offsets: the offsets topics to their end, or the sink's group).
func (s *Sim) offsets(ctx context.Context, name string) (answer, error) {
	_, ok, err := s.lookup(ctx, name)
	if err != nil || !ok {
		return answer{}, firstErr(err, notFound(name))
	}
	out, err := handlers.Offsets(ctx, s.store, s.reg, s.cfg.Topics.OffsetsTopic, name)
	if err != nil {
		return answer{}, err
	}
	return answer{code: http.StatusOK, body: out}, nil
}

// firstErr is err when there is one, else the answer given.
func firstErr(err error, otherwise *apiError) error {
	if err != nil {
		return err
	}
	return otherwise
}
