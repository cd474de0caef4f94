package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
)

// The stage loop itself costs a request one allocation, its stage reports: the stage table
// holds method expressions (method values bound to the Creator were a closure each, per
// request) and a fault point's name is built only when a fault hook is installed. A request
// that fails its first stage shows the loop's cost beside the stage's own.
func TestStageLoopAllocations(t *testing.T) {
	ctx := context.Background()
	c := &Creator{}
	req := &events.Request{ID: "r", Data: events.CreateRequest{Name: "c", LoneSurrogates: []string{"config.name"}}}
	var failure *Failure
	var j *job // on the heap in both runs, as a request's job is
	loop := testing.AllocsPerRun(100, func() {
		j = &job{req: req}
		failure = c.runStages(ctx, ctx, time.Time{}, j)
	})
	require.NotNil(t, failure)
	alone := testing.AllocsPerRun(100, func() {
		j = &job{req: req}
		failure = c.toFailure(StepValidateConfig, c.validateConfig(ctx, j))
	})
	require.LessOrEqual(t, loop-alone, 1.0, "allocations of the stage loop (%v with the stage, %v the stage alone)", loop, alone)
}
