package cutover

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/plan"
	"github.com/offsetagent/offsetagent/mm2"
)

// Verdict is what Verify found of one partition of a moved connector.
type Verdict string

// Verdicts of the cutover report.
const (
	// VerdictVerified: B continues from the offset placed. A source's first offset committed
	// on B after the placed one follows it in its family's order; a sink's group on B is past
	// the offset placed.
	VerdictVerified Verdict = "verified"
	// VerdictWaiting: B has committed nothing new for the partition yet (no traffic, or the
	// connector is not running on B).
	VerdictWaiting Verdict = "waiting"
	// VerdictMismatch: B does not continue from the offset placed (its offset is before it,
	// or the placed one is not there); the entry's detail gives the numbers.
	VerdictMismatch Verdict = "mismatch"
	// VerdictUnordered: B committed a new offset, but the family's offsets have no order
	// offsetagent knows (or either offset is a snapshot's), or nothing was placed for it (a
	// sink partition A's group had no offset for): compare them by hand.
	VerdictUnordered Verdict = "unordered"
	// VerdictReplay: the offset placed is A's last committed one and B continues from it, but
	// A had produced records past it that it never committed (its worker died, or its task
	// failed, before committing them: Connect's sources are at least once). B produces them
	// again: the entry's Replay gives their count and range. Not a wrong placement (that is a
	// mismatch): the duplicates come from A.
	VerdictReplay Verdict = "replay"
)

// verdicts are the verdicts in the order the summary counts them.
var verdicts = []Verdict{VerdictVerified, VerdictWaiting, VerdictMismatch, VerdictUnordered, VerdictReplay}

// Evidence of a verdict.
const (
	// EvidenceOffsets: the offsets B's connector committed (its offsets topic, or its sink
	// group), not the records it produced.
	EvidenceOffsets = "offsets"
	// EvidenceRecords: the records B's connector produced, by the position each carries
	// (Debezium's source block), and A's last record (records.go).
	EvidenceRecords = "records"
)

// Cutover is the cutover report of a migration: per moved connector and partition, the offset
// on A, the offset placed on B, how it was translated, the first offset B committed after it,
// and the verdict. It is what an auditor keeps of a cutover; Verify fills in B's side.
type Cutover struct {
	MigrationID string `json:"migration_id"`
	// From is A (its REST API or brokers), To is B's brokers.
	From string `json:"from"`
	To   string `json:"to"`
	// ToClusterID is the id of B's Kafka cluster, where the offsets were placed: a later
	// verification against another cluster is refused.
	ToClusterID string `json:"to_cluster_id,omitempty"`
	// OffsetsTopic is B's Connect offsets topic (a source with its own offsets.storage.topic
	// names it in its entry).
	OffsetsTopic string `json:"offsets_topic"`
	// MigrationStarted and MigrationFinished are the migration's times (A read, offsets
	// placed); VerifyStarted and VerifyFinished those of the last verification (zero before).
	MigrationStarted  time.Time `json:"migration_started"`
	MigrationFinished time.Time `json:"migration_finished"`
	VerifyStarted     time.Time `json:"verify_started,omitzero"`
	VerifyFinished    time.Time `json:"verify_finished,omitzero"`
	// VerifyTimeout bounded the last verification.
	VerifyTimeout string `json:"verify_timeout,omitempty"`
	// Error says why the last verification could not read B ("" when it could).
	Error string `json:"error,omitempty"`
	// FromClusterID is A's Kafka cluster id, as the migration found it (by its brokers, or
	// GET / on its REST API).
	FromClusterID string `json:"from_cluster_id,omitempty"`
	// FromConnectURL and ToConnectURL are A's and B's Connect REST APIs as the migration used
	// them (userinfo removed; "" when not given): a rollback calls them by default.
	FromConnectURL string `json:"from_connect_url,omitempty"`
	ToConnectURL   string `json:"to_connect_url,omitempty"`
	// StateTopic is the topic on B's Kafka cluster holding each connector's state on A before
	// the migration stopped it (--stop-source); "" in a report written before it was kept.
	StateTopic string `json:"state_topic,omitempty"`
	// MM2 is MirrorMaker 2's replication policy the sinks' offsets were translated across
	// (nil when they were not): a rollback takes B's topics back to A's by it.
	MM2 *MM2 `json:"mm2,omitempty"`
	// OperatorManaged: B's connectors are KafkaConnector resources of an operator (Strimzi),
	// which would undo a stop or a delete made through B's REST API.
	OperatorManaged bool `json:"operator_managed,omitempty"`
	// Counts are the partitions per verdict.
	Counts     map[Verdict]int `json:"counts"`
	Connectors []*Connector    `json:"connectors"`
}

// MM2 is MirrorMaker 2's replication policy of the A->B flow, as the migration was given it.
type MM2 struct {
	SourceAlias string `json:"source_alias"`
	TargetAlias string `json:"target_alias,omitempty"`
	Policy      string `json:"policy"`
	Separator   string `json:"separator,omitempty"`
}

// Connector is one moved connector of the cutover report.
type Connector struct {
	Name       string `json:"name"`
	TargetName string `json:"target_name"`
	Type       string `json:"type"`
	Class      string `json:"class"`
	// OffsetsTopic is the topic on B a source's offsets are read from (its
	// offsets.storage.topic, else B's); Group is a sink's consumer group on B.
	OffsetsTopic string `json:"offsets_topic,omitempty"`
	Group        string `json:"group,omitempty"`
	// State is the state the connector was born in on B: one born PAUSED or STOPPED commits
	// nothing until it is resumed, so the verification reads B once for it and does not wait.
	State string `json:"state_on_b,omitempty"`
	// TopicPrefix is a Debezium source's topic.prefix (database.server.name before Debezium
	// 2.0): the topics on B its records are read from. BornAfter is when the migration had read
	// the connector's offsets on A (after stopping it, with --stop-source): B's connector was
	// born after it, and produced no record before it.
	TopicPrefix string    `json:"topic_prefix,omitempty"`
	BornAfter   time.Time `json:"born_after,omitzero"`
	// Rewrites are the settings the migration changed for B itself (Entry.Rewrites): what
	// the connector on B runs with beside A's config and the edit flags.
	Rewrites []plan.Edit `json:"config_rewrites,omitempty"`
	// StoppedOnA: the migration stopped the connector on A (--stop-source) before it read its
	// offsets, so A produced nothing after BornAfter. Without it A may still be running: its
	// records are no evidence of anything, and a source is judged by its offsets only.
	StoppedOnA bool `json:"stopped_on_a,omitempty"`
	// StoppedOnABy says how the stop was established: "rest" (stopped through A's REST API:
	// its target state on A is STOPPED), or, A's REST API unreachable, how A's Kafka cluster
	// showed that no live worker of A held the connector (workersofa.go): then its target
	// state on A is unchanged, and WorkersOfA is what the verification asks again.
	StoppedOnABy string        `json:"stopped_on_a_by,omitempty"`
	WorkersOfA   *WorkersCheck `json:"workers_of_a,omitempty"`
	// StateOnA is the connector's state on A before the move (RUNNING, PAUSED or STOPPED):
	// the state A showed, or, when an earlier run of the migration had stopped it, the state
	// that run recorded in the state topic before the stop. A rollback resumes it in this
	// state. "" when A did not tell it (read through its REST API only, with a status that
	// does not say its target state), and in a report written before it was kept.
	StateOnA string `json:"state_on_a,omitempty"`
	// RequestID is the id of the request that created the connector on B: its connector
	// record on B carries that request's mark, by which a rollback knows it for this
	// migration's.
	RequestID string `json:"request_id,omitempty"`
	// Rekey is the re-key of a Debezium source's partitions (its logical name changed on the
	// way to B): Partitions are under B's key, and a rollback puts them back under A's.
	Rekey *fleet.Rekey `json:"rekey,omitempty"`
	// FollowsSources names, for a sink moved with --sink-follows-source, the sources it
	// followed: its offsets placed on B are positions in the topics its sources write on B,
	// not a translation of A's ("as read" says how they were read, not that they are A's), and
	// A's sink had consumed all its sources wrote on A before it stopped.
	FollowsSources []string `json:"follows_sources,omitempty"`
	// HistoryOnA says whether A's offsets topic was read for the commits A made before its
	// last one ("read"), or why not: it tells a set-back offset (A had committed past the one
	// placed: a mismatch) from A's uncommitted output after a crash (a replay).
	HistoryOnA fleet.Text `json:"history_on_a,omitzero"`
	// Note says why the connector has no partitions to verify, when it has none.
	Note       fleet.Text   `json:"note,omitzero"`
	Partitions []*Partition `json:"partitions"`
}

// WorkersCheck is, for a connector stopped on A without A's REST API, what the
// verification needs to ask A's Kafka cluster again whether a worker of A holds it (a worker
// of A restarted with it runs it again, and A's later records are then no evidence), and what
// it found.
type WorkersCheck struct {
	// Brokers and ClusterID are A's Kafka cluster, ConfigTopic A's config topic, RecordAt the
	// offset there of the connector's latest record (-1 unknown).
	Brokers     []string `json:"brokers"`
	ClusterID   string   `json:"cluster_id,omitempty"`
	ConfigTopic string   `json:"config_topic"`
	RecordAt    int64    `json:"connector_record_at"`
	// Checked is what the last verification found: how no live worker of A holds it, or
	// why A may run it again or it could not be checked (then Held is true, and the records
	// are no evidence).
	Checked fleet.Text `json:"checked,omitzero"`
	Held    bool       `json:"held,omitempty"`
}

// Partition is one partition of a moved connector. Offsets are in the KIP-875 shape:
// a sink's are {"kafka_offset": N}.
type Partition struct {
	Partition jsonvalue.Map `json:"partition"`
	// OnA is the partition's offset on A when the migration read it (after the stop, with
	// --stop-source); null when A had none.
	OnA jsonvalue.Map `json:"offset_on_a"`
	// Placed is the offset written on B; null when none was (a partition B's sink group has
	// but the migration never placed, or a sink partition reset).
	Placed jsonvalue.Map `json:"offset_placed"`
	// Translation is how Placed came from OnA: "as read" (a source, or a sink copied), or
	// MirrorMaker 2's verdict for a translated sink (exact, replay, missing).
	Translation string `json:"translation"`
	// FirstOnB is, for a source, the first offset B's connector committed after the placed
	// one; for a sink, the group's committed offset on B. Null when there is none yet.
	FirstOnB jsonvalue.Map `json:"first_on_b"`
	// FirstRecordOnB is the position of the earliest record B's connector produced, and
	// LastRecordOnA that of A's last record found on B (its mirror), where the family's
	// records carry one (Debezium's source block).
	FirstRecordOnB jsonvalue.Map `json:"first_record_on_b,omitempty"`
	LastRecordOnA  jsonvalue.Map `json:"last_record_on_a,omitempty"`
	// FurthestOnA is, for a source, the furthest offset A's offsets topic held for the
	// partition in its family's order, when it is past OnA: A had committed past the offset
	// placed, and its offset was set back since.
	FurthestOnA jsonvalue.Map `json:"furthest_on_a,omitempty"`
	// LogStartOnB is, for a sink, the first offset B still holds of the partition's topic (its
	// log start) when the verification judged it: an offset placed below it skips records.
	LogStartOnB *int64 `json:"log_start_on_b,omitempty"`
	// Replay is, for the verdict replay, what B produces again: A's records past the offset
	// placed.
	Replay   *Replay    `json:"replay,omitempty"`
	Verdict  Verdict    `json:"verdict"`
	Evidence string     `json:"evidence"`
	Detail   fleet.Text `json:"detail,omitzero"`
}

// Replay is what B's connector produces again after a cutover whose offset placed is
// A's last committed one: the records A produced past it (found on B, where A's records are
// mirrored or share B's topics), which A never committed.
type Replay struct {
	// Records is how many there are; First and Last are the positions of the first and the
	// last in the family's order, FirstAt and LastAt where they are on B (topic, partition,
	// offset, timestamp).
	Records int           `json:"records"`
	First   jsonvalue.Map `json:"first"`
	Last    jsonvalue.Map `json:"last"`
	FirstAt string        `json:"first_at,omitempty"`
	LastAt  string        `json:"last_at,omitempty"`
}

// Translations of the cutover report besides MirrorMaker 2's verdicts.
const translationAsRead = "as read"

// New is the cutover report of rep before verification: a connector whose offsets
// were placed on B (it succeeded) is listed with the partitions placed, each waiting.
// offsetsTopic is B's Connect offsets topic; reg knows the connector classes (nil:
// connectors.Builtin()).
func New(rep *apply.Report, offsetsTopic string, reg *connectors.Registry) *Cutover {
	if reg == nil {
		reg = connectors.Builtin()
	}
	c := &Cutover{MigrationID: rep.MigrationID, From: rep.From, To: rep.To, OffsetsTopic: offsetsTopic,
		MigrationStarted: rep.Started, MigrationFinished: rep.Finished, Connectors: []*Connector{}}
	for _, e := range rep.Connectors {
		if e.Outcome != apply.OutcomeSucceeded || e.Body == nil || e.Connector == nil {
			continue
		}
		c.Connectors = append(c.Connectors, cutoverEntry(e, offsetsTopic))
	}
	c.Count()
	return c
}

// cutoverEntry is entry e's connector in the cutover report.
func cutoverEntry(e *apply.Entry, offsetsTopic string) *Connector {
	conn := e.Connector
	class, _ := e.Body.Config.Get("connector.class")
	cc := &Connector{Name: e.Name, TargetName: e.TargetName, Type: e.Type, Class: class, State: e.Body.InitialState,
		BornAfter: e.BornAfter, Rewrites: e.Rewrites, StoppedOnABy: e.StoppedBy, RequestID: e.RequestID, Rekey: e.Rekey(),
		Partitions: []*Partition{}}
	if fleet.KnownState(conn.State) {
		cc.StateOnA = conn.State // the recorded state where a run had stopped it (source.ResolveStates)
	}
	if f, ok := e.Translation.(*apply.FollowedSources); ok {
		cc.FollowsSources = f.FollowsSources
	}
	cfg := map[string]string{}
	for _, kv := range e.Body.Config {
		cfg[kv.Key] = kv.Value
	}
	for _, k := range []string{"topic.prefix", "database.server.name"} {
		if cc.TopicPrefix == "" && strings.HasPrefix(class, "io.debezium.") {
			cc.TopicPrefix = cfg[k]
		}
	}
	onA := map[string]jsonvalue.Map{}
	for _, o := range e.Rekey().Apply(conn.Offsets) { // under the partitions placed on B
		onA[jsonvalue.SortedText(o.Partition)] = o.Offset
	}
	translated := map[string]mm2.PartitionTranslation{}
	if tr, ok := e.Translation.(*apply.SinkTranslation); ok {
		for _, p := range tr.All {
			translated[jsonvalue.SortedText(sinkPartition(p.Target))] = p
		}
	}
	if conn.Type == connectors.Sink {
		cc.Group = fleet.SinkGroup(e.TargetName, cfg)
	} else {
		cc.OffsetsTopic = offsetsTopic
		if t := cfg["offsets.storage.topic"]; t != "" {
			cc.OffsetsTopic = t
		}
	}
	if !e.Body.HasOffsets {
		cc.Note = fleet.Textf("no offsets placed on B (A had none, or %s): nothing to verify", fleet.Give{Setting: fleet.SinkOffsets, Value: "none"})
	}
	for _, o := range e.Body.InitialOffsets {
		k := jsonvalue.SortedText(o.Partition)
		p := &Partition{Partition: o.Partition, OnA: onA[k], Placed: o.Offset, Translation: translationAsRead,
			Verdict: VerdictWaiting, Evidence: EvidenceOffsets}
		if tr, ok := translated[k]; ok {
			p.Translation = string(tr.Verdict)
			p.OnA = jsonvalue.Map{{Key: "kafka_offset", Value: jsonvalue.Number(fmt.Sprint(tr.Committed))}}
		}
		cc.Partitions = append(cc.Partitions, p)
	}
	return cc
}

// idle reports whether the connector was born in a state in which it commits nothing
// (PAUSED or STOPPED): nothing of it can be verified until it is resumed on B.
func (cc *Connector) idle() bool {
	return cc.State == fleet.StatePaused || cc.State == fleet.StateStopped
}

// sinkPartition is a sink partition map (kafka_partition, kafka_topic) of tp.
func sinkPartition(tp mm2.TopicPartition) jsonvalue.Map {
	return jsonvalue.Map{{Key: "kafka_partition", Value: jsonvalue.Number(fmt.Sprint(tp.Partition))}, {Key: "kafka_topic", Value: tp.Topic}}
}

// Count sets Counts from the partitions' verdicts.
func (c *Cutover) Count() {
	c.Counts = map[Verdict]int{}
	for _, v := range verdicts {
		c.Counts[v] = 0
	}
	for _, cc := range c.Connectors {
		for _, p := range cc.Partitions {
			c.Counts[p.Verdict]++
		}
	}
}

// OK reports whether no partition is a mismatch.
func (c *Cutover) OK() bool { return c.Counts[VerdictMismatch] == 0 }

// Replays reports whether a partition is a replay: B continues from the offset placed and
// produces again records A produced past it.
func (c *Cutover) Replays() bool { return c.Counts[VerdictReplay] > 0 }

// Decided reports whether no partition is waiting or unordered: each is verified, a mismatch
// or a replay.
func (c *Cutover) Decided() bool {
	return c.Counts[VerdictWaiting] == 0 && c.Counts[VerdictUnordered] == 0
}

// WriteJSON writes the cutover report as indented JSON.
func (c *Cutover) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// Read reads a cutover report that WriteJSON wrote (the input of a later
// verification).
func Read(path string) (*Cutover, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Cutover
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("read cutover report %s: %w", path, err)
	}
	if c.MigrationID == "" || c.Connectors == nil {
		return nil, fmt.Errorf("read cutover report %s: not a cutover report (no migration_id or connectors)", path)
	}
	return &c, nil
}
