package agent

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/segmentio/kafka-go"
)

// consume is the consumer-group loop. Each generation's assignment gets one fetcher per
// partition; records go to a fixed set of lanes by record key, so requests for one connector
// (keyed by its name) run in order while different connectors run in parallel, Concurrency at
// a time. A generation ends on a rebalance or shutdown: the fetchers stop, requests already
// started finish (bounded by the shutdown timeout), the partitions' offsets are committed, and
// only then does the group move on, so the next owner of a partition starts after the last
// request this replica finished and nothing runs twice.
func (a *Agent) consume(ctx, work context.Context) error {
	session := a.cfg.SessionTimeout
	if session == 0 {
		session = 10 * time.Second
	}
	heartbeat := min(time.Second, session/3)
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:      a.cfg.GroupID,
		Brokers: a.cfg.Brokers,
		Dialer:  a.conns.Dialer,
		Topics:  []string{a.cfg.RequestTopic},
		// A new group begins at the earliest request: requests published while no agent
		// ran are processed when one starts.
		StartOffset:           kafka.FirstOffset,
		WatchPartitionChanges: true,
		HeartbeatInterval:     heartbeat,
		SessionTimeout:        session,
		RebalanceTimeout:      a.cfg.ShutdownTimeout + 10*time.Second,
		JoinGroupBackoff:      time.Second,
		Timeout:               10 * time.Second,
	})
	if err != nil {
		return err
	}
	lanes := newLanes(a.cfg.Concurrency, a.process, work)
	// Close the group first: that waits for the generation's fetchers to drain, and only then
	// may the lanes stop.
	defer func() {
		_ = cg.Close()
		lanes.close()
	}()

	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			a.log.Warn("consumer group generation failed", "err", err)
			continue
		}
		a.joined.Store(true)
		a.ready.Store(true)
		assigned := gen.Assignments[a.cfg.RequestTopic]
		a.log.Info("partitions assigned", "generation", gen.ID, "partitions", len(assigned))
		// A previous owner may have published results it did not commit: see them before
		// deciding whether a redelivered request is new.
		if err := a.results.log.Sync(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("read result topic", "err", err)
		} else if err := a.intents.sweep(ctx, a.results.seen); err != nil && ctx.Err() == nil {
			a.log.Warn("remove stale intents", "err", err)
		}
		for _, pa := range assigned {
			gen.Start(func(gctx context.Context) {
				a.consumePartition(ctx, gctx, gen, lanes, pa)
			})
		}
		if len(assigned) == 0 {
			gen.Start(func(gctx context.Context) {
				select {
				case <-gctx.Done():
				case <-ctx.Done():
				}
			})
		}
	}
}

// consumePartition fetches one partition for one generation and commits its finished
// prefix. It returns when the generation or the agent ends, after draining.
func (a *Agent) consumePartition(ctx, gctx context.Context, gen *kafka.Generation, lanes *lanes, pa kafka.PartitionAssignment) {
	topic := a.cfg.RequestTopic
	r := a.requestReader(pa.ID)
	defer r.Close()
	if err := r.SetOffset(pa.Offset); err != nil {
		a.log.Error("set fetch offset", "topic", topic, "partition", pa.ID, "offset", pa.Offset, "err", err)
		return
	}
	tr := newTracker()
	stop, cancel := context.WithCancel(gctx)
	defer cancel()
	context.AfterFunc(ctx, cancel)

	var wg sync.WaitGroup
	wg.Go(func() { a.commitLoop(stop, gen, topic, pa.ID, tr) })
	a.fetchRequests(stop, r, tr, lanes)

	// Stop: requests not yet started are abandoned (the next owner fetches them again);
	// started ones finish, bounded by the shutdown timeout, then the final commit.
	tr.abandonQueued()
	drained := tr.waitStarted(a.cfg.ShutdownTimeout)
	wg.Wait()
	if next, ok := tr.committable(); ok {
		if err := commitFinal(gen, topic, pa.ID, next); err != nil {
			a.log.Error("final commit", "topic", topic, "partition", pa.ID, "offset", next, "err", err)
		}
	}
	if !drained {
		a.log.Warn("shutdown timeout reached with requests still running", "topic", topic, "partition", pa.ID)
	}
}

// requestReader returns a reader of one partition of the request topic.
func (a *Agent) requestReader(partition int) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:   a.cfg.Brokers,
		Topic:     a.cfg.RequestTopic,
		Partition: partition,
		Dialer:    a.conns.Dialer,
		MinBytes:  1,
		MaxBytes:  a.cfg.MaxRequestBytes + 1<<20,
		// kafka-go gives the broker MaxWait less a margin of min(MaxWait/4, 1 s) for its long
		// poll, and drops the connection if the answer has not started by MaxWait. 1.5 s makes
		// the poll 500 ms and the margin 1 s, enough for a broker busy taking in a 10 MB
		// request; a smaller margin times readers out, and each reconnects and fetches again.
		// A reader's Close waits for its poll, so a rebalance or shutdown waits up to 500 ms more.
		MaxWait: 1500 * time.Millisecond,
		// Keep prefetching small: records fetched but not started are fetched again by the next
		// owner after a rebalance, and these are not counted in MaxInflightBytes (up to
		// QueueCapacity+1 records of up to MaxRequestBytes per partition).
		QueueCapacity:  4,
		ReadBackoffMin: 50 * time.Millisecond,
		ReadBackoffMax: time.Second,
	})
}

// fetchRequests hands the partition's records to the lanes until stop ends.
func (a *Agent) fetchRequests(stop context.Context, r *kafka.Reader, tr *tracker, lanes *lanes) {
	for {
		msg, err := r.FetchMessage(stop)
		if err != nil {
			if stop.Err() != nil {
				return
			}
			a.log.Warn("fetch request", "topic", a.cfg.RequestTopic, "partition", r.Config().Partition, "err", err)
			continue
		}
		// Requests hold their share of MaxInflightBytes from here until processed: records
		// queued for a lane count, so a backlog of large requests waits in the broker, not in
		// memory. Stopping while waiting leaves the record for the next owner.
		weight := min(int64(len(msg.Value)), a.inflightMax)
		if err := a.inflight.Acquire(stop, weight); err != nil {
			return
		}
		a.metrics.InFlight.Inc()
		a.metrics.InFlightBytes.Add(float64(weight))
		it := tr.add(msg.Offset)
		if !lanes.submit(stop, laneKey(&msg), job{msg: msg, item: it, received: time.Now(), weight: weight}) {
			a.metrics.InFlight.Dec()
			a.metrics.InFlightBytes.Sub(float64(weight))
			a.inflight.Release(weight)
			tr.abandon(it)
			return
		}
	}
}

// commitLoop commits the partition's finished prefix as it grows.
func (a *Agent) commitLoop(ctx context.Context, gen *kafka.Generation, topic string, partition int, tr *tracker) {
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tr.changed:
		}
		next, ok := tr.committable()
		if !ok {
			continue
		}
		if err := gen.CommitOffsets(map[string]map[int]int64{topic: {partition: next}}); err != nil {
			// Try again shortly even if no other request of the partition finishes: an
			// idle partition must not stay behind its last finished request.
			a.log.Warn("commit request offset", "topic", topic, "partition", partition, "offset", next, "err", err)
			reason, _ := kafkaio.Classify(err)
			a.metrics.Retries.WithLabelValues(string(reason)).Inc()
			tr.uncommit()
			failures++
			time.AfterFunc(commitRetryDelay(failures), tr.signal)
			continue
		}
		failures = 0
	}
}

// commitRetryDelay is the wait before committing again after failures failed commits.
func commitRetryDelay(failures int) time.Duration {
	return kafkaio.Backoff{Base: 200 * time.Millisecond, Max: 5 * time.Second}.Delay(failures)
}

// commitFinal commits a partition's last finished prefix when the agent stops owning it,
// retrying transient errors for a few seconds at most.
func commitFinal(gen *kafka.Generation, topic string, partition int, next int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return kafkaio.Retry(ctx, kafkaio.Backoff{Base: 100 * time.Millisecond, Max: time.Second, Attempts: 5}, nil,
		func(context.Context) error {
			return gen.CommitOffsets(map[string]map[int]int64{topic: {partition: next}})
		})
}

// laneKey picks the lane of a record: its key (the connector name), else its partition.
func laneKey(m *kafka.Message) uint32 {
	h := fnv.New32a()
	if len(m.Key) > 0 {
		_, _ = h.Write(m.Key)
	} else {
		_, _ = h.Write([]byte{byte(m.Partition), byte(m.Partition >> 8)})
	}
	return h.Sum32()
}

// job is one fetched request on its way through a lane.
type job struct {
	msg      kafka.Message
	item     *item
	received time.Time
	// weight is the job's share of MaxInflightBytes, released when it is processed.
	weight int64
}

// lanes are Concurrency serial workers.
type lanes struct {
	chans []chan job
	wg    sync.WaitGroup
}

func newLanes(n int, process func(context.Context, job), work context.Context) *lanes {
	l := &lanes{chans: make([]chan job, n)}
	for i := range l.chans {
		ch := make(chan job, 16)
		l.chans[i] = ch
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for j := range ch {
				process(work, j)
			}
		}()
	}
	return l
}

// submit queues j on its lane; false when ctx ended first.
func (l *lanes) submit(ctx context.Context, key uint32, j job) bool {
	select {
	case l.chans[key%uint32(len(l.chans))] <- j:
		return true
	case <-ctx.Done():
		return false
	}
}

func (l *lanes) close() {
	for _, ch := range l.chans {
		close(ch)
	}
	l.wg.Wait()
}
