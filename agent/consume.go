package agent

import (
	"context"
	"sync"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/segmentio/kafka-go"
)

// consume is the consumer-group loop. Each generation's assignment gets one fetcher per
// partition; records go to the lanes by record key (lanes.go), so requests for one connector
// (keyed by its name) run in order while different connectors run in parallel, Concurrency at
// a time. A generation ends on a rebalance or shutdown: the fetchers stop, requests already
// started finish (bounded by the shutdown timeout), the partitions' offsets are committed, and
// only then does the group move on, so the next owner of a partition starts after the last
// request this replica finished and nothing runs twice.
func (a *Agent) consume(ctx, work context.Context) error {
	cg, heartbeat, err := a.newConsumerGroup()
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
			a.health.leftGeneration()
			continue
		}
		a.startGeneration(ctx, gen, lanes, heartbeat)
	}
}

// newConsumerGroup joins the agent's consumer group on the request topic; heartbeat is its
// heartbeat interval.
func (a *Agent) newConsumerGroup() (_ *kafka.ConsumerGroup, heartbeat time.Duration, _ error) {
	session := a.cfg.sessionTimeout()
	heartbeat = min(time.Second, session/3)
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:      a.cfg.GroupID,
		Brokers: a.cfg.Brokers,
		Dialer:  a.conns.Dialer,
		Topics:  []string{a.cfg.RequestTopic},
		// The agent's Connect cluster, topics and sources, for migrate's precheck and the
		// other members (advertise.go).
		GroupBalancers: groupBalancers(a.cfg, a.clusterID),
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
	return cg, heartbeat, err
}

// startGeneration starts the work of a generation: its heartbeat probe and one fetcher per
// partition assigned.
func (a *Agent) startGeneration(ctx context.Context, gen *kafka.Generation, lanes *lanes, heartbeat time.Duration) {
	// Before anything of the generation is fetched: a group that mixes two Connect
	// clusters has its requests refused (advertise.go).
	a.checkGroup(ctx)
	a.joined.Store(true)
	a.ready.Store(true)
	assigned := gen.Assignments[a.cfg.RequestTopic]
	ids := make([]int, len(assigned))
	for i, pa := range assigned {
		ids[i] = pa.ID
	}
	a.health.joinedGeneration(ids)
	// The group's own heartbeats are not observable: a probe of ours tells /readyz whether
	// the coordinator still knows this member.
	gen.Start(func(gctx context.Context) {
		a.heartbeatProbe(gctx, gen, heartbeat)
		a.health.leftGeneration()
	})
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
			a.consumePartition(ctx, gctx, gen, lanes, pa, len(assigned))
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

// consumePartition fetches one partition for one generation and commits its finished
// prefix. It returns when the generation or the agent ends, after draining.
func (a *Agent) consumePartition(ctx, gctx context.Context, gen *kafka.Generation, lanes *lanes, pa kafka.PartitionAssignment, assigned int) {
	topic := a.cfg.RequestTopic
	tr := newTracker()
	stop, cancel := context.WithCancel(gctx)
	defer cancel()
	context.AfterFunc(ctx, cancel)

	// The fetcher has connections of its own, as a consumer's partition reader does.
	transport := a.conns.Separate()
	defer transport.CloseIdleConnections()
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: a.cfg.Brokers, Transport: transport, Principal: a.principal})
	// Its Fetch requests are written and read by its own goroutine (kafkaio.FetchConns): not
	// handed to the transport's connection goroutine and back before every request.
	fconns := kafkaio.NewFetchConns(cl)
	defer fconns.Close()

	var wg sync.WaitGroup
	wg.Go(func() { a.commitLoop(stop, gen, topic, pa.ID, tr) })
	a.fetchRequests(stop, cl, fconns, pa.ID, pa.Offset, assigned, tr, lanes)

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

// fetchMaxWait is how long a fetch of a request partition waits for a first record. It is
// short next to the session timeout, so that /readyz sees failing fetches in time, and a
// rebalance or shutdown waits for a poll that long at most.
const fetchMaxWait = 500 * time.Millisecond

// minFetchBytes is the least free budget a fetch waits for (see budget).
const minFetchBytes = 1 << 20

// fetchShare is what one fetch of a partition reserves of the budget of size bytes when
// assigned partitions are fetched: an equal share, so that every assigned partition can
// long-poll at once, and no more than the weight of the largest request allowed. A larger
// record still comes whole (see budget), and a record beyond its reservation does not wait for
// the other partitions' polls to end (budget.tryAcquire).
func fetchShare(size, maxRequest int64, assigned int) int64 {
	return min(requestMemoryFactor*(maxRequest+1<<20), max(minFetchBytes, size/int64(max(assigned, 1))))
}

// fetchRequests fetches the partition's records from offset and hands them to the lanes
// until stop ends. Every fetch first takes its share of MaxInflightBytes (budget): records
// fetched and waiting for a lane count, and fetching pauses while the budget is used up.
// Fetch errors are retried with backoff and reported to /readyz.
func (a *Agent) fetchRequests(stop context.Context, cl *kafka.Client, fconns *kafkaio.FetchConns, partition int, offset int64, assigned int, tr *tracker, lanes *lanes) {
	fetchMax := fetchShare(a.inflight.size, int64(a.cfg.MaxRequestBytes), assigned)
	wait := min(fetchMaxWait, max(a.health.grace/3, 10*time.Millisecond))
	backoff := kafkaio.Backoff{Base: 50 * time.Millisecond, Max: time.Second}
	failures := 0
	// next is the least the next fetch waits for: the weight of the record at offset when
	// the last fetch had to drop it, else, while the partition has a backlog, that of the
	// largest record the last fetch got. A backlog of large requests is then fetched once
	// each, not dropped and fetched again.
	var next int64
	for {
		reserved, err := a.inflight.reserve(stop, next, fetchMax)
		if err != nil {
			return
		}
		// The reservation is in memory: the broker is asked for the record bytes that weigh it,
		// and compressed batches are inflated no further than that (beyond the first batch,
		// which comes whatever its size).
		recordBytes := max(reserved/requestMemoryFactor, 1)
		f, err := kafkaio.FetchPartitionBounded(stop, cl, a.cfg.RequestTopic, partition, offset, recordBytes, wait,
			kafkaio.FetchBounds{BatchMax: requestInflateMax(a.cfg.MaxRequestBytes), TotalMax: recordBytes, Conns: fconns})
		if stop.Err() != nil {
			a.inflight.settle(reserved, nil)
			return
		}
		a.health.fetched(partition, err)
		if err != nil {
			a.inflight.settle(reserved, nil)
			failures++
			a.log.Warn("fetch requests", "topic", a.cfg.RequestTopic, "partition", partition, "offset", offset, "err", err)
			if !kafkaio.Sleep(stop, backoff.Delay(failures)) {
				return
			}
			continue
		}
		failures = 0
		offset, next = f.Next, 0
		if f.Next < f.LastStable {
			// A backlog: its next records are likely as large. (A partition that is caught
			// up long-polls with no more than its share, not the whole budget.)
			for k := range f.Messages {
				next = max(next, recordWeight(&f.Messages[k]))
			}
		}
		kept, ok := a.handOver(stop, f.Messages, reserved, tr, lanes)
		if !ok {
			return
		}
		if kept < len(f.Messages) {
			offset, next = f.Messages[kept].Offset, recordWeight(&f.Messages[kept])
		}
	}
}

// handOver queues a fetch's records on their lanes, each holding its weight of the budget:
// from the fetch's reservation while it lasts, then what is free right now. It returns how
// many records it kept; the rest did not fit the budget and are dropped, to be fetched again
// (the caller's next fetch starts at the first of them). ok is false when stop ended first;
// the records not handed over are left for the next owner of the partition.
func (a *Agent) handOver(stop context.Context, msgs []kafka.Message, reserved int64, tr *tracker, lanes *lanes) (kept int, ok bool) {
	weights := make([]int64, len(msgs))
	for i := range msgs {
		weights[i] = recordWeight(&msgs[i])
	}
	kept = a.inflight.settle(reserved, weights)
	for ; kept < len(msgs) && a.inflight.tryAcquire(weights[kept]); kept++ {
	}
	for k := range kept {
		w := min(recordWeight(&msgs[k]), a.inflight.size)
		a.metrics.InFlight.Inc()
		it := tr.add(msgs[k].Offset)
		if !lanes.submit(stop, laneKeyOf(&msgs[k]), job{msg: msgs[k], item: it, received: time.Now(), weight: w}) {
			a.metrics.InFlight.Dec()
			tr.abandon(it)
			for ; k < kept; k++ {
				a.inflight.release(min(recordWeight(&msgs[k]), a.inflight.size))
			}
			return k, false
		}
		// The lane's job holds the record now; msgs must not keep its bytes alive after it.
		msgs[k] = kafka.Message{}
	}
	return kept, true
}

// recordWeight is a request record's share of MaxInflightBytes: the memory its request holds
// while it is processed, requestMemoryFactor times the record's size.
func recordWeight(m *kafka.Message) int64 {
	n := len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return requestMemoryFactor * int64(n)
}

// commitInterval is the least time between two commits of one partition's finished prefix.
// A commit only bounds what the next owner of the partition fetches again (whose results it
// finds out and skips as duplicates), and the final commit of a generation is made when the
// partition is given up: one commit per request was a round trip per request, which the
// requests finished meanwhile now share.
const commitInterval = 250 * time.Millisecond

// commitLoop commits the partition's finished prefix as it grows, at most once per
// commitInterval.
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
		if !kafkaio.Sleep(ctx, commitInterval) {
			return // the generation's end commits the rest (consumePartition)
		}
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

// job is one fetched request on its way through a lane.
type job struct {
	msg      kafka.Message
	item     *item
	received time.Time
	// weight is the job's share of MaxInflightBytes, released when it is processed.
	weight int64
}

// requestInflateMax bounds what a compressed batch of the request topic may inflate to: twice
// the largest request, room for a batch of several requests. Anyone may publish requests, and a
// few KiB of compressed bytes can inflate to GiBs: the records of a batch beyond it get a
// failed result each instead (kafkaio.TooLarge).
func requestInflateMax(maxRequestBytes int) int64 { return 2 * int64(maxRequestBytes) }
