package hazard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// The state a connector family keeps outside Connect's topics (connectors.Outside), checked
// per connector before anything is stopped (HazardFamilyState; docs/migration.md, "State
// outside Connect's topics"):
//
//   - Debezium's logical name (topic.prefix, database.server.name in 1.x) keys every offset.
//     Changed by the edit flags, the offsets are re-keyed to the new name (build), with a
//     warning; a connector with a schema history is refused instead, because every record
//     of its history carries the old name too and Debezium's recovery skips the records
//     whose partition is not the offsets' (AbstractSchemaHistory.recover).
//   - the schema history topic (KafkaSchemaHistory, KafkaDatabaseHistory in 1.x) must be on B
//     under the name B's config gives it, with as many records as A's (A read through
//     --from-brokers; otherwise a warning that completeness was not checked): missing or
//     short, the connector is refused. A history whose bootstrap.servers is not B's Kafka
//     cluster, judged by the cluster id its addresses answer with (identity.go), never by
//     their spelling (A's, kept with --keep-a; a third cluster; or one that gives no answer)
//     is not looked for on B: a warning that says which.
//   - the Kafka signal channel's topic must be on B (refused otherwise; as for the history,
//     not looked for on B when signal.kafka.bootstrap.servers is not B's cluster); its consumer group
//     positions the channel on B's topic, and without a committed offset there the channel
//     starts at the earliest record and runs every signal again (a warning).
//   - the heartbeat topic: on B, or created by B (the broker's auto.create.topics.enable, or
//     Connect's topic.creation.default.*); otherwise a warning.
//   - PostgreSQL's replication slot holds the position B resumes from: refused when the edit
//     flags rename it or when A's connector drops it on stop; without StopSource a warning
//     that B's task cannot take it while A's runs.
//   - a sink that keeps its own progress (Outside.Progress): its offsets are not portable by
//     Connect. Across MirrorMaker 2 (a SinkTranslator) it is refused, because that progress
//     holds A's topic offsets; otherwise a warning says so.
//
// Without B (an export) only what the configs tell is checked.

// Debezium's defaults and settings the checks read (debezium-core CommonConnectorConfig,
// KafkaSignalChannel, the topic naming strategies, PostgresConnectorConfig).
const (
	dbzHeartbeatPrefix = "__debezium-heartbeat"
	dbzSignalGroup     = "kafka-signal"
	dbzSlotName        = "debezium"
)

// checkFamilyState finds the hazards of the state each selected connector's family keeps
// outside Connect's topics.
func (hc *Checks) checkFamilyState(ctx context.Context, entries []*Subject) {
	var b *kafka.Client
	var ids *identities
	if hc.b != nil {
		b = kafkaio.NewClient(kafkaio.Options{Brokers: hc.b.Target.Brokers, Transport: hc.b.Target.Transport, Principal: hc.b.Target.Principal})
		ids = hc.identities(ctx)
	}
	var todo []*Subject
	for _, e := range entries {
		if e.Connector.Problem.IsZero() {
			todo = append(todo, e)
		}
	}
	// Each connector's checks are a few calls to A and B: a fleet's run at once, bounded, each
	// recording on its own entry only; what is B's, not the connector's, is asked once (auto).
	auto := &onceAutoCreates{cl: b}
	next := make(chan *Subject)
	var wg sync.WaitGroup
	for range min(familyChecksInFlight, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range next {
				hc.checkFamilyOf(ctx, e, b, ids, auto)
			}
		}()
	}
	for _, e := range todo {
		next <- e
	}
	close(next)
	wg.Wait()
}

// familyChecksInFlight bounds the connectors whose family state is checked at once.
const familyChecksInFlight = 8

// checkFamilyOf checks the state e's connector family keeps outside Connect's topics.
func (hc *Checks) checkFamilyOf(ctx context.Context, e *Subject, b *kafka.Client, ids *identities, auto *onceAutoCreates) {
	c := e.Connector
	class, ok := hc.opts.Registry.Lookup(c.Config.Map()["connector.class"])
	if !ok {
		return
	}
	f := familyCheck{hc: hc, e: e, out: class.Outside, a: c.Config.Map(), b: b, ids: ids, auto: auto,
		onB: hc.ConfigOnB(e).Map()}
	switch {
	case f.out.Progress != "":
		f.sinkProgress()
	case f.out.NameKey != "":
		f.debezium(ctx)
	}
}

// onceAutoCreates asks B's brokers once per run whether they create topics (autoCreates).
type onceAutoCreates struct {
	cl   *kafka.Client
	mu   sync.Mutex
	done bool
	auto bool
	err  error
}

func (o *onceAutoCreates) get(ctx context.Context) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.done {
		o.auto, o.err = autoCreates(ctx, o.cl)
		// A cancelled ask is not an answer: the next connector asks again.
		o.done = o.err == nil || ctx.Err() == nil
	}
	return o.auto, o.err
}

// familyCheck is the check of one connector: its config on A and on B, and B's brokers.
type familyCheck struct {
	hc      *Checks
	e       *Subject
	out     connectors.Outside
	a, onB  map[string]string
	b       *kafka.Client // nil without B
	ids     *identities   // the cluster ids of addresses (identity.go); nil without B
	auto    *onceAutoCreates
	nameOnB string
}

// elsewhere says whether key, a bootstrap.servers setting of B's config, keeps its topics on
// another Kafka cluster than B, and which (for a message): A's (kept with --keep-a; otherwise
// the points-at check refuses it), a third one, or one migrate could not identify. Its
// addresses are judged by the cluster they answer as (identity.go), never by their spelling:
// B's under any name is B. Its topics are not looked for on B when they are elsewhere.
func (f *familyCheck) elsewhere(ctx context.Context, key string) (string, bool) {
	v := strings.TrimSpace(f.onB[key])
	if v == "" || f.ids == nil || f.ids.b == "" {
		return "", false // the client's default, or B's id unknown: looked for on B
	}
	n, ok := f.ids.setting(f.onB, key, v)
	switch {
	case !ok:
		return "", false
	case n.undecided != "":
		return fmt.Sprintf("the Kafka cluster at %q, which migrate could not identify (%s)", v, n.undecided), true
	}
	cv := f.ids.verdict(f.ids.answers(ctx, n))
	switch {
	case len(cv.onA) > 0:
		return fmt.Sprintf("A's Kafka cluster %q (at %q)", f.ids.a, v), true
	case len(cv.other) > 0:
		return fmt.Sprintf("Kafka cluster %q (at %q)", cv.other[0].id, v), true
	case len(cv.onB) > 0:
		return "", false
	}
	return fmt.Sprintf("the Kafka cluster at %q, which migrate could not identify (%s)", v, f.ids.others(cv, n.ownNote)), true
}

// hazard records a hazard of the family's state; msg and fix are each a string or a fleet.Text.
func (f *familyCheck) hazard(key string, msg, fix any, refuse bool) {
	f.e.add(Hazard{Check: HazardFamilyState, Key: key, Message: textOf(msg), Fix: textOf(fix), Refuse: refuse})
}

// logicalName is the Debezium logical name config cfg gives, and its key.
func (f *familyCheck) logicalName(cfg map[string]string) (key, name string) {
	for _, k := range f.out.NameConfigs {
		if v := strings.TrimSpace(cfg[k]); v != "" {
			return k, v
		}
	}
	return "", ""
}

func (f *familyCheck) debezium(ctx context.Context) {
	keyA, nameA := f.logicalName(f.a)
	keyB, nameB := f.logicalName(f.onB)
	f.nameOnB = nameB
	if nameA != "" && nameB != "" && nameA != nameB {
		if f.out.SchemaHistory {
			f.hazard(keyB, fmt.Sprintf("the edit flags change the logical name from %q (%s on A) to %q: every offset is kept under it "+
				"(the partition's %q), and so is every record of the schema history; re-keyed offsets would make Debezium's recovery "+
				"on B skip every record of the history, whose partition is A's", nameA, keyA, nameB, f.out.NameKey),
				fleet.Textf("keep the logical name (%s); to write other topic names on B, use the topic naming "+
					"strategy or a routing SMT", fleet.Drop{Key: keyB}), true)
			return
		}
		f.e.Rekey = &fleet.Rekey{Key: f.out.NameKey, From: nameA, To: nameB}
		f.hazard(keyB, fmt.Sprintf("the edit flags change the logical name from %q (%s on A) to %q: the offsets kept under %s=%q "+
			"are written on B under %s=%q, where the connector's tasks read them; it writes its topics under the new name",
			nameA, keyA, nameB, f.out.NameKey, nameA, f.out.NameKey, nameB),
			fleet.Textf("none if the new name is meant; otherwise keep %s (drop the %s or %s of it)", keyB, fleet.Set, fleet.Unset), false)
	}
	if f.out.SchemaHistory {
		f.schemaHistory(ctx)
	}
	if f.out.ReplicationSlot {
		f.slot()
	}
	if nameB != "" { // without one, B's Connect refuses the config
		f.signal(ctx)
		f.heartbeat(ctx)
	}
}

// schemaHistory checks the schema history topic: on B under the name B's config gives it,
// with every record of A's.
func (f *familyCheck) schemaHistory(ctx context.Context) {
	classKey, topicKey := "schema.history.internal", "schema.history.internal.kafka.topic"
	if f.onB[topicKey] == "" && (f.onB["database.history.kafka.topic"] != "" || f.onB["database.history"] != "") {
		classKey, topicKey = "database.history", "database.history.kafka.topic" // Debezium 1.x
	}
	if class := strings.TrimSpace(f.onB[classKey]); class != "" && !strings.HasSuffix(class, ".KafkaSchemaHistory") &&
		!strings.HasSuffix(class, ".KafkaDatabaseHistory") {
		f.hazard(classKey, fmt.Sprintf("the schema history is kept by %s, outside Kafka: migrate does not check it", class),
			"make sure B's workers reach the same history, complete (a file history is on A's worker's disk: copy it to B's workers)", false)
		return
	}
	topicB := strings.TrimSpace(f.onB[topicKey])
	if topicB == "" || f.b == nil {
		return // Debezium requires it: B's Connect refuses the config without one
	}
	if where, ok := f.elsewhere(ctx, classKey+".kafka.bootstrap.servers"); ok {
		f.hazard(classKey+".kafka.bootstrap.servers", fmt.Sprintf("the schema history is kept on %s, not B: its topic %q is not looked for on B",
			where, topicB), fleet.Textf("make sure that cluster stays reachable from B's workers, or move the history to B and %s this key", fleet.Set), false)
		return
	}
	topicA := strings.TrimSpace(f.a[topicKey])
	if topicA == "" {
		topicA = topicB
	}
	mirror := fmt.Sprintf("mirror A's %q to B as %q (MirrorMaker 2's topics setting; with the identity replication policy it keeps its name) "+
		"and wait until B has all of its records, then run migrate again", topicA, topicB)
	onB, err := topicRange(ctx, f.b, topicB)
	switch {
	case errors.Is(err, kafka.UnknownTopicOrPartition):
		f.hazard(topicKey, fmt.Sprintf("the schema history topic %q is not on B: the connector would fail on B, or recover no schema", topicB), mirror, true)
		return
	case err != nil:
		f.hazard(topicKey, fmt.Sprintf("cannot read the schema history topic %q on B: %v", topicB, err), "check it on B before B starts", false)
		return
	}
	if f.hc.a.Client() == nil {
		f.hazard(topicKey, fmt.Sprintf("the schema history topic %q is on B (%s) but its completeness was not checked: A's Kafka cluster is not read",
			topicB, onB), fleet.Textf("give %s, or compare A's and B's topic yourself before B starts", fleet.FromBrokers), false)
		return
	}
	onA, err := topicRange(ctx, f.hc.a.Client(), topicA)
	if err != nil {
		f.hazard(topicKey, fmt.Sprintf("the schema history topic %q is on B (%s) but its completeness was not checked: A's %q cannot be read on A's brokers: %v",
			topicB, onB, topicA, err), "compare A's and B's topic yourself before B starts", false)
		return
	}
	switch {
	case onB.records() < onA.records():
		f.hazard(topicKey, fmt.Sprintf("the schema history topic %q is short on B: %d records (%s) of A's %d (%q: %s)",
			topicB, onB.records(), onB, onA.records(), topicA, onA), mirror, true)
	case onB.records() > onA.records():
		f.hazard(topicKey, fmt.Sprintf("the schema history topic %q has more records on B than on A: %d (%s) for A's %d (%q: %s); "+
			"B replays every DDL statement it holds", topicB, onB.records(), onB, onA.records(), topicA, onA),
			"check that B's topic holds A's history only (records a mirror delivered twice are harmless; another connector's are not)", false)
	}
}

// slot checks PostgreSQL's replication slot: the one A's connector holds is the one B's
// must take.
func (f *familyCheck) slot() {
	slotA, slotB := orDefault(f.a["slot.name"], dbzSlotName), orDefault(f.onB["slot.name"], dbzSlotName)
	if slotA != slotB {
		f.hazard("slot.name", fmt.Sprintf("the edit flags change the replication slot from %q to %q: the slot holds the position in PostgreSQL's WAL "+
			"that B must resume from; a new slot starts at the WAL's current end, so what A had not sent yet would be lost, and %q would keep WAL until dropped",
			slotA, slotB, slotA), fleet.Textf("keep slot.name (drop the %s or %s of it)", fleet.Set, fleet.Unset), true)
	}
	if strings.EqualFold(strings.TrimSpace(f.a["slot.drop.on.stop"]), "true") {
		f.hazard("slot.drop.on.stop", fmt.Sprintf("A's connector drops its replication slot %q when it stops: stopping it on A drops the position B must resume from", slotA),
			fmt.Sprintf("set slot.drop.on.stop=false on A first (PUT /connectors/%s/config), wait until it runs with it, then migrate", f.e.Connector.Name), true)
		return
	}
	if !f.hc.opts.StopSource && !f.hc.opts.StopPlanned {
		f.hazard("slot.name", fmt.Sprintf("A's task holds the replication slot %q until it stops: B's task cannot take the slot while A's runs "+
			"(PostgreSQL lets one client stream from a slot) and fails until A's connector is stopped", slotA),
			fleet.Textf("use %s, or stop the connector on A before B starts it", fleet.StopSource), false)
	}
}

// signal checks the Kafka signal channel: its topic on B, and the position of its group there.
func (f *familyCheck) signal(ctx context.Context) {
	if f.b == nil || !slices.ContainsFunc(strings.Split(f.onB["signal.enabled.channels"], ","), func(ch string) bool {
		return strings.TrimSpace(ch) == "kafka"
	}) {
		return
	}
	topic := strings.TrimSpace(f.onB["signal.kafka.topic"])
	if topic == "" {
		topic = f.nameOnB + "-signal"
	}
	if where, ok := f.elsewhere(ctx, "signal.kafka.bootstrap.servers"); ok {
		f.hazard("signal.kafka.bootstrap.servers", fmt.Sprintf("the signal channel is kept on %s, not B: its topic %q is not looked for on B",
			where, topic), fleet.Textf("make sure that cluster stays reachable from B's workers, or move the signal topic to B and %s this key", fleet.Set), false)
		return
	}
	group := orDefault(f.onB["signal.consumer.group.id"], orDefault(f.onB["signal.kafka.groupId"], dbzSignalGroup))
	r, err := topicRange(ctx, f.b, topic)
	switch {
	case errors.Is(err, kafka.UnknownTopicOrPartition):
		f.hazard("signal.kafka.topic", fmt.Sprintf("the signal topic %q is not on B: the signals sent to the connector on B would go nowhere", topic),
			fmt.Sprintf("create %q on B (one partition: the channel reads partition 0), or mirror A's", topic), true)
		return
	case err != nil:
		f.hazard("signal.kafka.topic", fmt.Sprintf("cannot read the signal topic %q on B: %v", topic, err), "check it on B before B starts", false)
		return
	}
	if r.records() == 0 {
		return
	}
	offs, refused, err := kafkaio.FetchGroupOffsetsOf(ctx, f.b, group, map[string][]int{topic: {0}})
	if err == nil {
		err = refused[topic]
	}
	if errors.Is(err, kafka.GroupIdNotFound) {
		err = nil // a group B has never seen has no offset
	}
	if err != nil {
		f.hazard("signal.kafka.topic", fmt.Sprintf("cannot read the offset of the signal group %q on B: %v", group, err), "check it on B before B starts", false)
		return
	}
	if len(offs) > 0 {
		return
	}
	f.hazard("signal.kafka.topic", fmt.Sprintf("the signal group %q has no offset on B's %q (%s): the signal channel on B starts at the topic's "+
		"earliest record and runs again every signal there that names the connector (an execute-snapshot snapshots again)", group, topic, r),
		fmt.Sprintf("before B starts, commit %q at the end of %q on B (kafka-consumer-groups --reset-offsets --to-latest), or let MirrorMaker 2 "+
			"sync it (sync.group.offsets.enabled=true)", group, topic), false)
}

// heartbeat checks the heartbeat topic: on B, or created by B when the connector first writes.
func (f *familyCheck) heartbeat(ctx context.Context) {
	if n, _ := strconv.ParseInt(strings.TrimSpace(f.onB["heartbeat.interval.ms"]), 10, 64); f.b == nil || n <= 0 {
		return
	}
	prefix := orDefault(f.onB["topic.heartbeat.prefix"], orDefault(f.onB["heartbeat.topics.prefix"], dbzHeartbeatPrefix))
	topic := prefix + orDefault(f.onB["topic.delimiter"], ".") + f.nameOnB
	_, err := topicRange(ctx, f.b, topic)
	if !errors.Is(err, kafka.UnknownTopicOrPartition) {
		return
	}
	if f.onB["topic.creation.default.replication.factor"] != "" && f.onB["topic.creation.default.partitions"] != "" {
		return // B's Connect creates it (topic.creation.enable, on by default)
	}
	why := "B's brokers do not create topics (auto.create.topics.enable=false)"
	if auto, err := f.auto.get(ctx); err != nil {
		why = "whether B's brokers create topics is unknown: " + err.Error()
	} else if auto {
		return
	}
	f.hazard("heartbeat.interval.ms", fmt.Sprintf("the heartbeat topic %q is not on B and %s: the connector's heartbeats would fail on B", topic, why),
		fmt.Sprintf("create %q on B, or give the connector topic.creation.default.replication.factor and .partitions", topic), false)
}

// sinkProgress gives a sink that keeps its own progress its verdict.
func (f *familyCheck) sinkProgress() {
	verdict := "offsets not portable by Connect; see the connector's docs: " + f.out.Progress
	if f.hc.opts.Translated {
		f.hazard("connector.class", verdict+"; across MirrorMaker 2 that progress holds A's topic offsets, which B's topics do not have",
			fleet.Textf("move it as the connector's docs say, or leave it out (%s)", fleet.Exclude), true)
		return
	}
	what := fleet.Plain("its consumer group's offsets are copied as they are")
	if f.hc.opts.SinkOffsets == fleet.SinkOffsetsNone {
		what = fleet.Textf("its consumer group's offsets are not carried (%s)", fleet.Give{Setting: fleet.SinkOffsets, Value: "none"})
	}
	f.hazard("connector.class", fleet.Textf("%s; %v, and the sink resumes from its own progress, which is right on B only when B reads "+
		"the same Kafka cluster as A (or an offset-preserving copy)", verdict, what), "see the connector's docs before B starts it", false)
}

// partitionRange is a topic's first and end offsets per partition.
type partitionRange struct{ start, end []int64 }

func (r partitionRange) records() int64 {
	var n int64
	for p := range r.end {
		n += r.end[p] - r.start[p]
	}
	return n
}

// String says each partition's first and end offsets: "partition 0: offsets 0 to 12".
func (r partitionRange) String() string {
	parts := make([]string, len(r.end))
	for p := range r.end {
		parts[p] = fmt.Sprintf("partition %d: offsets %d to %d", p, r.start[p], r.end[p])
	}
	return strings.Join(parts, ", ")
}

// topicRange reads topic's first and end offsets per partition; an error wraps
// kafka.UnknownTopicOrPartition when the topic does not exist.
func topicRange(ctx context.Context, cl *kafka.Client, topic string) (partitionRange, error) {
	parts, refused, err := kafkaio.DescribeTopics(ctx, cl, []string{topic})
	if err == nil {
		err = refused[topic]
	}
	if err != nil {
		return partitionRange{}, fmt.Errorf("describe topic %q: %w", topic, err)
	}
	n := len(parts[topic])
	if n == 0 {
		return partitionRange{}, fmt.Errorf("describe topic %q: %w", topic, kafka.UnknownTopicOrPartition)
	}
	var r partitionRange
	if r.start, err = kafkaio.ListOffsets(ctx, cl, topic, n, kafka.FirstOffset); err != nil {
		return r, err
	}
	r.end, err = kafkaio.LogEnds(ctx, cl, topic, n)
	return r, err
}

// autoCreates reports whether the brokers behind cl create a topic a client asks for
// (auto.create.topics.enable, true by default).
func autoCreates(ctx context.Context, cl *kafka.Client) (bool, error) {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return false, fmt.Errorf("read cluster metadata: %w", err)
	}
	if len(md.Brokers) == 0 {
		return false, errors.New("no broker in the cluster metadata")
	}
	id := strconv.Itoa(md.Brokers[0].ID)
	res, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeBroker, ResourceName: id, ConfigNames: []string{"auto.create.topics.enable"}}}})
	if err != nil {
		return false, fmt.Errorf("describe configs of broker %s: %w", id, err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			return false, fmt.Errorf("describe configs of broker %s: %w", id, r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == "auto.create.topics.enable" {
				return strings.EqualFold(e.ConfigValue, "true"), nil
			}
		}
	}
	return false, fmt.Errorf("broker %s does not report auto.create.topics.enable", id)
}

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}
