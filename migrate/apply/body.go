package apply

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// Body is a KIP-995 create body: POST /connectors with initial_state (KIP-980) and
// initial_offsets in the KIP-875 shape.
type Body struct {
	Name         string
	Config       events.Config
	InitialState string
	// InitialOffsets are written when HasOffsets; an absent field leaves B's offsets alone.
	InitialOffsets []events.ConnectorOffset
	HasOffsets     bool
	// Create is the request's "create" ("" for the agent's default; events.CreateOffsetsOnly
	// into an operator-managed cluster).
	Create string
}

// MarshalJSON writes {"name", "config", "initial_state", "initial_offsets"} in that order, the
// config in its order and numbers as their literal text.
func (b Body) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	name, err := json.Marshal(b.Name)
	if err != nil {
		return nil, err
	}
	buf.WriteString(`{"name":`)
	buf.Write(name)
	cfg, err := b.Config.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode config of connector %q: %w", b.Name, err)
	}
	buf.WriteString(`,"config":`)
	buf.Write(cfg)
	if b.InitialState != "" {
		fmt.Fprintf(&buf, `,"initial_state":%q`, b.InitialState)
	}
	if b.HasOffsets {
		offs := b.InitialOffsets
		if offs == nil {
			offs = []events.ConnectorOffset{}
		}
		// Written straight from the ordered maps: encoding/json would check and compact
		// what their MarshalJSON wrote again, which made encoding the bodies of a large
		// migration cost about as much as publishing them.
		o := append(make([]byte, 0, 64*len(offs)), '[')
		for i, off := range offs {
			if i > 0 {
				o = append(o, ',')
			}
			o = append(o, `{"partition":`...)
			var err error
			if o, err = jsonvalue.Append(o, off.Partition); err == nil {
				o = append(o, `,"offset":`...)
				o, err = jsonvalue.Append(o, off.Offset)
			}
			if err != nil {
				return nil, fmt.Errorf("encode offsets of connector %q: %w", b.Name, err)
			}
			o = append(o, '}')
		}
		buf.WriteString(`,"initial_offsets":`)
		buf.Write(append(o, ']'))
	}
	if b.Create != "" {
		fmt.Fprintf(&buf, `,"create":%q`, b.Create)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// buildBody is the body for connector c on B as target, with cfg its config there
// (ConfigOnB), under the options.
func buildBody(c *fleet.Connector, target string, cfg events.Config, initialState string, sinkOffsets []events.ConnectorOffset, sinkMode fleet.SinkOffsetsMode) Body {
	b := Body{Name: target, Config: cfg, InitialState: c.State}
	if initialState != "" {
		b.InitialState = initialState
	}
	switch {
	case c.Type != connectors.Sink:
		b.InitialOffsets = c.Offsets
	case sinkMode == fleet.SinkOffsetsNone:
	default:
		b.InitialOffsets = sinkOffsets
	}
	// A connector with no offsets on A (never committed, or a group with no partitions) is
	// created without initial_offsets: an empty list is a request B's agent refuses, as
	// Connect refuses an empty PATCH .../offsets.
	b.HasOffsets = len(b.InitialOffsets) > 0
	return b
}
