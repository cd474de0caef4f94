package migrate

import (
	"slices"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Initial states of a KIP-995 body, in REST's spelling (KIP-980).
const (
	StateRunning = "RUNNING"
	StatePaused  = "PAUSED"
	StateStopped = "STOPPED"
)

// Connector is one connector as read from A.
type Connector struct {
	// Name is the connector's name on A.
	Name string
	// Config is its stored config (placeholders such as ${file:...} unresolved).
	Config events.Config
	// Type is source or sink.
	Type connectors.Type
	// State is A's target state in REST spelling: RUNNING, PAUSED or STOPPED; "" when A's
	// REST API does not tell it (StateUnknown says why).
	State string
	// StateUnknown says why State is not known ("" when it is): read through REST only, a
	// connector whose status is FAILED, UNASSIGNED or RESTARTING, or that has no status yet,
	// may have any target state.
	StateUnknown string
	// Offsets are its current offsets on A in the KIP-875 shape.
	Offsets []events.ConnectorOffset
	// Group is a sink's consumer group on A ("" for sources).
	Group string
	// Problem says why the connector does not move ("" when it does): bad input on A such as a
	// malformed config or offsets record or a pending task-config update, a state that cannot
	// be known, a refusal of the checks before anything is stopped, or a stop not reached.
	Problem string
}

// knownState reports whether s is an initial state of a body.
func knownState(s string) bool {
	return s == StateRunning || s == StatePaused || s == StateStopped
}

// restState maps a config-topic target state to REST's spelling.
func restState(target string) string {
	switch target {
	case offsetstore.TargetPaused:
		return StatePaused
	case offsetstore.TargetStopped:
		return StateStopped
	default:
		return StateRunning
	}
}

// sinkGroup is the consumer group of sink connector name with config props
// (docs/connect-internals.md, "Sink connector offsets"): the
// connector's consumer.override.group.id, else connect-<name>. A worker-level consumer.group.id
// is not visible from the topics and is not honoured.
func sinkGroup(name string, props map[string]string) string {
	if g := props["consumer.override.group.id"]; g != "" {
		return g
	}
	return "connect-" + name
}

// sortedConfig turns a config map into an events.Config in key order. The config topic's
// view keeps configs as maps; Connect readers parse a connector record into a map too, so the
// order carries no meaning.
func sortedConfig(props map[string]string) events.Config {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(events.Config, 0, len(keys))
	for _, k := range keys {
		out = append(out, events.ConfigEntry{Key: k, Value: props[k]})
	}
	return out
}

// setOffsets records the result of reading c's offsets: the offsets, or the error as its
// Problem.
func setOffsets(c *Connector, offs []events.ConnectorOffset, err error) {
	if err != nil {
		c.Problem = err.Error()
		return
	}
	c.Offsets = offs
}
