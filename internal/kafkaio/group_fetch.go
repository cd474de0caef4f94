package kafkaio

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxOffsetFetchVersion is the last OffsetFetch version without tagged fields. v5 and later
// return the committed leader epoch.
const maxOffsetFetchVersion = 5

// FetchGroupOffsets returns every committed offset of group (OffsetFetch with Topics null,
// v2+), each with its committed leader epoch (nil for none, or below OffsetFetch v5) and
// metadata, in the coordinator's order; partitions without a committed offset are left out.
// An error the coordinator answered for the group is a kafka.Error; the partitions it answered
// with an error come back joined, each wrapping its kafka.Error.
func FetchGroupOffsets(ctx context.Context, cl *kafka.Client, group string) ([]GroupOffset, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group // Topics nil: every partition the group has an offset for
	kres, err := exchangeGroup(ctx, cl, group, req, maxOffsetFetchVersion)
	if err != nil {
		return nil, err
	}
	res, ok := kres.(*kmsg.OffsetFetchResponse)
	if !ok {
		return nil, fmt.Errorf("unexpected response %T", kres)
	}
	if res.ErrorCode != 0 {
		return nil, kafka.Error(res.ErrorCode)
	}
	var out []GroupOffset
	var errs []error
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				errs = append(errs, fmt.Errorf("topic %q partition %d: %w", t.Topic, p.Partition, kafka.Error(p.ErrorCode)))
				continue
			}
			if p.Offset < 0 {
				continue // no offset committed
			}
			o := GroupOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset}
			if res.Version >= 5 && p.LeaderEpoch >= 0 {
				epoch := p.LeaderEpoch
				o.LeaderEpoch = &epoch
			}
			if p.Metadata != nil {
				o.Metadata = *p.Metadata
			}
			out = append(out, o)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
