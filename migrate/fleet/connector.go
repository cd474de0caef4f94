package fleet

import (
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
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
	Problem Text
}

// KnownState reports whether s is an initial state of a body.
func KnownState(s string) bool {
	return s == StateRunning || s == StatePaused || s == StateStopped
}

// SinkGroup is the consumer group of sink connector name with config props
// (docs/connect-internals.md, "Sink connector offsets"): the
// connector's consumer.override.group.id, else connect-<name>. A worker-level consumer.group.id
// is not visible from the topics and is not honoured.
func SinkGroup(name string, props map[string]string) string {
	if g := props["consumer.override.group.id"]; g != "" {
		return g
	}
	return "connect-" + name
}
