package strimzi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// VerifyOptions configure VerifyStrimzi.
type VerifyOptions struct {
	// Dir is the manifests directory a migration into an operator-managed cluster wrote.
	Dir string
	// ConnectURL is B's Connect REST API.
	ConnectURL string
	// HTTPClient calls it; nil means a client with a 30 s timeout.
	HTTPClient *http.Client
}

// Verified is what VerifyStrimzi found of one connector.
type Verified struct {
	Name string `json:"name"`
	// OK: the connector exists in the state its manifest declares, and its offsets start at
	// those placed.
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// VerifyStrimzi checks, through B's REST API, each connector of a migration into an
// operator-managed cluster (the lines of PlacedFile in opts.Dir): that it exists, in the
// state its manifest declares, with no failed task, and that it runs with the offsets placed:
// every partition placed has an offset on B; a sink's is at or past the one placed; a paused
// or stopped connector's is the one placed, exactly (a running source may have moved on: its
// offsets have no order to compare).
func VerifyStrimzi(ctx context.Context, opts VerifyOptions) ([]Verified, error) {
	placed, err := ReadPlaced(opts.Dir)
	if err != nil {
		return nil, err
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	rest, err := connectrest.New(opts.ConnectURL, hc)
	if err != nil {
		return nil, fleet.Errorf("%s: %w", fleet.ToConnectURL, err)
	}
	out := make([]Verified, 0, len(placed))
	for _, p := range placed {
		msg := verifyOne(ctx, rest, p)
		out = append(out, Verified{Name: p.Name, OK: msg == "", Message: msg})
		if msg == "" {
			out[len(out)-1].Message = fmt.Sprintf("%s with the %d offsets placed", p.State, len(p.Offsets))
		}
	}
	return out, nil
}

// verifyOne returns what is wrong with connector p on B ("" when nothing is).
func verifyOne(ctx context.Context, rest *connectrest.Client, p Placed) string {
	st, ok, err := rest.Status(ctx, p.Name)
	switch {
	case err != nil:
		return fmt.Sprintf("read status: %v", err)
	case !ok:
		return "not on B: apply its manifest (the operator creates it)"
	case st.Connector.State != p.State:
		return fmt.Sprintf("%s, its manifest declares %s", st.Connector.State, p.State)
	}
	for _, t := range st.Tasks {
		if t.State.State == "FAILED" {
			return fmt.Sprintf("task %d FAILED", t.ID)
		}
	}
	offs, err := rest.Offsets(ctx, p.Name)
	if err != nil {
		return fmt.Sprintf("read offsets: %v", err)
	}
	have := map[string]events.ConnectorOffset{}
	for _, o := range offs {
		have[jsonvalue.SortedText(o.Partition)] = o
	}
	for _, want := range p.Offsets {
		got, ok := have[jsonvalue.SortedText(want.Partition)]
		if !ok {
			return fmt.Sprintf("no offset on B for partition %s: it did not start at the offsets placed", jsonvalue.SortedText(want.Partition))
		}
		if p.Type == string(connectors.Sink) {
			w, g := fleet.SinkOffset(want.Offset), fleet.SinkOffset(got.Offset)
			if g < w {
				return fmt.Sprintf("partition %s at offset %d, before the %d placed", jsonvalue.SortedText(want.Partition), g, w)
			}
			if p.State != fleet.StateRunning && g != w {
				return fmt.Sprintf("partition %s at offset %d, not the %d placed, while %s", jsonvalue.SortedText(want.Partition), g, w, p.State)
			}
			continue
		}
		if p.State != fleet.StateRunning && jsonvalue.SortedText(got.Offset) != jsonvalue.SortedText(want.Offset) {
			return fmt.Sprintf("partition %s at %s, not the %s placed, while %s", jsonvalue.SortedText(want.Partition), jsonvalue.SortedText(got.Offset), jsonvalue.SortedText(want.Offset), p.State)
		}
	}
	return ""
}
