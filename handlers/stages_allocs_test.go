package handlers

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/alloctest"
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
	loop := alloctest.Least(100, func() {
		j = &job{req: req}
		failure = c.runStages(ctx, ctx, time.Time{}, j)
	})
	require.NotNil(t, failure)
	alone := alloctest.Least(100, func() {
		j = &job{req: req}
		failure = c.toFailure(StepValidateConfig, c.validateConfig(ctx, j))
	})
	require.LessOrEqual(t, loop-alone, 1.0, "allocations of the stage loop (%v with the stage, %v the stage alone)", loop, alone)
}

// The existence check of a source request with offsets starts the read of the global offsets
// topic to its end together with the config topic's, and leaves the wait for it to the
// snapshot: no goroutine and channel per request to wait meanwhile (the read is in flight
// either way).
func TestCheckNotExistsAllocations(t *testing.T) {
	ctx := context.Background()
	store := newFakeStore()
	c := newTestCreator(t, store, nil)
	req := &events.Request{ID: "r", Data: events.CreateRequest{Name: "c", HasInitialOffsets: true}}
	j := &job{req: req, name: "c", typ: connectors.Source}
	var err error
	allocs := alloctest.Least(100, func() {
		j.globalSynced = nil
		err = c.checkNotExists(ctx, j)
	})
	require.NoError(t, err)
	require.NotNil(t, j.globalSynced)
	require.NoError(t, j.globalSynced(ctx))
	// The test store's waits (syncEach, five) and the wait kept for the snapshot.
	t.Logf("%.0f allocations", allocs)
	require.LessOrEqual(t, allocs, 6.0)
}

// checkConfig copies the request's name, config and initial state out of the decoded request
// in one allocation, not one per string (a MirrorMaker 2 config's were twelve).
func TestCheckConfigAllocations(t *testing.T) {
	c := &Creator{}
	config := events.Config{{Key: "connector.class", Value: "org.apache.kafka.connect.mirror.MirrorSourceConnector"},
		{Key: "source.cluster.alias", Value: "src"}, {Key: "target.cluster.alias", Value: "dst"}, {Key: "topics", Value: ".*"},
		{Key: "tasks.max", Value: "4"}}
	var j *job
	var err error
	allocs := alloctest.Least(100, func() {
		j = &job{req: &events.Request{ID: "r", Data: events.CreateRequest{Name: "mm2", Config: config, InitialState: "RUNNING"}}, name: "mm2"}
		err = c.checkConfig(j)
	})
	require.NoError(t, err)
	require.Equal(t, "mm2", j.name)
	require.Equal(t, "RUNNING", j.req.Data.InitialState)
	require.Equal(t, append(slices.Clone(config), events.ConfigEntry{Key: "name", Value: "mm2"}), j.config)
	t.Logf("%.0f allocations", allocs)
	// The job and its request, the copies, the config's slice, its map (Map). 17 with a copy
	// per string.
	require.LessOrEqual(t, allocs, 6.0)
}
