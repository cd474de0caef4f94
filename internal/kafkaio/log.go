package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// Fetch tuning for Log. One fetch asks for all the partitions a broker leads (kafka-go's
// Client.Fetch has one partition per request; the Fetch request itself has many), up to
// logFetchMaxBytes of each and logFetchRequestBytes in all: a write of ten records to ten
// partitions wakes one fetch, not ten.
const (
	logFetchMaxBytes     = 1 << 20
	logFetchRequestBytes = 16 << 20
	logFetchMaxWait      = 500 * time.Millisecond
	// logPollBytes is all a fetch asks for when every partition it reads was caught up (a long
	// poll for what others write next). When the process itself writes much to the partitions
	// (the agent's offsets), Written applies those records, but a poll in flight would bring
	// them back, up to logFetchRequestBytes. A broker still sends a first record batch larger
	// than this whole (KIP-74), and once a response shows more, the next fetch asks for the full
	// amounts.
	logPollBytes = 64 << 10
	// logApplyChunk bounds the messages handed to apply at once, so a 1 MiB fetch of small records
	// does not grow a large []kafka.Message per partition.
	logApplyChunk = 256
)

// ErrLogStopped is returned by Sync and WaitReady once Run has returned without an error: the
// reader is gone, and callers give up rather than retry.
var ErrLogStopped = errors.New("log is not running")

// Log is a materialised reader of a compacted topic, the Go twin of Connect's KafkaBasedLog: it
// reads every partition from the beginning, hands each record to an apply callback and offers
// Sync, a barrier that returns once everything written before the call has been applied.
//
// Log decides nothing about record contents; views built on it (the config and offsets views of
// Store, the agent's own compacted topics) keep whatever state they need.
type Log struct {
	topic   string
	client  *kafka.Client
	leaders *leaderCache
	// conns are the connections its barriers' Fetch requests go on (fetchEnds, produce_conn.go).
	conns *ownConns
	apply func([]kafka.Message)
	// borrow: apply gets records that alias the fetch buffers (NewBorrowingLog).
	borrow bool
	// quiet: once caught up, the fetch loops wait for logPollBytes of new records, and the
	// barriers fetch what they find missing (QuietTail).
	quiet bool
	// onLoad is told the size of the initial load (OnLoad).
	onLoad func(records int64)
	logger *slog.Logger
	// backoff spaces the retries of failed fetches and metadata lookups.
	backoff Backoff
	// fetched counts the record bytes fetches brought (the load's and the tail's), for tests.
	fetched atomic.Int64

	// applyMu serialises apply so views need no lock of their own against the Log.
	applyMu sync.Mutex
	// expected are the records being written that Expect was told of (log_own.go).
	expected expectedRecords

	mu      sync.Mutex
	started bool
	inited  chan struct{} // closed once next and target are set
	next    []int64       // per partition: the offset after the last applied record
	target  []int64       // initial end offsets; readiness is reaching them
	ready   chan struct{} // closed once every partition reached target
	changed chan struct{} // closed on every advance, to wake Sync; nil until a waiter needs one (changedLocked)
	done    chan struct{} // closed when Run returns
	runErr  error
	// Own writes (log_own.go), set with next: per partition, a lock that serialises applying
	// its records (fetch loop or Written), the runs of own records waiting for the fetch loop
	// and the number of holds; holdChanged is closed and replaced on every release.
	pmu         []sync.Mutex
	own         [][]ownRun
	held        []int
	holdChanged chan struct{}
	// ownDirty marks the partitions with new runs for the applier, which ownKick wakes.
	ownDirty []bool
	ownKick  chan struct{}

	// endMu guards the shared end-offset reads of Sync (endOffsets).
	endMu       sync.Mutex
	endInflight *endCall
	endNext     *endCall
}

// NewLog returns a Log over topic. It never dials. apply is called with the records of one fetch
// of one partition, in offset order, never concurrently with itself; it must not keep the slice,
// but it may keep each message's Key, Value and Headers, which are fresh copies. Key and Value may
// share one backing array (both are capacity-limited, so appending to either copies). A nil Value
// is a tombstone; an empty non-nil Value is an empty record value. Control records (transaction
// markers) are never passed to apply.
func NewLog(opts Options, topic string, apply func([]kafka.Message)) (*Log, error) {
	return newLog(opts, topic, apply, false)
}

// NewBorrowingLog is NewLog for an apply that copies whatever it keeps: the Key, Value and
// header values of the records it is given (own records excepted, see Written) alias the
// buffer of the fetch that brought them, which the next fetch overwrites, so they are valid
// only until apply returns. It saves a copy and an allocation per record, which is most of a
// large view's load after the decoding.
func NewBorrowingLog(opts Options, topic string, apply func([]kafka.Message)) (*Log, error) {
	return newLog(opts, topic, apply, true)
}

func newLog(opts Options, topic string, apply func([]kafka.Message), borrow bool) (*Log, error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("new log: no brokers")
	}
	if topic == "" {
		return nil, errors.New("new log: empty topic")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cl := NewClient(opts)
	return &Log{
		topic:   topic,
		client:  cl,
		leaders: newLeaderCache(cl),
		conns:   newOwnConns(cl),
		apply:   apply,
		borrow:  borrow,
		logger:  logger.With("topic", topic),
		backoff: Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second},
		inited:  make(chan struct{}),
		ownKick: make(chan struct{}, 1),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}, nil
}

// OnLoad makes Run call f once, before it applies anything, with the number of offsets the
// initial load covers (records, control records and offsets compacted away), so that a view
// can size itself once instead of growing through the load. Call it before Run.
func (l *Log) OnLoad(f func(records int64)) { l.onLoad = f }

// QuietTail is for a log whose readers read it through Sync or SyncTo only (a view consulted
// at barriers): once its partitions are caught up, its fetch loops wait for logPollBytes of new
// records, or logFetchMaxWait, rather than for the first record, so that the owner's own
// writes, which Written applies, no longer wake them only to bring those records back and send
// the next long poll; a write of the agent's is then one round trip instead of two, or three.
// Others' records are fetched by the barriers that find the log behind them (their read of
// the partitions' ends brings the missing records, and they fetch on without waiting until
// they have them) or by the next poll. Call it before Run.
func (l *Log) QuietTail() { l.quiet = true }

// Topic returns the topic the log reads.
func (l *Log) Topic() string { return l.topic }

// Partitions returns the topic's partition count once Run has read it, 0 before.
func (l *Log) Partitions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.next)
}

// Run reads the topic until ctx is done. It returns nil when ctx ends it, and an error when the
// topic cannot be described or a partition cannot be read for a non-retriable reason (an
// *AuthzError naming Read on the topic for a missing ACL). Run may be called once.
func (l *Log) Run(ctx context.Context) (err error) {
	l.mu.Lock()
	if l.started {
		l.mu.Unlock()
		return fmt.Errorf("run log of topic %q: already started", l.topic)
	}
	l.started = true
	l.mu.Unlock()
	defer func() {
		if ctx.Err() != nil {
			err = nil
		}
		err = refusal(l.client, err, OpRead, ResourceTopic, l.topic)
		l.mu.Lock()
		l.runErr = err
		l.mu.Unlock()
		close(l.done)
	}()

	n, err := l.start(ctx)
	if err != nil {
		return err
	}
	if l.onLoad != nil {
		var backlog int64
		l.mu.Lock() // Written may move a partition on already
		for p := range l.target {
			backlog += max(l.target[p]-l.next[p], 0)
		}
		l.mu.Unlock()
		l.onLoad(backlog)
	}
	ownCtx, stopOwn := context.WithCancel(ctx)
	defer stopOwn()
	go l.applyOwnLoop(ownCtx)
	// The initial load runs a fetch loop per partition, so that the broker builds one
	// partition's response while the view applies another's. Then, and whenever a partition's
	// leadership moves (a broker answers "not leader", or kafka-go's routing finds the
	// partitions of one request led by two brokers), every loop stops and the partitions are
	// grouped again from fresh metadata: one loop per leader.
	for attempt := 1; ; attempt++ {
		started := time.Now()
		err := l.tailGroups(ctx, n)
		switch {
		case ctx.Err() != nil, err == nil:
			return nil
		case errors.Is(err, errLoaded):
			continue
		case errors.Is(err, errRegroup) && time.Since(started) > l.backoff.Max:
			attempt = 1 // the loops ran a while: a new change, not the same one
		case err != nil && !errors.Is(err, errRegroup) && !errors.Is(err, errMetadata):
			return err
		}
		l.logger.Warn("regroup log partitions by leader", "err", err)
		if !Sleep(ctx, l.backoff.Delay(attempt)) {
			return nil
		}
	}
}

// start reads the partition count and the first and end offsets of the topic: where reading
// starts and where the log becomes ready.
func (l *Log) start(ctx context.Context) (int, error) {
	// Refused, the log needs Read (Run says so), which implies the Describe asked here.
	leaders, err := PartitionLeaders(ctx, l.client, l.topic)
	if err != nil {
		return 0, fmt.Errorf("run log of topic %q: %w", l.topic, err)
	}
	n := len(leaders)
	first, last, err := l.initialOffsets(ctx, n)
	if err != nil {
		return 0, fmt.Errorf("run log of topic %q: %w", l.topic, err)
	}
	l.mu.Lock()
	l.next, l.target = first, last
	l.pmu, l.own, l.held, l.ownDirty = make([]sync.Mutex, n), make([][]ownRun, n), make([]int, n), make([]bool, n)
	l.holdChanged = make(chan struct{})
	l.checkReadyLocked()
	l.mu.Unlock()
	close(l.inited)
	return n, nil
}

// leaderWait is how long the initial load waits for the partitions of a topic to get their
// leaders.
const leaderWait = 30 * time.Second

// initialOffsets returns the first and end offsets of the n partitions. A topic created a moment
// before (the agent's own topics, on its first start) can answer "not leader" until its
// partitions' leaders are in place: Apache Kafka 4.3 does, kfake does not. Such errors are retried
// for up to leaderWait.
func (l *Log) initialOffsets(ctx context.Context, n int) (first, last []int64, err error) {
	deadline := time.Now().Add(leaderWait)
	for attempt := 1; ; attempt++ {
		first, err = ListOffsets(ctx, l.client, l.topic, n, kafka.FirstOffset)
		if err == nil {
			last, err = ListOffsets(ctx, l.client, l.topic, n, kafka.LastOffset)
		}
		delay := l.backoff.Delay(attempt)
		if err == nil || !isLeadershipError(err) || time.Now().Add(delay).After(deadline) {
			return first, last, err
		}
		l.logger.Debug("log waits for partition leaders", "err", err)
		if !Sleep(ctx, delay) {
			return nil, nil, ctx.Err()
		}
	}
}

// tailGroups runs the fetch loops of the n partitions, one per partition while loading and one
// per leader afterwards, until one of them fails or asks for a regroup (errRegroup), or the
// load completes (errLoaded). A failed metadata lookup is an errMetadata.
func (l *Log) tailGroups(ctx context.Context, n int) error {
	leaders, err := PartitionLeaders(ctx, l.client, l.topic)
	if err == nil && len(leaders) < n {
		err = fmt.Errorf("topic has %d partitions, was %d", len(leaders), n)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errMetadata, err)
	}
	loading := !l.Ready()
	groups := map[int][]int{}
	for p := range n {
		if loading {
			groups[p] = []int{p}
		} else {
			groups[leaders[p]] = append(groups[leaders[p]], p)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, parts := range groups {
		g.Go(func() error { return l.tail(gctx, parts) })
	}
	if loading {
		g.Go(func() error {
			select {
			case <-l.ready:
				return errLoaded
			case <-gctx.Done():
				return nil
			}
		})
	}
	return g.Wait()
}

// errRegroup and errLoaded stop the fetch loops of Run so that partitions are grouped by
// leader again.
var (
	errRegroup  = errors.New("partition leadership changed")
	errLoaded   = errors.New("initial load done")
	errMetadata = errors.New("look up partition leaders")
)
