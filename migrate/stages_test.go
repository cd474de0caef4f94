package migrate

import (
	"context"

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
func planOn(ctx context.Context, src *source.A, b *targetSide, opts Options) (*fleetPlan, error) {
	return buildPlan(ctx, src, b, planOptions{Hazard: opts.hazardOptions(false), AllowEmpty: opts.AllowEmpty})
}

// buildOn builds the bodies of p's connectors (stopping them with StopSource), as Export does.
func buildOn(ctx context.Context, src *source.A, p *fleetPlan, opts Options) []*Entry {
	entries := entriesOf(p)
	(&applier{opts: opts.applyOptions(), a: src, blocked: p.Blocked}).build(ctx, entries)
	return entries
}

// checksOn are the hazard checks of opts against A (a) and B (b).
func checksOn(opts Options, a *source.A, b *targetSide) *checks {
	opts.defaults()
	if a == nil {
		a = source.Unopened(opts.sourceOptions())
	}
	return &checks{opts: opts.hazardOptions(false), a: a, b: b}
}
