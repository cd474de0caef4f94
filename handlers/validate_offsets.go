package handlers

import (
	"context"
	"sync/atomic"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Connect's text for an alter request without offsets (docs/connect-internals.md, "Checks of an
// alter, in order", step 1).
const msgNoOffsets = "Partitions / offsets need to be provided for an alter offsets request"

// validateOffsets applies the KIP-875 rules (docs/connect-internals.md, "Checks of an alter, in
// order", steps 1, 3 and 4) and the connector class's own rules, and encodes the records the write
// will produce, so that nothing destructive starts before every offset is known to be valid.
func (c *Creator) validateOffsets(ctx context.Context, j *job) error {
	entries := j.req.Data.InitialOffsets
	if err := refuseLoneSurrogates(j.req.Data.LoneSurrogates, true); err != nil {
		return err
	}
	if raw := j.req.Data.RawOffsets; raw != nil {
		if j.typ == connectors.Source {
			return c.validateSourceText(ctx, j, raw)
		}
		var err error
		if entries, err = j.req.Data.Offsets(); err != nil {
			return badRequest(err.Error())
		}
		j.req.Data.RawOffsets = nil
	}
	if len(entries) == 0 {
		return badRequest(msgNoOffsets)
	}
	if j.typ == connectors.Sink {
		return c.validateSinkOffsets(ctx, j, entries)
	}
	return c.validateSourceOffsets(j, entries)
}

// validateSinkOffsets is validateOffsets for a sink connector: it checks the entries and keeps
// the group offsets the write will commit.
func (c *Creator) validateSinkOffsets(ctx context.Context, j *job, entries []events.OffsetEntry) error {
	parsed, err := connectors.ValidateSink(entries)
	if err != nil {
		return asFailure(err)
	}
	// Connect rejects negative offsets only when it commits them; refuse them before
	// anything is wiped.
	if err := connectors.CheckSinkOffsets(j.name, parsed); err != nil {
		return asFailure(err)
	}
	if err := c.checkSinkPartitions(ctx, parsed); err != nil {
		return err
	}
	if j.class != nil && j.class.Validate != nil {
		if err := j.class.Validate(j.props, entries); err != nil {
			return asFailure(err)
		}
	}
	for _, p := range lastPerPartition(parsed) {
		if p.Offset != nil { // a null offset resets the partition: the wipe already did
			j.sinkOffsets = append(j.sinkOffsets, offsetstore.GroupOffset{Topic: p.Topic, Partition: p.Partition, Offset: *p.Offset})
		}
	}
	return nil
}

// lastPerPartition keeps, of duplicate partitions, the last one, in the place of the first:
// the last one wins (ConnectorOffsets.toMap uses a HashMap).
func lastPerPartition(parsed []connectors.SinkOffset) []connectors.SinkOffset {
	type tp struct {
		topic     string
		partition int32
	}
	index := make(map[tp]int, len(parsed))
	last := make([]connectors.SinkOffset, 0, len(parsed))
	for _, p := range parsed {
		k := tp{p.Topic, p.Partition}
		if i, ok := index[k]; ok {
			last[i] = p
			continue
		}
		index[k] = len(last)
		last = append(last, p)
	}
	return last
}

// validateSourceOffsets is validateOffsets for a source connector: it validates and encodes
// the records the write will produce.
func (c *Creator) validateSourceOffsets(j *job, entries []events.OffsetEntry) error {
	if len(entries) >= collectAfterOffsets {
		// The request record is garbage now (a large request's values are copied out of it:
		// events.ParseCreateRequest), but the heap's goal was set while it was live. Collected,
		// the goal follows what the validation and encoding below actually keep.
		c.gc.collectUnlessRunning()
	}
	recs, err := sourceRecords(j.name, j.class, j.props, entries)
	if err != nil {
		return err
	}
	j.records = recs
	// The decoded offsets (and the request record they may share memory with) are not needed
	// any more: let them go before the writes.
	j.req.Data.InitialOffsets = nil
	if len(entries) >= collectAfterOffsets {
		// A large request's decoded offsets are now garbage, about twice the request's size.
		// Collect them before the writes: left to the pacer, the heap would grow to twice what
		// was reachable while encoding. With both collections a 100,000-offset request peaks at ~4x its size
		// (~7.5x with neither); each costs ~10-20 ms of CPU.
		c.gc.collectUnlessRunning()
	}
	return nil
}

// validateSourceText is validateOffsets for a source connector whose offsets came as text
// (events.CreateRequest.RawOffsets): read in one pass into records, or straight into record
// batches when every topic they go to has one partition count (fastraw.go), when they have the
// common shape, else decoded and validated as any request's. A request's offsets read ahead
// (ReadAhead) for what validate_config settled are taken as they are.
func (c *Creator) validateSourceText(ctx context.Context, j *job, raw []byte) error {
	if a := j.ahead; a != nil && a.fits(c, j) {
		j.records, j.encoded, j.aheadTook = a.records, a.encoded, a.took
	} else {
		recs, enc, err := sourceRecordsFromText(j.name, j.class, j.props, raw, c.batchPartitions(ctx, j))
		if err != nil {
			return err
		}
		j.records, j.encoded = recs, enc
	}
	j.ahead = nil
	// The request record (the text's memory) is not needed any more: let it go before the
	// writes, and collect it, as the decoded offsets are collected after encoding.
	j.req.Data.RawOffsets = nil
	if j.sourceCount() >= collectAfterOffsets {
		c.gc.collectUnlessRunning()
	}
	return nil
}

// batchPartitions is the partition count the single pass encodes record batches for: that of
// every topic the offsets are written to, or 0 (records, partitioned per topic at the write)
// when they differ, cannot be read now, or the request is a dry run (its plan lists records).
func (c *Creator) batchPartitions(ctx context.Context, j *job) int {
	if j.req.DryRun {
		return 0
	}
	n := 0
	for _, topic := range j.writeTopics(c.opts.OffsetsTopic) {
		m, err := c.opts.Store.Partitions(ctx, topic)
		if err != nil || (n != 0 && m != n) {
			return 0
		}
		n = m
	}
	return n
}

// sourceRecords validates a source connector's offsets (the generic KIP-875 rules, duplicates,
// the class's rules) and encodes their records, on the fast path when the request has its
// shape (fastpath.go), else on the general one. It consumes entries.
func sourceRecords(name string, class *connectors.Class, props map[string]string, entries []events.OffsetEntry) ([]offsetstore.Record, error) {
	if len(entries) >= fastPathMin {
		if recs, ok := fastSourceRecords(name, class, props, entries); ok {
			return recs, nil
		}
	}
	return generalSourceRecords(name, class, props, entries)
}

// generalSourceRecords is sourceRecords for any request.
func generalSourceRecords(name string, class *connectors.Class, props map[string]string, entries []events.OffsetEntry) ([]offsetstore.Record, error) {
	if err := connectors.ValidateSource(entries); err != nil {
		return nil, asFailure(err)
	}
	entries = connectors.Dedupe(entries)
	if class != nil && class.Validate != nil {
		if err := class.Validate(props, entries); err != nil {
			return nil, asFailure(err)
		}
	}
	var order func(jsonvalue.Map) jsonvalue.Map // nil: Java HashMap order
	if class != nil && class.PartitionOrder != nil {
		order = class.PartitionOrder
	}
	return offsetstore.EncodeOffsets(name, offsetEntries(entries), order), nil
}

// collectAfterOffsets is the number of offsets (about 1 MB of request) from which
// validate_offsets asks for a garbage collection before validating them and once they are
// encoded.
const collectAfterOffsets = 10_000

// collector runs the garbage collections validate_offsets asks for around large requests.
type collector struct {
	// collect runs a collection (runtime.GC).
	collect func()
	// running is set while a collection asked for here runs.
	running atomic.Bool
}

// collectUnlessRunning collects unless a collection asked for here is already running: many
// large requests at once then do not queue collections one after another. A request that finds
// one running goes on; what that collection does not free of its garbage, the pacer will.
func (g *collector) collectUnlessRunning() {
	if !g.running.CompareAndSwap(false, true) {
		return
	}
	defer g.running.Store(false)
	g.collect()
}

// offsetEntries lets offsetstore.EncodeOffsets read and release a request's offsets.
type offsetEntries []events.OffsetEntry

func (e offsetEntries) Len() int             { return len(e) }
func (e offsetEntries) HasOffset(i int) bool { return e[i].Offset != nil }
func (e offsetEntries) Take(i int) (partition, offset jsonvalue.Map) {
	en := e[i]
	e[i] = events.OffsetEntry{}
	return en.Partition, en.Offset
}
