package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
)

// restReader reads A's connectors from its Connect REST API (Connect 3.5+ for offsets and
// stop).
type restReader struct {
	c   *connectrest.Client
	reg *connectors.Registry
}

func newRESTReader(baseURL string, hc *http.Client, reg *connectors.Registry) (*restReader, error) {
	c, err := connectrest.New(baseURL, hc)
	if err != nil {
		return nil, err
	}
	return &restReader{c: c, reg: reg}, nil
}

// rootInfo is GET / of a Connect worker.
type rootInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	KafkaClusterID string `json:"kafka_cluster_id"`
}

func (r *restReader) root(ctx context.Context) (rootInfo, error) {
	var ri rootInfo
	_, err := r.c.Call(ctx, http.MethodGet, "/", nil, &ri)
	return ri, err
}

// connectorInfo is ConnectorInfo: GET /connectors/{name}, and "info" of the expanded list.
type connectorInfo struct {
	Name   string          `json:"name"`
	Config json.RawMessage `json:"config"`
	Type   string          `json:"type"`
}

// connectorStatus is ConnectorStateInfo: GET /connectors/{name}/status.
type connectorStatus struct {
	Connector struct {
		State string `json:"state"`
	} `json:"connector"`
	Tasks []json.RawMessage `json:"tasks"`
	Type  string            `json:"type"`
}

// list returns A's connectors with configs, states and offsets. The expanded listing drops
// connectors that have no status yet, so it is cross-checked with the plain one and the
// missing ones are read one by one.
func (r *restReader) list(ctx context.Context) ([]*Connector, error) {
	var names []string
	if _, err := r.c.Call(ctx, http.MethodGet, "/connectors", nil, &names); err != nil {
		return nil, fmt.Errorf("list connectors: %w", err)
	}
	var expanded map[string]struct {
		Info   *connectorInfo   `json:"info"`
		Status *connectorStatus `json:"status"`
	}
	if _, err := r.c.Call(ctx, http.MethodGet, "/connectors?expand=info&expand=status", nil, &expanded); err != nil {
		return nil, fmt.Errorf("list connectors with info and status: %w", err)
	}
	for n := range expanded {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]*Connector, 0, len(names))
	for _, name := range names {
		e := expanded[name]
		c := &Connector{Name: name}
		out = append(out, c)
		info, st := e.Info, e.Status
		if info == nil {
			info = &connectorInfo{}
			if _, err := r.c.Call(ctx, http.MethodGet, "/connectors/"+url.PathEscape(name), nil, info); err != nil {
				c.Problem = fmt.Sprintf("read connector: %v", err)
				continue
			}
		}
		if st == nil {
			st = &connectorStatus{}
			if status, err := r.c.Call(ctx, http.MethodGet, "/connectors/"+url.PathEscape(name)+"/status", nil, st, http.StatusNotFound); err != nil || status == http.StatusNotFound {
				st = nil // no status yet (just created or unassigned): the state is not known
			}
		}
		if err := json.Unmarshal(info.Config, &c.Config); err != nil || c.Config == nil {
			c.Problem = fmt.Sprintf("read config: %v", err)
			continue
		}
		props := c.Config.Map()
		c.Type = r.reg.TypeOf(props)
		switch info.Type {
		case "source":
			c.Type = connectors.Source
		case "sink":
			c.Type = connectors.Sink
		}
		if st == nil {
			c.StateUnknown = "A's REST API has no status for it yet, so its target state (RUNNING, PAUSED or STOPPED) is not known"
		} else {
			c.State, c.StateUnknown = statusState(st.Connector.State)
		}
		if c.Type == connectors.Sink {
			c.Group = sinkGroup(name, props)
		}
		c.setOffsets(r.offsets(ctx, c))
	}
	return out, nil
}

// statusState maps a connector's status to the state to create it in. RUNNING, PAUSED and
// STOPPED are what the worker made of the target state. FAILED, UNASSIGNED and RESTARTING say
// nothing of it: a failed connector keeps that status when it is paused or stopped (its
// worker does not act on a new target state), an unassigned one has no worker to act on it, and
// a restart may be on its way to any of them. The state is then "" and unknown says why.
func statusState(s string) (state, unknown string) {
	switch s {
	case StateRunning, StatePaused, StateStopped:
		return s, ""
	default:
		return "", fmt.Sprintf("its status on A's REST API is %s, which does not tell its target state (RUNNING, PAUSED or STOPPED)", s)
	}
}

func (r *restReader) offsets(ctx context.Context, c *Connector) ([]events.ConnectorOffset, error) {
	var body struct {
		Offsets []events.ConnectorOffset `json:"offsets"`
	}
	if _, err := r.c.Call(ctx, http.MethodGet, "/connectors/"+url.PathEscape(c.Name)+"/offsets", nil, &body); err != nil {
		return nil, fmt.Errorf("read offsets: %w", err)
	}
	if body.Offsets == nil {
		body.Offsets = []events.ConnectorOffset{}
	}
	return body.Offsets, nil
}

// status is the connector's state and number of tasks.
func (r *restReader) status(ctx context.Context, name string) (string, int, error) {
	var st connectorStatus
	if _, err := r.c.Call(ctx, http.MethodGet, "/connectors/"+url.PathEscape(name)+"/status", nil, &st); err != nil {
		return "", 0, fmt.Errorf("read status: %w", err)
	}
	return st.Connector.State, len(st.Tasks), nil
}

// stop is PUT /connectors/{name}/stop (Connect 3.5+). Connect answers 204 (202 while a
// rebalance is pending) before the tasks have stopped and committed.
func (r *restReader) stop(ctx context.Context, name string) error {
	if _, err := r.c.Call(ctx, http.MethodPut, "/connectors/"+url.PathEscape(name)+"/stop", nil, nil); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}

// plugins lists the connector plugin classes of the cluster.
func (r *restReader) plugins(ctx context.Context) ([]string, error) {
	var ps []struct {
		Class string `json:"class"`
	}
	if _, err := r.c.Call(ctx, http.MethodGet, "/connector-plugins?connectorsOnly=true", nil, &ps); err != nil {
		return nil, fmt.Errorf("list connector plugins: %w", err)
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Class)
	}
	return out, nil
}
