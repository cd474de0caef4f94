package source

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
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

// list returns A's connectors with configs, states and offsets. The expanded listing drops
// connectors that have no status yet, so it is cross-checked with the plain one and the
// missing ones are read one by one.
func (r *restReader) list(ctx context.Context) ([]*fleet.Connector, error) {
	names, err := r.c.Names(ctx)
	if err != nil {
		return nil, fmt.Errorf("list connectors: %w", err)
	}
	expanded, err := r.c.Expanded(ctx)
	if err != nil {
		return nil, fmt.Errorf("list connectors with info and status: %w", err)
	}
	for n := range expanded {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]*fleet.Connector, 0, len(names))
	for _, name := range names {
		e := expanded[name]
		c := &fleet.Connector{Name: name}
		out = append(out, c)
		info, st := e.Info, e.Status
		if info == nil {
			got, err := r.c.Info(ctx, name)
			if err != nil {
				c.Problem = fleet.Textf("read connector: %v", err)
				continue
			}
			info = &got
		}
		if st == nil {
			if got, ok, err := r.c.Status(ctx, name); err == nil && ok {
				st = &got
			} // else no status yet (just created or unassigned): the state is not known
		}
		if err := json.Unmarshal(info.Config, &c.Config); err != nil || c.Config == nil {
			c.Problem = fleet.Textf("read config: %v", err)
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
			c.Group = fleet.SinkGroup(name, props)
		}
		offs, err := r.offsets(ctx, c)
		setOffsets(c, offs, err)
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
	case fleet.StateRunning, fleet.StatePaused, fleet.StateStopped:
		return s, ""
	default:
		return "", fmt.Sprintf("its status on A's REST API is %s, which does not tell its target state (RUNNING, PAUSED or STOPPED)", s)
	}
}

func (r *restReader) offsets(ctx context.Context, c *fleet.Connector) ([]events.ConnectorOffset, error) {
	offs, err := r.c.Offsets(ctx, c.Name)
	if err != nil {
		return nil, fmt.Errorf("read offsets: %w", err)
	}
	return offs, nil
}

// status is the connector's state and number of tasks.
func (r *restReader) status(ctx context.Context, name string) (string, int, error) {
	st, ok, err := r.c.Status(ctx, name)
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("read status: %w", err)
	case !ok:
		return "", 0, fmt.Errorf("read status: A's REST API does not know connector %q", name)
	}
	return st.Connector.State, len(st.Tasks), nil
}

// stop is PUT /connectors/{name}/stop (Connect 3.5+). Connect answers 204 (202 while a
// rebalance is pending) before the tasks have stopped and committed.
func (r *restReader) stop(ctx context.Context, name string) error {
	if err := r.c.Stop(ctx, name); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}

// activeTopics is GET /connectors/{name}/topics (KIP-558, Connect 2.5+): the topics the
// connector has used. ok is false when the worker does not track them (a 4xx answer:
// topic.tracking.enable=false, or an older worker) or cannot be asked.
func (r *restReader) activeTopics(ctx context.Context, name string) (topics []string, ok bool) {
	topics, ok, err := r.c.Topics(ctx, name)
	return topics, ok && err == nil
}
