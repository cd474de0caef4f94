package migrate

import (
	"context"

	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/hazard"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/migrate/source"
)

// openA opens A as Export and Migrate do: opts with their defaults, checked.
func openA(ctx context.Context, opts *Options) (*source.A, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return source.Open(ctx, opts.sourceOptions())
}

// planOn plans opts' selection of A (src) against B (b; nil as for an export).
func planOn(ctx context.Context, src *source.A, b *hazard.B, opts Options) (*plan.Plan, error) {
	return plan.Build(ctx, src, b, plan.Options{Hazard: opts.hazardOptions(false), AllowEmpty: opts.AllowEmpty})
}

// buildOn builds the bodies of p's connectors (stopping them with StopSource), as Export does.
func buildOn(ctx context.Context, src *source.A, p *plan.Plan, opts Options) []*apply.Entry {
	entries := apply.EntriesOf(p)
	apply.New(opts.applyOptions(), src, p.Blocked, nil, nil).Build(ctx, entries)
	return entries
}
