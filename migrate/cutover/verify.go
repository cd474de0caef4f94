package cutover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Brokers and Transport reach B's Kafka cluster (Transport nil: no SASL/TLS).
	Brokers   []string
	Transport *kafka.Transport
	// Principal describes who Transport authenticates as on B (clientconfig.Security.Principal),
	// named in the message of a refused request. Empty means User:ANONYMOUS.
	Principal string
	// Timeout bounds the verification; 0 reads B once.
	Timeout time.Duration
	// Poll is the pause between two reads of B (default 1 s).
	Poll time.Duration
	// Registry knows the connector classes and their offsets' order (nil:
	// connectors.Builtin()).
	Registry *connectors.Registry
	// Progress, when not nil, is told what the verification waits for and for how long when
	// it starts waiting (after its first read of B), and the partitions per verdict every
	// ProgressEvery (default 10 s) while it waits.
	Progress      func(Waiting)
	ProgressEvery time.Duration
	// FromBrokers, FromTransport and FromPrincipal reach A's Kafka cluster, where a connector
	// stopped on A without A's REST API is checked again (Connector.WorkersOfA): no
	// brokers means those the report names, and no transport B's when the report says A's
	// Kafka cluster is B's, else none.
	FromBrokers   []string
	FromTransport *kafka.Transport
	FromPrincipal string
}

// defaultVerifyPoll is VerifyOptions.Poll when it is 0; defaultVerifyProgress
// VerifyOptions.ProgressEvery.
const (
	defaultVerifyPoll     = time.Second
	defaultVerifyProgress = 10 * time.Second
)

// maxFetchesPerRead bounds the fetches of one offsets-topic partition in one read of B.
const maxFetchesPerRead = 100_000

// Verify reads, on B, what each connector of c committed after the offsets placed,
// and sets each partition's verdict (docs/migration.md, the verify step):
//
//   - a source: B's offsets topic (the connector's offsets.storage.topic when it has one) is
//     read committed, from its start, in the partition that holds the partition's key (the
//     key bytes Connect writes, which the task looks its offset up by). After the record of
//     the placed offset (the first one, or the first after a wipe: tombstones then the placed
//     offset again), the first record of another position is the first offset B's task
//     committed: verified when it follows the placed one in the family's order, mismatch when
//     it is before it (or a tombstone, or a Debezium snapshot's offset after a streaming
//     placement), unordered when the family has no known order; waiting
//     while there is none. A placed offset that is not A's offset, or is not in the topic, is
//     a mismatch (a placement compacted away is judged by the earliest offset left).
//   - a Debezium source whose records carry their position (records.go), moved with
//     A stopped: the records its connector produced on B, told from A's by their timestamps
//     and topics, and A's found there judge it when they say something (evidence "records"),
//     each placed against the offset as its family's offset says (families.go):
//     mismatch when B's earliest is one the offset covers (or cannot be where B resumed);
//     replay when A produced records past the offset that it never committed (mismatch when
//     A's offsets topic shows its offset was set back: history.go); verified when B's
//     earliest is past the offset; the offsets stay the evidence otherwise.
//   - a sink: the committed offsets of its group on B (an OffsetFetch sees committed
//     transactional commits only) and the log start of each placed partition on B: equal to
//     the placed one, waiting; past it, verified; before it, or the placed one below B's log
//     start (records skipped), mismatch; an offset for a partition never placed (A's group
//     had none), unordered.
//
// It reads B again every Poll until every partition is verified, mismatch, unordered or
// replay (one whose B side has been seen), or Timeout has passed (what is still waiting stays
// so), or ctx ends; Progress is told what it waits for. Errors are B's: the
// topic or group cannot be read, or B is not the Kafka cluster c names (c.ToClusterID, set to
// B's when empty).
func Verify(ctx context.Context, c *Cutover, opts VerifyOptions) error {
	if opts.Registry == nil {
		opts.Registry = connectors.Builtin()
	}
	if opts.Poll <= 0 {
		opts.Poll = defaultVerifyPoll
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = defaultVerifyProgress
	}
	c.VerifyStarted, c.VerifyFinished, c.VerifyTimeout, c.Error = time.Now().UTC(), time.Time{}, opts.Timeout.String(), ""
	defer func() { c.VerifyFinished = time.Now().UTC(); c.noteIdle(); c.Count() }()
	bounded := ctx
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		bounded, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	// B is read through once whatever the timeout: a verdict needs it.
	first, cancelFirst := context.WithTimeout(ctx, max(opts.Timeout, minFirstRead))
	defer cancelFirst()
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: opts.Brokers, Transport: opts.Transport, Principal: opts.Principal})
	id, err := kafkaio.ClusterID(first, cl)
	if err != nil {
		return fmt.Errorf("read B's cluster id: %w", err)
	}
	switch {
	case c.ToClusterID == "":
		c.ToClusterID = id
	case c.ToClusterID != id:
		return fleet.Errorf("the cutover report is of a migration into Kafka cluster %q; %s reach cluster %q: give the brokers of the cluster the offsets were placed on", c.ToClusterID, fleet.ToBrokers, id)
	}
	c.checkWorkersOfA(first, opts, id)
	v, err := newVerifier(first, cl, c, opts.Registry)
	if err != nil {
		return err
	}
	rounds := 1
	if opts.Timeout > 0 {
		rounds += int(opts.Timeout / opts.Poll)
	}
	var told time.Time // the last progress line
	for i := range rounds {
		readCtx := bounded
		if i == 0 {
			readCtx = first
		}
		err := v.read(readCtx)
		if err != nil {
			if i > 0 && ctx.Err() == nil && (bounded.Err() != nil || errors.Is(err, context.DeadlineExceeded) || kafkaio.Expired(bounded)) {
				return nil // the timeout came in the middle of a read: what is undecided waits
			}
			return err
		}
		if v.decided() || opts.Timeout <= 0 {
			return nil
		}
		switch {
		case opts.Progress == nil:
		case i == 0:
			c.Count()
			opts.Progress(c.waiting(true, opts.Timeout, opts.ProgressEvery))
			told = time.Now()
		case time.Since(told) >= opts.ProgressEvery:
			c.Count()
			opts.Progress(c.waiting(false, opts.Timeout, opts.ProgressEvery))
			told = time.Now()
		}
		if !kafkaio.Sleep(bounded, opts.Poll) {
			return nil
		}
	}
	return nil
}

// Waiting is where a verification that waits stands (VerifyOptions.Progress):
// told once when it starts waiting, after its first read of B (First), then every
// ProgressEvery while it waits.
type Waiting struct {
	// First: the verification starts waiting; the partitions it waits for are listed.
	First bool
	// Elapsed is the time since the verification started, Timeout its bound, Every how often
	// it tells.
	Elapsed, Timeout, Every time.Duration
	// Counts are the partitions per verdict now.
	Counts map[Verdict]int
	// Open is how many of the Total partitions are still to move past the offsets placed, of
	// the connectors that commit on B (not born PAUSED or STOPPED), named by Connectors (their
	// names on B); where B's side of them is read: OffsetsTopics (the sources' new offsets),
	// Prefixes (the topic prefixes of the Debezium sources whose records are read), Groups (the
	// sinks' groups). Set when First.
	Open, Total                                 int
	Connectors, OffsetsTopics, Prefixes, Groups []string
}

// waiting is where the verification of c stands, for its Progress.
func (c *Cutover) waiting(first bool, timeout, every time.Duration) Waiting {
	w := Waiting{First: first, Elapsed: time.Since(c.VerifyStarted), Timeout: timeout, Every: every, Counts: maps.Clone(c.Counts)}
	if !first {
		return w
	}
	for _, cc := range c.Connectors {
		w.Total += len(cc.Partitions)
		open := 0
		for _, p := range cc.Partitions {
			if p.Verdict == VerdictWaiting || p.Verdict == VerdictReplay && p.FirstRecordOnB == nil {
				open++
			}
		}
		if open == 0 || cc.idle() {
			continue
		}
		w.Open += open
		w.Connectors = append(w.Connectors, cc.TargetName)
		switch {
		case cc.Type == string(connectors.Sink):
			w.Groups = append(w.Groups, cc.Group)
		case cc.TopicPrefix != "" && cc.StoppedOnA:
			w.Prefixes = append(w.Prefixes, cc.TopicPrefix)
			fallthrough
		default:
			if !slices.Contains(w.OffsetsTopics, cc.OffsetsTopic) {
				w.OffsetsTopics = append(w.OffsetsTopics, cc.OffsetsTopic)
			}
		}
	}
	return w
}

// noteIdle says of each partition still waiting of a connector born PAUSED or STOPPED why
// it waits: B's connector commits nothing until it is resumed.
func (c *Cutover) noteIdle() {
	for _, cc := range c.Connectors {
		if !cc.idle() {
			continue
		}
		for _, p := range cc.Partitions {
			if p.Verdict == VerdictWaiting && !strings.HasPrefix(p.Detail.String(), "born ") {
				why := fleet.Textf("born %s on B: it commits nothing until it is resumed; verify again after resuming it (%s)", cc.State, fleet.Next{Verb: fleet.VerbVerify})
				if !p.Detail.IsZero() {
					why = why.Append("; %v", p.Detail)
				}
				p.Detail = why
			}
		}
	}
}

// minFirstRead is the least time the first read of B is given.
const minFirstRead = 30 * time.Second

// verifier is the state of one Verify.
type verifier struct {
	cl *kafka.Client
	// sources are the tracked keys of each offsets topic, by partition and key bytes; next is
	// where each partition is read from next.
	sources map[string]map[int]map[string]*sourceTrack
	next    map[string]map[int]int64
	sinks   []*sinkTrack
	// records are the tracks of the sources whose records carry their position.
	records []*recordTrack
}

// sourceTrack follows one source partition through its key's records.
type sourceTrack struct {
	cc    *Connector
	p     *Partition
	topic string
	class string
	order offsetOrder
	// placed is the placed offset's text (keys sorted).
	placed string
	// placedSeen: a record of the placed offset was read; first is the first offset of
	// another position after the last one (tomb: a tombstone came first).
	placedSeen bool
	first      jsonvalue.Map
	tomb       bool
	// any: the key has a record; earliest is its first offset of another position than the
	// placed one, for a placement that is no longer in the topic.
	any      bool
	earliest jsonvalue.Map
	// final: the verdict cannot change; idle: the connector commits nothing until resumed
	// on B (born PAUSED or STOPPED), so its verdict is not waited for.
	final, idle bool
}

func newVerifier(ctx context.Context, cl *kafka.Client, c *Cutover, reg *connectors.Registry) (*verifier, error) {
	v := &verifier{cl: cl, sources: map[string]map[int]map[string]*sourceTrack{}, next: map[string]map[int]int64{}}
	counts := map[string]int{}
	for _, cc := range c.Connectors {
		if cc.Type == string(connectors.Sink) {
			if len(cc.Partitions) > 0 {
				v.sinks = append(v.sinks, &sinkTrack{c: cc, idle: cc.idle()})
			}
			continue
		}
		if len(cc.Partitions) == 0 {
			continue
		}
		n, ok := counts[cc.OffsetsTopic]
		if !ok {
			var err error
			if n, err = kafkaio.PartitionCount(ctx, cl, cc.OffsetsTopic); err != nil {
				return nil, fmt.Errorf("read B's offsets topic %q: %w", cc.OffsetsTopic, err)
			}
			counts[cc.OffsetsTopic] = n
		}
		order := partitionOrder(reg, cc.Class)
		for _, p := range cc.Partitions {
			t := &sourceTrack{cc: cc, p: p, topic: cc.OffsetsTopic, class: cc.Class, order: orderOf(reg, cc.Class), placed: jsonvalue.SortedText(p.Placed),
				idle: cc.idle()}
			p.FirstOnB, p.Verdict, p.Evidence, p.Detail = nil, VerdictWaiting, EvidenceOffsets, fleet.Text{}
			if p.OnA != nil && p.Placed != nil && jsonvalue.SortedText(p.OnA) != t.placed {
				p.Verdict, t.final = VerdictMismatch, true
				p.Detail = fleet.Textf("the offset placed on B, %s, is not A's offset at stop, %s", t.placed, jsonvalue.SortedText(p.OnA))
			}
			key := string(offsetstore.AppendKey(nil, cc.TargetName, order(p.Partition)))
			part := offsetstore.PartitionFor([]byte(key), n)
			if v.sources[cc.OffsetsTopic] == nil {
				v.sources[cc.OffsetsTopic], v.next[cc.OffsetsTopic] = map[int]map[string]*sourceTrack{}, map[int]int64{}
			}
			if v.sources[cc.OffsetsTopic][part] == nil {
				v.sources[cc.OffsetsTopic][part] = map[string]*sourceTrack{}
				v.next[cc.OffsetsTopic][part] = kafka.FirstOffset
			}
			v.sources[cc.OffsetsTopic][part][key] = t
			if r := newRecordTrack(reg, cc, t); r != nil {
				v.records = append(v.records, r)
			}
		}
	}
	return v, nil
}

// decided reports whether no partition can change its verdict any more.
func (v *verifier) decided() bool {
	for _, parts := range v.sources {
		for _, keys := range parts {
			for _, t := range keys {
				if !t.final && !t.idle {
					return false
				}
			}
		}
	}
	for _, s := range v.sinks {
		if !s.final && !s.idle {
			return false
		}
	}
	for _, r := range v.records {
		if r.pending && !r.st.idle {
			return false // a replay whose B side is not seen yet
		}
	}
	return true
}

// read reads B once: each tracked offsets-topic partition to its last stable offset, each
// sink's group; and judges every partition.
func (v *verifier) read(ctx context.Context) error {
	for topic, parts := range v.sources {
		for part, keys := range parts {
			if err := v.readPartition(ctx, topic, part, keys); err != nil {
				return err
			}
			for _, t := range keys {
				if !t.final {
					t.judge()
				}
			}
		}
	}
	for _, r := range v.records {
		if r.final {
			continue
		}
		if r.inert.IsZero() {
			r.readErr = r.read(ctx, v.cl) // the offsets stay the evidence of what cannot be read
		}
		r.judge()
	}
	// The groups first, then the log starts (once for every sink), as a sink's were read
	// before: a log start read after its group's offsets.
	// The groups are read groupReads at a time: each is a round trip to its coordinator, and
	// a fleet's thousands of sinks read one after the other spent seconds on each pass.
	offs := make([][]kafkaio.GroupOffset, len(v.sinks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(groupReads)
	for i, s := range v.sinks {
		if s.final {
			continue
		}
		g.Go(func() error {
			var err error
			if offs[i], err = kafkaio.FetchGroupOffsets(gctx, v.cl, s.c.Group); err != nil {
				return fmt.Errorf("read the offsets of group %q on B: %w", s.c.Group, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	starts := logStarts(ctx, v.cl, v.sinks)
	for i, s := range v.sinks {
		if !s.final {
			s.judge(offs[i], starts)
		}
	}
	return nil
}

// groupReads bounds the sinks' groups on B read at once in a pass of the verification.
const groupReads = 32

// readPartition reads partition part of topic from where the last read ended to its last
// stable offset, and gives each record of a tracked key to its track.
func (v *verifier) readPartition(ctx context.Context, topic string, part int, keys map[string]*sourceTrack) error {
	for range maxFetchesPerRead {
		from := v.next[topic][part]
		f, err := kafkaio.FetchPartition(ctx, v.cl, topic, part, from, 1<<20, 100*time.Millisecond)
		if err != nil {
			return fmt.Errorf("read B's offsets topic %q partition %d: %w", topic, part, err)
		}
		for _, m := range f.Messages {
			if t := keys[string(m.Key)]; t != nil && !t.final {
				t.add(m.Value)
			}
		}
		v.next[topic][part] = f.Next
		if f.Next >= f.LastStable || (len(f.Messages) == 0 && f.Next == from) {
			return nil
		}
	}
	return nil
}

// add takes the next record of the track's key (a nil value is a tombstone).
func (t *sourceTrack) add(value []byte) {
	t.any = true
	var m jsonvalue.Map
	if value != nil {
		sc := jsonvalue.NewScanner(value)
		sc.AllowLeadingZeros()
		var err error
		if m, err = sc.Object(); err != nil {
			return // Connect skips a record it cannot read; so does the verification
		}
	}
	switch {
	case m != nil && jsonvalue.SortedText(m) == t.placed:
		// The placement; or, after it, a commit at the very same offset (a task that
		// replayed up to it), which is not a new one; or, after a tombstone, the placement
		// again (a wipe, as B's agent does before it writes the offsets).
		if !t.placedSeen || t.tomb {
			t.placedSeen, t.first, t.tomb = true, nil, false
		}
	case t.placedSeen && m == nil && t.first != nil:
		// A wipe after B moved on: what follows is another placement's.
		t.placedSeen, t.first, t.earliest = false, nil, nil
	case t.placedSeen:
		if t.first != nil || t.tomb {
			return
		}
		if m == nil {
			t.tomb = true
		} else if !t.samePosition(m) {
			t.first = m
		}
	case m == nil:
		t.earliest = nil // what was before is wiped
	case t.earliest == nil && !t.samePosition(m):
		t.earliest = m
	}
}

// samePosition reports whether offset m is at the placed offset's position in the family's
// order (a commit that only refreshed other members).
func (t *sourceTrack) samePosition(m jsonvalue.Map) bool {
	if t.order == nil {
		return false
	}
	c, ok := t.order(m, t.p.Placed)
	return ok && c == 0
}

// judge sets the partition's verdict from what was read.
func (t *sourceTrack) judge() {
	p := t.p
	switch {
	case t.placedSeen && t.tomb:
		p.Verdict, t.final = VerdictMismatch, true
		p.Detail = fleet.Textf("after the offset placed, %s, B's topic %q holds a tombstone: the partition's offset was removed", t.placed, t.topic)
	case t.placedSeen && t.first == nil:
		p.Verdict = VerdictWaiting
		p.Detail = fleet.Textf("B holds the offset placed, %s; its connector has committed nothing after it yet", t.placed)
	case t.placedSeen:
		t.compare(t.first, "")
	case !t.any:
		p.Verdict, t.final = VerdictMismatch, true
		p.Detail = fleet.Textf("B's topic %q holds no offset for the partition: the offset placed, %s, is not there", t.topic, t.placed)
	case t.earliest == nil:
		p.Verdict = VerdictWaiting
		p.Detail = fleet.Textf("the offset placed, %s, is no longer in B's topic %q (compacted), and nothing after it yet", t.placed, t.topic)
	default:
		t.compare(t.earliest, fmt.Sprintf("the offset placed is no longer in B's topic %q (compacted); judged by the earliest offset left: ", t.topic))
	}
}

// compare judges got, the first offset B committed after the placed one.
func (t *sourceTrack) compare(got jsonvalue.Map, prefix string) {
	p := t.p
	p.FirstOnB, t.final = got, true
	first := jsonvalue.SortedText(got)
	if t.order == nil {
		p.Verdict = VerdictUnordered
		p.Detail = fleet.Plain(prefix).Append("B committed %s after the offset placed, %s; the offsets of %s have no order offsetagent knows: compare them by hand", first, t.placed, t.class)
		return
	}
	c, ok := t.order(got, p.Placed)
	switch {
	case snapshotting(got) && !snapshotting(p.Placed):
		// Debezium placed at a streaming position snapshots again only when it starts over
		// (snapshot.mode, or the position gone from the database's log).
		p.Verdict = VerdictMismatch
		p.Detail = fleet.Plain(prefix).Append("B's first offset after the placed %s is %s, a snapshot's offset: the connector started a new snapshot "+
			"instead of resuming from the streaming position placed (its snapshot.mode, or the position no longer in the database's log)", t.placed, first)
	case !ok:
		p.Verdict = VerdictUnordered
		p.Detail = fleet.Plain(prefix).Append("B committed %s after the offset placed, %s; the two cannot be ordered (a snapshot's offset, or members missing): compare them by hand", first, t.placed)
	case c > 0:
		p.Verdict = VerdictVerified
		p.Detail = fleet.Plain(prefix).Append("B's first offset after the placed %s is %s: it follows it", t.placed, first)
	case c < 0:
		p.Verdict = VerdictMismatch
		p.Detail = fleet.Plain(prefix).Append("B's first offset after the placed %s is %s: before it (records produced again, or another offset placed)", t.placed, first)
	default:
		p.Verdict, t.final = VerdictWaiting, false
		p.Detail = fleet.Plain(prefix).Append("B holds %s, at the position placed, %s; nothing after it yet", first, t.placed)
	}
}

// checkWorkersOfA asks A's Kafka cluster again, for each connector stopped on A without A's
// REST API, whether a worker of A holds it (Connector.WorkersOfA): a worker of A
// restarted with the connector runs it again, and its records are then no evidence. What
// cannot be checked (A's cluster unreachable, or another cluster than the migration's) counts
// as held: the records are no evidence either. clusterB is B's Kafka cluster id.
func (c *Cutover) checkWorkersOfA(ctx context.Context, opts VerifyOptions, clusterB string) {
	for _, cc := range c.Connectors {
		w := cc.WorkersOfA
		if w == nil {
			continue
		}
		brokers, tr, principal := opts.FromBrokers, opts.FromTransport, opts.FromPrincipal
		if len(brokers) == 0 {
			brokers = w.Brokers
		}
		if tr == nil && w.ClusterID != "" && w.ClusterID == clusterB {
			tr, principal = opts.Transport, ""
		}
		cl := kafkaio.NewClient(kafkaio.Options{Brokers: brokers, Transport: tr, Principal: principal})
		cl.Timeout = 30 * time.Second
		id, err := kafkaio.ClusterID(ctx, cl)
		switch {
		case err != nil:
			w.Checked, w.Held = fleet.Textf("A's Kafka cluster (%s) could not be asked whether a worker of A holds the connector again: %v; "+
				"give %s and %s to %s", strings.Join(brokers, ","), err, fleet.FromBrokers, fleet.FromCommandConfig, fleet.Next{Verb: fleet.VerbVerify}), true
			continue
		case w.ClusterID != "" && id != w.ClusterID:
			w.Checked, w.Held = fleet.Textf("%s is Kafka cluster %q, not A's %q: whether a worker of A holds the connector again is not known; "+
				"give A's %s to %s", strings.Join(brokers, ","), id, w.ClusterID, fleet.FromBrokers, fleet.Next{Verb: fleet.VerbVerify}), true
			continue
		}
		how, err := source.WorkersOfA{Client: cl, Principal: principal, ConfigTopic: w.ConfigTopic}.NoneHolds(ctx, cc.Name, w.RecordAt)
		if err != nil {
			w.Checked, w.Held = fleet.Textf("checked again at the verification: %v", err), true
			continue
		}
		w.Checked, w.Held = fleet.Plain("checked again at the verification: "+how), false
	}
}
