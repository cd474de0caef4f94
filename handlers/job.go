package handlers

import (
	"context"
	"slices"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// job is the state of one request as it moves through the stages.
type job struct {
	req     *events.Request
	reports []events.StageReport

	// Set by validate_config.
	name string
	// offsetsOnly: the request places the connector's offsets and writes no config records.
	offsetsOnly bool
	config      events.Config
	props       map[string]string
	class       *connectors.Class
	typ         connectors.Type
	state       string // config-topic target state: STARTED, PAUSED or STOPPED
	restState   string // REST spelling: RUNNING, PAUSED or STOPPED
	// connectorTopic is the connector's own offsets.storage.topic when it differs from the
	// global one ("" otherwise).
	connectorTopic string
	group          string // sink consumer group
	// globalSynced, when not nil, waits for the read to its end of the global offsets topic
	// whose end offsets validate_config read (with the config topic's).
	globalSynced func(context.Context) error
	// optimistic, when not nil, is the intent written during validate_config.
	optimistic *optimisticIntent
	// writeProbes, when not nil, are validate_offsets's Write probes, started by
	// validate_config (startWriteProbes).
	writeProbes *writeProbes
	// prevConfig is the connector's config records as write_config found them (what its
	// undo writes back).
	prevConfig []ConfigSnapshot
	// rolledBack is what validate_config's rollback of an interrupted request undid.
	rolledBack *rollback

	// ahead is what ReadAhead read of the request's offsets, if anything.
	ahead *readAhead

	// Set by validate_offsets.
	records []offsetstore.Record // new source offsets (non-null), partition computed per topic
	// encoded holds the new source offsets instead of records when the single pass encoded
	// them straight into record batches (large requests of the common shape). write_offsets
	// lets go of them once every topic acknowledged them (the views drop their batches once
	// applied), and sets encodedWritten: a cleanup then finds the keys in the views.
	encoded        *offsetstore.Encoded
	encodedWritten bool
	aheadTook      time.Duration // the time ReadAhead took to read the records used
	sinkOffsets    []offsetstore.GroupOffset

	// Set by wipe_offsets: the snapshot of what was there.
	snapshotTaken bool
	prevSource    map[string][]offsetstore.SourceRecord // by topic
	prevTopics    []string                              // the keys of prevSource, global topic first
	prevGroup     []offsetstore.GroupOffset
	wiped         int
	// wipeStarted means tombstones or deletions may have reached the broker.
	wipeStarted bool

	// Set by write_offsets and write_config.
	written      int
	writtenTo    []string // topics write_offsets wrote to (or may have: kafkaio.MayHaveWritten)
	sinkWritten  bool     // the sink's commit may be in its group (kafkaio.MayHaveWritten)
	configTried  bool     // write_config's records may be in the config topic
	targetStateK string
}

// sourceRecords are the new source offsets as records; encoded ones are decoded from their
// batches (for a cleanup's tombstones, not for the write).
func (j *job) sourceRecords() []offsetstore.Record {
	if j.encoded != nil {
		return j.encoded.Records()
	}
	return j.records
}

// sourceCount is the number of new source offsets.
func (j *job) sourceCount() int {
	if j.encoded != nil {
		return j.encoded.Len()
	}
	return len(j.records)
}

// sourceTopics are the offsets topics of a source connector, in wipe order: the global topic
// first (Connect tombstones the secondary store first), then the connector's own.
func (j *job) sourceTopics(global string) []string {
	if j.connectorTopic != "" {
		return []string{global, j.connectorTopic}
	}
	return []string{global}
}

// writeTopics are the topics new offsets go to, in Connect's order: the connector's own
// (primary) topic first, then the global one.
func (j *job) writeTopics(global string) []string {
	t := j.sourceTopics(global)
	slices.Reverse(t)
	return t
}
