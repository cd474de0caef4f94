package offsetstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Connect's workers form a consumer group of protocol type "connect" (the worker's group.id),
// and the group's leader hands each worker its connectors and tasks through the group
// protocol: a worker's JoinGroup metadata says where it is (its REST URL, how far it has read
// the config topic, and from protocol version 1 on what it holds), and the SyncGroup
// assignment the leader gives it says what it runs. The coordinator keeps both, and
// DescribeGroups shows them while the group is stable. The layouts, read from Connect's
// ConnectProtocol and IncrementalCooperativeConnectProtocol, are in docs/connect-internals.md,
// "The worker group"; testdata/connect-group-goldens.json holds bytes Connect's own classes made.

// Connect's group protocol type and the protocol names its workers choose among.
const (
	ConnectProtocolType       = "connect"
	ConnectProtocolEager      = "default"    // ConnectProtocol, version 0
	ConnectProtocolCompatible = "compatible" // IncrementalCooperativeConnectProtocol, version 1
	ConnectProtocolSessioned  = "sessioned"  // the same layout, version 2 (KIP-507)
)

// connectorTask is the task number that stands for the connector instance itself in an
// assignment (ConnectProtocol.CONNECTOR_TASK).
const connectorTask = -1

// maxWorkerProtocolVersion is the last version of the worker group protocol whose layout is
// known; a later one is refused rather than guessed.
const maxWorkerProtocolVersion = 2

// Worker assignment errors (ConnectProtocol.Assignment).
const (
	AssignmentNoError        = 0
	AssignmentConfigMismatch = 1 // the leader could not resolve the members' config offsets
)

// TaskID is one task of a connector.
type TaskID struct {
	Connector string
	Task      int32
}

// String is the task as Connect names it: "<connector>-<task>".
func (t TaskID) String() string { return fmt.Sprintf("%s-%d", t.Connector, t.Task) }

// WorkerAssignment is what a Connect group's leader assigned a worker (ConnectProtocol's
// Assignment, IncrementalCooperativeConnectProtocol's ExtendedAssignment). With the eager
// protocol (version 0) it is everything the worker runs; with the incremental ones (1, 2) it is
// what the worker starts (Connectors, Tasks) and stops (Revoked*) in the round, beside what it
// held when it joined (WorkerMetadata.Allocation): WorkerHolds.
type WorkerAssignment struct {
	Version int16
	// Error is AssignmentNoError, or AssignmentConfigMismatch (nothing assigned: the worker
	// reads its config topic further and joins again).
	Error     int16
	Leader    string
	LeaderURL string
	// ConfigOffset is how far the leader had read its config topic: the offset after the last
	// record it read.
	ConfigOffset int64
	// Connectors are the connector instances, Tasks the tasks, in the order of the bytes.
	Connectors []string
	Tasks      []TaskID
	// RevokedConnectors and RevokedTasks, versions 1 and 2: what the worker stops.
	RevokedConnectors []string
	RevokedTasks      []TaskID
	// Delay, versions 1 and 2: milliseconds until the leader assigns again the work of a worker
	// that left (scheduled.rebalance.max.delay.ms); 0 when nothing waits.
	Delay int32
}

// WorkerMetadata is a worker's JoinGroup metadata for the group's protocol (ConnectProtocol's
// WorkerState, IncrementalCooperativeConnectProtocol's ExtendedWorkerState).
type WorkerMetadata struct {
	Version int16
	// URL is the worker's advertised REST URL; ConfigOffset how far it had read its config
	// topic when it joined.
	URL          string
	ConfigOffset int64
	// Allocation, versions 1 and 2, is what the worker held when it joined (nil for nothing).
	Allocation *WorkerAssignment
}

// DecodeWorkerAssignment decodes a worker's assignment as Connect's deserializers read it. An
// empty or nil assignment decodes to nil, nil: the leader has not assigned anything (a group
// that is not stable shows none). Bytes that are not such an assignment, or of a version after
// the last one known, are an error.
func DecodeWorkerAssignment(b []byte) (*WorkerAssignment, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r := &wireReader{b: b}
	a := r.assignment()
	if r.err != nil {
		return nil, fmt.Errorf("Connect worker assignment (%d bytes): %w", len(b), r.err)
	}
	return a, nil
}

// DecodeWorkerMetadata decodes a worker's JoinGroup metadata as Connect's deserializers read
// it. Bytes that are not such metadata, or of a version after the last one known, are an error.
func DecodeWorkerMetadata(b []byte) (WorkerMetadata, error) {
	r := &wireReader{b: b}
	m := WorkerMetadata{Version: r.version()}
	m.URL = r.string()
	m.ConfigOffset = r.int64()
	if m.Version >= 1 && r.err == nil && r.more() {
		// ALLOCATION_V1 tolerates a missing field: nothing held.
		if alloc, isNull := r.bytes(); !isNull && r.err == nil {
			inner := &wireReader{b: alloc}
			if len(alloc) > 0 {
				m.Allocation = inner.assignment()
				if inner.err != nil {
					r.err = fmt.Errorf("allocation: %w", inner.err)
				}
			}
		}
	}
	if r.err != nil {
		return WorkerMetadata{}, fmt.Errorf("Connect worker metadata (%d bytes): %w", len(b), r.err)
	}
	return m, nil
}

// WorkerHolds is what a worker runs once it has taken assignment a, given m, its metadata for
// the same round: with the eager protocol the assignment itself; with the incremental ones
// what it held when it joined (m.Allocation), less what a revokes, plus what a assigns, as the
// worker merges them (WorkerCoordinator.onJoinComplete). a nil is an assignment not shown (the
// group is not stable): what the worker held when it joined.
func WorkerHolds(m WorkerMetadata, a *WorkerAssignment) (connectors []string, tasks []TaskID) {
	if a != nil && a.Version == 0 {
		return slices.Clone(a.Connectors), slices.Clone(a.Tasks)
	}
	if m.Allocation != nil {
		for _, c := range m.Allocation.Connectors {
			if a == nil || !slices.Contains(a.RevokedConnectors, c) {
				connectors = append(connectors, c)
			}
		}
		for _, t := range m.Allocation.Tasks {
			if a == nil || !slices.Contains(a.RevokedTasks, t) {
				tasks = append(tasks, t)
			}
		}
	}
	if a != nil {
		for _, c := range a.Connectors {
			if !slices.Contains(connectors, c) {
				connectors = append(connectors, c)
			}
		}
		for _, t := range a.Tasks {
			if !slices.Contains(tasks, t) {
				tasks = append(tasks, t)
			}
		}
	}
	return connectors, tasks
}

// wireReader reads Kafka's protocol types (org.apache.kafka.common.protocol.types) in big
// endian; the first failure sticks in err and later reads return zero values.
type wireReader struct {
	b   []byte
	err error
}

var errShort = errors.New("ends early")

func (r *wireReader) more() bool { return len(r.b) > 0 }

func (r *wireReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *wireReader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *wireReader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *wireReader) int64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// version reads the protocol header: the version, refused when negative (as Connect does) or
// after the last one known.
func (r *wireReader) version() int16 {
	v := r.int16()
	if r.err == nil && (v < 0 || v > maxWorkerProtocolVersion) {
		r.err = fmt.Errorf("protocol version %d: versions 0 to %d are known", v, maxWorkerProtocolVersion)
	}
	return v
}

// string is Type.STRING: an int16 length (never negative) and UTF-8 bytes.
func (r *wireReader) string() string {
	n := r.int16()
	if r.err == nil && n < 0 {
		r.err = fmt.Errorf("string of length %d", n)
	}
	b := r.take(int(n))
	if r.err == nil && !utf8.Valid(b) {
		r.err = errors.New("string is not UTF-8")
	}
	return string(b)
}

// bytes is Type.NULLABLE_BYTES: an int32 length, -1 for null.
func (r *wireReader) bytes() (b []byte, isNull bool) {
	n := r.int32()
	if r.err == nil && n == -1 {
		return nil, true
	}
	if r.err == nil && n < 0 {
		r.err = fmt.Errorf("bytes of length %d", n)
	}
	return r.take(int(n)), false
}

// arrayLen is an ArrayOf's int32 count; -1 is null where nullable allows it (returned as 0).
func (r *wireReader) arrayLen(nullable bool) int {
	n := r.int32()
	switch {
	case r.err != nil:
		return 0
	case n == -1 && nullable:
		return 0
	case n < 0:
		r.err = fmt.Errorf("array of length %d", n)
		return 0
	case int(n) > len(r.b)/4:
		// Every element takes at least four bytes (a connector entry: a string and a count).
		r.err = fmt.Errorf("array of %d elements in %d bytes", n, len(r.b))
		return 0
	}
	return int(n)
}

// connectorAssignments reads [Connector Assignment]: per connector its name and task numbers,
// the connector instance among them as connectorTask.
func (r *wireReader) connectorAssignments(nullable bool) (connectors []string, tasks []TaskID) {
	for range r.arrayLen(nullable) {
		name := r.string()
		for range r.arrayLen(false) {
			n := r.int32()
			if r.err != nil {
				return nil, nil
			}
			if n == connectorTask {
				connectors = append(connectors, name)
			} else {
				tasks = append(tasks, TaskID{Connector: name, Task: n})
			}
		}
	}
	return connectors, tasks
}

// assignment reads a versioned assignment: ASSIGNMENT_V0 after a version 0 header, else
// ASSIGNMENT_V1, whose fields after the config offset may be missing (their defaults: none
// assigned, none revoked, no delay) as Connect tolerates.
func (r *wireReader) assignment() *WorkerAssignment {
	a := &WorkerAssignment{Version: r.version()}
	a.Error = r.int16()
	a.Leader = r.string()
	a.LeaderURL = r.string()
	a.ConfigOffset = r.int64()
	if a.Version == 0 {
		a.Connectors, a.Tasks = r.connectorAssignments(false)
		return a
	}
	if r.more() {
		a.Connectors, a.Tasks = r.connectorAssignments(true)
	}
	if r.more() {
		a.RevokedConnectors, a.RevokedTasks = r.connectorAssignments(true)
	}
	if r.more() {
		a.Delay = r.int32()
	}
	return a
}
