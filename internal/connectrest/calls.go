package connectrest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/offsetagent/offsetagent/events"
)

// Connect's endpoints, one call each. A name is path-escaped; an answer is decoded into
// Connect's REST entity; Connect's own error answer is an *Error (Call).

// RootInfo is GET / of a Connect worker (ServerInfo).
type RootInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	KafkaClusterID string `json:"kafka_cluster_id"`
}

// Root is GET /: the worker's version and commit, and its Kafka cluster's id.
func (c *Client) Root(ctx context.Context) (RootInfo, error) {
	var ri RootInfo
	_, err := c.do(ctx, http.MethodGet, "/", nil, &ri)
	return ri, err
}

// Names is GET /connectors: the names of the cluster's connectors.
func (c *Client) Names(ctx context.Context) ([]string, error) {
	var names []string
	_, err := c.do(ctx, http.MethodGet, "/connectors", nil, &names)
	return names, err
}

// ConnectorInfo is ConnectorInfo: GET /connectors/{name}, and "info" of the expanded list. The
// config is left as Connect wrote it, for the caller to decode in the order it needs.
type ConnectorInfo struct {
	Name   string          `json:"name"`
	Config json.RawMessage `json:"config"`
	Type   string          `json:"type"`
}

// Status is ConnectorStateInfo: GET /connectors/{name}/status.
type Status struct {
	Name      string      `json:"name"`
	Connector State       `json:"connector"`
	Tasks     []TaskState `json:"tasks"`
	Type      string      `json:"type"`
}

// State is the state of a connector on its worker (RUNNING, PAUSED, STOPPED, FAILED,
// UNASSIGNED, RESTARTING) with its trace when it failed.
type State struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// TaskState is the state of one task.
type TaskState struct {
	ID int `json:"id"`
	State
}

// Expanded is one connector of GET /connectors?expand=info&expand=status. Connect leaves
// out a connector it has no status for yet (just created, or unassigned): Names lists it.
type Expanded struct {
	Info   *ConnectorInfo `json:"info"`
	Status *Status        `json:"status"`
}

// Expanded is GET /connectors?expand=info&expand=status: every connector with its info and
// status, by name.
func (c *Client) Expanded(ctx context.Context) (map[string]Expanded, error) {
	var out map[string]Expanded
	_, err := c.do(ctx, http.MethodGet, "/connectors?expand=info&expand=status", nil, &out)
	return out, err
}

// Info is GET /connectors/{name}.
func (c *Client) Info(ctx context.Context, name string) (ConnectorInfo, error) {
	var info ConnectorInfo
	_, err := c.do(ctx, http.MethodGet, connectorPath(name), nil, &info)
	return info, err
}

// Status is GET /connectors/{name}/status; ok is false when Connect answers 404 (a connector
// it does not know, or one with no status yet).
func (c *Client) Status(ctx context.Context, name string) (st Status, ok bool, err error) {
	code, err := c.do(ctx, http.MethodGet, connectorPath(name)+"/status", nil, &st, http.StatusNotFound)
	return st, err == nil && code != http.StatusNotFound, err
}

// Exists reports whether the cluster has the connector: GET /connectors/{name} answers 200 for
// a connector it knows and 404 for one it does not.
func (c *Client) Exists(ctx context.Context, name string) (bool, error) {
	status, err := c.do(ctx, http.MethodGet, connectorPath(name), nil, nil, http.StatusNotFound)
	if err != nil {
		return false, err
	}
	return status == http.StatusOK, nil
}

// offsetsBody is ConnectorOffsets, the body of GET and PATCH /connectors/{name}/offsets.
type offsetsBody struct {
	Offsets []events.ConnectorOffset `json:"offsets"`
}

// Offsets is GET /connectors/{name}/offsets (Connect 3.5+): the connector's offsets in the
// KIP-875 shape, empty (not nil) for none.
func (c *Client) Offsets(ctx context.Context, name string) ([]events.ConnectorOffset, error) {
	var body offsetsBody
	if _, err := c.do(ctx, http.MethodGet, connectorPath(name)+"/offsets", nil, &body); err != nil {
		return nil, err
	}
	if body.Offsets == nil {
		body.Offsets = []events.ConnectorOffset{}
	}
	return body.Offsets, nil
}

// AlterOffsets is PATCH /connectors/{name}/offsets (Connect 3.6+): Connect alters the
// offsets of a STOPPED connector to these (a null offset resets its partition) and answers
// with a message once they are written.
func (c *Client) AlterOffsets(ctx context.Context, name string, offsets []events.ConnectorOffset) error {
	body, err := json.Marshal(offsetsBody{Offsets: offsets})
	if err != nil {
		return fmt.Errorf("encode offsets of connector %q: %w", name, err)
	}
	_, err = c.do(ctx, http.MethodPatch, connectorPath(name)+"/offsets", body, nil)
	return err
}

// Stop is PUT /connectors/{name}/stop (Connect 3.5+). Connect answers 204 (202 while a
// rebalance is pending) before the tasks have stopped and committed.
func (c *Client) Stop(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name)+"/stop", nil, nil)
	return err
}

// Pause is PUT /connectors/{name}/pause.
func (c *Client) Pause(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name)+"/pause", nil, nil)
	return err
}

// Resume is PUT /connectors/{name}/resume.
func (c *Client) Resume(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name)+"/resume", nil, nil)
	return err
}

// Delete is DELETE /connectors/{name}. It removes the connector's config, not its source
// offsets nor its sink group.
func (c *Client) Delete(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, connectorPath(name), nil, nil)
	return err
}

// Topics is GET /connectors/{name}/topics (KIP-558, Connect 2.5+): the topics the connector
// has used. ok is false when the worker does not track them: a 4xx answer
// (topic.tracking.enable=false, or an older worker).
func (c *Client) Topics(ctx context.Context, name string) (topics []string, ok bool, err error) {
	var body map[string]struct {
		Topics []string `json:"topics"`
	}
	code, err := c.do(ctx, http.MethodGet, connectorPath(name)+"/topics", nil, &body,
		http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusConflict)
	if err != nil || code >= 300 {
		return nil, false, err
	}
	return body[name].Topics, true, nil
}

// Plugin is one entry of GET /connector-plugins (PluginInfo).
type Plugin struct {
	Class   string `json:"class"`
	Type    string `json:"type"`
	Version string `json:"version"`
}

// Plugins is GET /connector-plugins?connectorsOnly=true: the connector plugins of the
// cluster (Connect versions before 3.2 ignore connectorsOnly and list only connectors anyway).
func (c *Client) Plugins(ctx context.Context) ([]Plugin, error) {
	var ps []Plugin
	_, err := c.do(ctx, http.MethodGet, "/connector-plugins?connectorsOnly=true", nil, &ps)
	return ps, err
}

// ConfigInfos is Connect's ConfigInfos entity, the validate response.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// ConfigInfo is one ConfigInfo: the key's definition (kept opaque) and its validated value.
type ConfigInfo struct {
	Definition json.RawMessage `json:"definition"`
	Value      ConfigValue     `json:"value"`
}

// ConfigValue is a ConfigValueInfo: a key's value as validated, with its errors.
type ConfigValue struct {
	Name   string   `json:"name"`
	Errors []string `json:"errors"`
}

// Validate is PUT /connector-plugins/{class}/config/validate with config (anything
// encoding/json writes as a JSON object of strings: a map[string]string, an events.Config)
// as the body, and Connect's ConfigInfos as it answers it: a config with errors is an answer
// like any other (ErrorCount > 0), for the caller to judge.
func (c *Client) Validate(ctx context.Context, class string, config any) (ConfigInfos, error) {
	body, err := json.Marshal(config)
	if err != nil {
		return ConfigInfos{}, fmt.Errorf("encode config of %q: %w", class, err)
	}
	var infos ConfigInfos
	_, err = c.do(ctx, http.MethodPut, "/connector-plugins/"+url.PathEscape(class)+"/config/validate", body, &infos)
	return infos, err
}

func connectorPath(name string) string { return "/connectors/" + url.PathEscape(name) }
