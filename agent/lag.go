package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// lagInterval is how often the request topic's consumer lag is measured.
const lagInterval = 5 * time.Second

// lagLoop keeps offsetagent_request_lag at the group's lag on the request topic: per
// partition the log end offset minus the group's committed offset (the log start offset when
// nothing is committed), summed over partitions; 0 when the group is idle. Every replica reports the
// group's lag; dashboards take the max. While it cannot be measured the series is absent.
func (a *Agent) lagLoop(ctx context.Context) {
	t := time.NewTicker(lagInterval)
	defer t.Stop()
	for {
		if lag, err := a.requestLag(ctx); err == nil {
			a.metrics.RequestLag.Set(float64(lag))
		} else if ctx.Err() == nil {
			// Not measurable (a broker outage): no value rather than the last one.
			a.metrics.RequestLag.Unknown()
			a.log.Debug("measure request lag", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Agent) requestLag(ctx context.Context) (int64, error) {
	topic := a.cfg.RequestTopic
	md, err := a.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) == 0 {
		return 0, err
	}
	var reqs []kafka.OffsetRequest
	var partitions []int
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		partitions = append(partitions, p.ID)
	}
	// The end a read_committed reader can reach: the last stable offset.
	lo, err := a.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{IsolationLevel: kafka.ReadCommitted, Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, err
	}
	// The partitions are named: kafka-go sends a topic with no partitions as an empty list,
	// which the broker answers with no committed offsets at all.
	of, err := a.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: a.cfg.GroupID, Topics: map[string][]int{topic: partitions}})
	if err != nil {
		return 0, err
	}
	committed := map[int]int64{}
	for _, p := range of.Topics[topic] {
		if p.Error != nil {
			return 0, fmt.Errorf("committed offset of partition %d: %w", p.Partition, p.Error)
		}
		committed[p.Partition] = p.CommittedOffset
	}
	var lag int64
	for _, p := range lo.Topics[topic] {
		c, ok := committed[p.Partition]
		if !ok || c < 0 {
			c = p.FirstOffset
		}
		if d := p.LastOffset - c; d > 0 {
			lag += d
		}
	}
	return lag, nil
}
