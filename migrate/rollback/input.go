package rollback

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// The states of a connector on a Connect cluster that rollback reads and restores.
const (
	StateRunning = "RUNNING"
	StatePaused  = "PAUSED"
	StateStopped = "STOPPED"
)

// The connector types.
const (
	TypeSource = "source"
	TypeSink   = "sink"
)

// Translation is how the offset placed on B came from A's offset, per partition: it decides
// how B's progress goes back (the doc's table).
type Translation string

// The translations of a cutover report, and the sink that followed its sources.
const (
	// AsRead: a source's offsets, or a sink's copied (one Kafka cluster, or a link that keeps
	// offsets): B's committed offset goes back as it is.
	AsRead Translation = "as read"
	// Exact, Replay, Missing: MirrorMaker 2's verdicts of a sink's offset translated across it;
	// B's committed offset goes back through mm2.Translator.Back.
	Exact   Translation = "exact"
	Replay  Translation = "replay"
	Missing Translation = "missing"
	// FollowedSources: a sink moved with --sink-follows-source: it drained its sources' topics
	// on A before the move and nothing was written there since, so A's offsets are right.
	FollowedSources Translation = "followed sources"
)

// acrossMM2 reports whether t is one of MirrorMaker 2's verdicts.
func (t Translation) acrossMM2() bool { return t == Exact || t == Replay || t == Missing }

// Connector is one connector of a cutover report to roll back. The package doc says which
// field of the cutover report feeds each field.
type Connector struct {
	// Name is the connector's name on A, TargetName its name on B.
	Name       string `json:"name"`
	TargetName string `json:"target_name"`
	// Type is TypeSource or TypeSink; Group is a sink's consumer group on B.
	Type  string `json:"type"`
	Group string `json:"group,omitempty"`
	// StoppedOnA: the migration stopped the connector on A (A's target state is STOPPED and
	// its offsets are those read at the stop). Without it A kept running: no carry, no resume.
	StoppedOnA bool `json:"stopped_on_a"`
	// StateOnA is the connector's state on A before the move (RUNNING, PAUSED or STOPPED): the
	// state rollback resumes it in.
	StateOnA string `json:"state_on_a"`
	// MigrationID keys the state record ("<migration id>/<name on A>"); RequestSource and
	// RequestID are the CloudEvent source and id of the request that created the connector on
	// B, whose mark its connector record on B must carry. RequestID "" (a report written
	// before it was kept) accepts the mark of any request of RequestSource, which is the
	// migration's own, and takes that request's id.
	MigrationID   string `json:"migration_id"`
	RequestSource string `json:"request_source"`
	RequestID     string `json:"request_id"`
	// Rekey is the re-key the migration applied to a source's partitions (Debezium's logical
	// name changed on the way to B); nil for none.
	Rekey *Rekey `json:"rekey,omitempty"`
	// OperatorManaged: B's connectors are KafkaConnector resources of an operator (Strimzi),
	// which would undo a stop or delete made through the REST API.
	OperatorManaged bool `json:"operator_managed,omitempty"`
	// Partitions are the partitions placed on B.
	Partitions []Partition `json:"partitions"`
	// Refuse, when set, is why the caller already knows the connector cannot be rolled back
	// from its input (a report that does not hold what rollback needs of it): it is refused
	// with that reason, untouched.
	Refuse string `json:"refuse,omitempty"`
}

// Partition is one partition placed on B.
type Partition struct {
	// Partition is the partition as placed on B (for a sink across MirrorMaker 2, B's copy of
	// A's topic; for a re-keyed source, the partition under the new key).
	Partition jsonvalue.Map `json:"partition"`
	// OnA is the partition's offset on A at the stop, Placed the offset written on B (nil when
	// none).
	OnA    jsonvalue.Map `json:"offset_on_a"`
	Placed jsonvalue.Map `json:"offset_placed"`
	// Translation is how Placed came from OnA.
	Translation Translation `json:"translation"`
}

// Rekey is the re-key of a source connector's partitions: a partition whose Key is From went
// to B under To.
type Rekey struct {
	Key  string `json:"key"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Inverse is the re-key that takes B's partitions back to A's.
func (r *Rekey) Inverse() *Rekey {
	if r == nil {
		return nil
	}
	return &Rekey{Key: r.Key, From: r.To, To: r.From}
}

// Apply returns partition with Key's value From put under To; partition itself is not changed.
func (r *Rekey) Apply(partition jsonvalue.Map) jsonvalue.Map {
	if r == nil {
		return partition
	}
	if v, _ := partition.Get(r.Key); v != r.From {
		return partition
	}
	out := slices.Clone(partition)
	for i := range out {
		if out[i].Key == r.Key {
			out[i].Value = r.To
		}
	}
	return out
}

// canonical is m as JSON with its keys sorted and its numbers as their literals: two maps that
// Connect holds as one partition or offset give the same text whatever their key order.
func canonical(m jsonvalue.Map) string {
	if m == nil {
		return "null"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprintf("%#v", m)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	out, err := json.Marshal(v) // maps encode with sorted keys
	if err != nil {
		return string(b)
	}
	return string(out)
}

// sinkTP reads a sink partition map (kafka_topic, kafka_partition), as Connect takes it: the
// partition as a number or a string of one.
func sinkTP(p jsonvalue.Map) (topic string, partition int32, ok bool) {
	t, _ := p.Get("kafka_topic")
	topic, ok = t.(string)
	if !ok || topic == "" {
		return "", 0, false
	}
	n, ok := integer(p, "kafka_partition")
	if !ok || n < 0 || n > 1<<31-1 {
		return "", 0, false
	}
	return topic, int32(n), true
}

// kafkaOffset reads a sink offset map's kafka_offset.
func kafkaOffset(o jsonvalue.Map) (int64, bool) {
	return integer(o, "kafka_offset")
}

// integer reads key of m as an integer (a number, or a string of one).
func integer(m jsonvalue.Map, key string) (int64, bool) {
	v, _ := m.Get(key)
	var s string
	switch x := v.(type) {
	case jsonvalue.Number:
		s = string(x)
	case string:
		s = x
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// sinkPartition is the sink partition map of topic and partition.
func sinkPartition(topic string, partition int32) jsonvalue.Map {
	return jsonvalue.Map{{Key: "kafka_topic", Value: topic}, {Key: "kafka_partition", Value: jsonvalue.Number(strconv.Itoa(int(partition)))}}
}

// sinkOffset is the sink offset map of offset.
func sinkOffset(offset int64) jsonvalue.Map {
	return jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number(strconv.FormatInt(offset, 10))}}
}

// offsetsByPartition indexes offsets by their partition's canonical text.
func offsetsByPartition(offs []events.ConnectorOffset) map[string]jsonvalue.Map {
	out := make(map[string]jsonvalue.Map, len(offs))
	for _, o := range offs {
		out[canonical(o.Partition)] = o.Offset
	}
	return out
}
