package agent

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"
)

// lagInterval is how often the request topic's consumer lag is measured.
const lagInterval = 5 * time.Second

// lagLoop keeps offsetagent_request_lag at the group's lag on the request topic: the end
// offsets minus the committed offsets, summed over partitions. Every replica reports the
// group's lag; dashboards take the max.
func (a *Agent) lagLoop(ctx context.Context) {
	t := time.NewTicker(lagInterval)
	defer t.Stop()
	for {
		if lag, err := a.requestLag(ctx); err == nil {
			a.metrics.RequestLag.Set(float64(lag))
		} else if ctx.Err() == nil {
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
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	lo, err := a.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, err
	}
	of, err := a.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: a.cfg.GroupID, Topics: map[string][]int{topic: nil}})
	if err != nil {
		return 0, err
	}
	committed := map[int]int64{}
	for _, p := range of.Topics[topic] {
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
