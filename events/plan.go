package events

// PlannedRecord is a record a dry run would write, exactly as its bytes would go out.
type PlannedRecord struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Key       string `json:"key"`
	// Value is nil for a tombstone.
	Value *string `json:"value"`
}

// PlannedGroupOffset is an offset a dry run would commit for a sink connector's group.
type PlannedGroupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Plan is what a dry run would have done, in execution order: the "plan" of a planned result.
type Plan struct {
	// Tombstones are the wipe of the connector's current source offsets.
	Tombstones []PlannedRecord `json:"tombstones"`
	// Records are the initial source offsets.
	Records []PlannedRecord `json:"records"`
	// Group is the sink connector's consumer group, deleted and then committed to.
	Group string `json:"group,omitempty"`
	// GroupDeleted says whether the group currently has offsets the wipe would delete.
	GroupDeleted bool                 `json:"group_deleted,omitempty"`
	GroupOffsets []PlannedGroupOffset `json:"group_offsets,omitempty"`
	// ConfigRecords are target-state-<name> and connector-<name>.
	ConfigRecords []PlannedRecord `json:"config_records"`
	// Error is set when part of the plan could not be computed (e.g. the broker did not
	// answer); the rest is still shown.
	Error string `json:"error,omitempty"`
}
