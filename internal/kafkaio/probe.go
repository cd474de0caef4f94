package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The permission probes ask a broker whether the client may Write, Read or commit to a topic
// without writing, reading or committing anything: each request names partition -1 of the
// topic, which no topic has. A broker checks the principal's ACL on the topic (and, for a
// commit, on the group) before it looks the partition up, so it answers the refusal
// (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED) when the ACL is missing and
// UNKNOWN_TOPIC_OR_PARTITION when it is there, and nothing reaches the log or the group
// coordinator. Apache Kafka's KafkaApis handles Produce, Fetch and OffsetCommit in that order
// (authorize, then drop the partitions its metadata does not know); kfake does the same. Any
// broker answers alike, so the probes go to whichever the transport picks.

// probePartition is the partition the probes name: no topic has it.
const probePartition = -1

// The last versions without tagged fields (whose responses have the v0 header), with topic
// names rather than ids.
const (
	maxProbeProduceVersion = 8
	maxProbeFetchVersion   = 11
)

// ProbeWrite reports whether cl's principal may Write topic: nil when it may, the broker's
// authorization error (wrapping a kafka.Error, e.g. kafka.TopicAuthorizationFailed) when it may not,
// another error when the broker could not be asked. A refusal is an *AuthzError naming cl's
// principal and Write on topic. Nothing is written.
func ProbeWrite(ctx context.Context, cl *kafka.Client, topic string) error {
	return ProbeWrites(ctx, cl, []string{topic})[0]
}

// ProbeWrites is ProbeWrite for each of topics, in one Produce request: errs[i] is topics[i]'s
// answer. A round trip that failed is every topic's error.
func ProbeWrites(ctx context.Context, cl *kafka.Client, topics []string) (errs []error) {
	errs = probeWrites(ctx, cl, topics)
	for i, topic := range topics {
		errs[i] = refusal(cl, errs[i], OpWrite, ResourceTopic, topic)
	}
	return errs
}

// Probes are Write probes queued on a Producer (EnqueueProbes), not yet answered.
type Probes struct {
	p      *Producer
	topics []string
	items  []*produceItem // one per distinct topic
	at     []int          // topics[i]'s item
	// direct: the producer could not route the probes; Wait asks them on their own
	// (ProbeWrites).
	direct bool
	// group is closed once every item is answered.
	group answerGroup
}

// EnqueueProbes queues a Write probe of each of topics (ProbeWrites's questions) on the
// producer, as Enqueue queues records: they go in the producer's next Produce request to the
// leader of the first topic's partition 0, beside whatever else is queued for it (a broker
// answers each partition of a Produce request on its own, and a probe names partition -1,
// which it refuses for the ACL or does not find, writing nothing). Under load a request's
// probes thus cost no request of their own. When the first topic's leader is not known (the
// metadata refused it, or it is missing), nothing is queued and Wait asks the probes on their
// own, as ProbeWrites asks them.
func (p *Producer) EnqueueProbes(ctx context.Context, topics []string) *Probes {
	pr := &Probes{p: p, topics: topics, at: make([]int, len(topics)), items: make([]*produceItem, 0, len(topics))}
	var slab []produceItem // the items, one allocation (no more than topics: it never moves)
	leader := -1
	for i, topic := range topics {
		k := slices.IndexFunc(pr.items, func(it *produceItem) bool { return it.topic == topic })
		if k < 0 {
			if leader < 0 {
				ls, err := p.leaders.get(ctx, topic)
				if err != nil || len(ls) == 0 {
					pr.direct = true
					return pr
				}
				leader = ls[0]
			}
			k = len(pr.items)
			if slab == nil {
				slab = make([]produceItem, 0, len(topics))
			}
			slab = append(slab, produceItem{topic: topic, partition: probePartition, leader: leader, probe: true, size: len(topic) + 16})
			it := &slab[len(slab)-1]
			pr.group.join(it)
			pr.items = append(pr.items, it)
		}
		pr.at[i] = k
	}
	p.enqueue(pr.items, false, nil)
	return pr
}

// Wait waits for the answers, as ProbeWrites returns them: errs[i] is topics[i]'s, nil when
// the Write is allowed, an *AuthzError when it is refused, another error when the broker could
// not be asked (ctx's when it ended first).
func (pr *Probes) Wait(ctx context.Context) []error {
	if pr.direct {
		return ProbeWrites(ctx, pr.p.client, pr.topics)
	}
	if len(pr.items) > 0 {
		select {
		case <-pr.group.done:
		case <-ctx.Done():
		}
	}
	errs := make([]error, len(pr.topics))
	for i, topic := range pr.topics {
		it := pr.items[pr.at[i]]
		if !it.answered.Load() {
			errs[i] = fmt.Errorf("probe Write on topic %q: %w", topic, ctx.Err())
		} else if it.err != nil {
			errs[i] = fmt.Errorf("probe Write on topic %q: %w", topic, it.err)
		}
		errs[i] = refusal(pr.p.client, errs[i], OpWrite, ResourceTopic, topic)
	}
	return errs
}

// ProbeWrites is ProbeWrites asked through the producer (EnqueueProbes).
func (p *Producer) ProbeWrites(ctx context.Context, topics []string) []error {
	return p.EnqueueProbes(ctx, topics).Wait(ctx)
}

func probeWrites(ctx context.Context, cl *kafka.Client, topics []string) []error {
	errs := make([]error, len(topics))
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	at := map[string]int{} // a topic named twice is asked once
	for _, topic := range topics {
		if _, ok := at[topic]; ok {
			continue
		}
		at[topic] = len(req.Topics)
		t := kmsg.NewProduceRequestTopic()
		t.Topic = topic
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition = probePartition
		p.Records = []byte{} // empty, not null: a broker iterates the batches before the partitions
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
	}
	if len(req.Topics) == 0 {
		return errs
	}
	res, err := exchangeAny(ctx, cl, req, maxProbeProduceVersion)
	answers := map[string]error{}
	if err == nil {
		for _, rt := range res.(*kmsg.ProduceResponse).Topics {
			for _, rp := range rt.Partitions {
				if perr := probeAnswer(rp.ErrorCode); perr != nil && answers[rt.Topic] == nil {
					answers[rt.Topic] = perr
				}
			}
		}
	}
	for i, topic := range topics {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("probe Write on topic %q: %w", topic, err)
		case answers[topic] != nil:
			errs[i] = fmt.Errorf("probe Write on topic %q: %w", topic, answers[topic])
		}
	}
	return errs
}

// ProbeRead reports whether cl's principal may Read topic, as ProbeWrite does for Write.
// Nothing is fetched.
func ProbeRead(ctx context.Context, cl *kafka.Client, topic string) error {
	return refusal(cl, probeRead(ctx, cl, topic), OpRead, ResourceTopic, topic)
}

func probeRead(ctx context.Context, cl *kafka.Client, topic string) error {
	req := kmsg.NewPtrFetchRequest() // replica -1, session 0, epoch -1: a sessionless fetch
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = 1
	req.IsolationLevel = 1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = probePartition
	p.PartitionMaxBytes = 1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	res, err := exchangeAny(ctx, cl, req, maxProbeFetchVersion)
	if err != nil {
		return fmt.Errorf("probe Read on topic %q: %w", topic, err)
	}
	fr := res.(*kmsg.FetchResponse)
	if err := probeAnswer(fr.ErrorCode); err != nil {
		return fmt.Errorf("probe Read on topic %q: %w", topic, err)
	}
	for _, rt := range fr.Topics {
		for _, rp := range rt.Partitions {
			if err := probeAnswer(rp.ErrorCode); err != nil {
				return fmt.Errorf("probe Read on topic %q: %w", topic, err)
			}
		}
	}
	return nil
}

// ProbeGroupCommit reports whether cl's principal may commit offsets of topics for group:
// Read on the group and Read on each topic, what an OffsetCommit (and OffsetFetch, a group's
// deletion of its offsets) needs. The refusals come back joined, each a *GroupCommitError
// naming its topic and wrapping kafka.GroupAuthorizationFailed or
// kafka.TopicAuthorizationFailed, worded as one *AuthzError: Read on the group when the group
// was refused, else Read on the first refused topic. Nothing is committed, and the group's entries are untouched
// (Apache Kafka answers before its group coordinator sees the request; kfake creates an
// unknown group empty, as a commit would).
//
// A group with members answers an admin commit UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION once
// its ACL passed: that counts as allowed for the group, and the topics are then unchecked on
// brokers that look at members first (kfake; Apache Kafka checks the topics first).
func ProbeGroupCommit(ctx context.Context, cl *kafka.Client, group string, topics []string) error {
	return groupCommitRefusal(cl, probeGroupCommit(ctx, cl, group, topics), group)
}

func probeGroupCommit(ctx context.Context, cl *kafka.Client, group string, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	for _, topic := range topics {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = topic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition = probePartition
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
	}
	res, err := exchangeGroup(ctx, cl, group, req, maxOffsetCommitVersion)
	if err != nil {
		return fmt.Errorf("probe commit of group %q: %w", group, err)
	}
	var errs []error
	for _, t := range res.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			switch code := kafka.Error(p.ErrorCode); code {
			case kafka.UnknownMemberId, kafka.IllegalGeneration, kafka.RebalanceInProgress:
			default:
				if err := probeAnswer(p.ErrorCode); err != nil {
					errs = append(errs, &GroupCommitError{Topic: t.Topic, Partition: p.Partition, Err: err})
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("probe commit of group %q: %w", group, err)
	}
	return nil
}

// probeAnswer reads a probe's error code: none or UNKNOWN_TOPIC_OR_PARTITION (the partition
// that does not exist, looked up once the ACL passed) mean allowed; anything else is the
// answer.
func probeAnswer(code int16) error {
	switch kafka.Error(code) {
	case 0, kafka.UnknownTopicOrPartition:
		return nil
	}
	return kafka.Error(code)
}

// ProbeGroupDelete reports whether cl's principal may Delete group (what deleting the group
// and its offsets needs), by an OffsetDelete of partition -1 of topic: nil when it may,
// kafka.GroupAuthorizationFailed (or the topic's refusal) when it may not. A group that does
// not exist, or one with members, answers after its ACL passed: allowed. A refusal is an
// *AuthzError naming Delete on the group. Nothing is deleted.
func ProbeGroupDelete(ctx context.Context, cl *kafka.Client, group, topic string) error {
	return refusal(cl, probeGroupDelete(ctx, cl, group, topic), OpDelete, ResourceGroup, group)
}

func probeGroupDelete(ctx context.Context, cl *kafka.Client, group, topic string) error {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	t := kmsg.NewOffsetDeleteRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetDeleteRequestTopicPartition()
	p.Partition = probePartition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	res, err := exchangeGroup(ctx, cl, group, req, 0) // v0 is the only version without tagged fields
	if err != nil {
		return fmt.Errorf("probe Delete on group %q: %w", group, err)
	}
	dr := res.(*kmsg.OffsetDeleteResponse)
	switch code := kafka.Error(dr.ErrorCode); code {
	case 0, kafka.GroupIdNotFound, kafka.NonEmptyGroup:
	default:
		return fmt.Errorf("probe Delete on group %q: %w", group, code)
	}
	for _, rt := range dr.Topics {
		for _, rp := range rt.Partitions {
			switch code := kafka.Error(rp.ErrorCode); code {
			case kafka.GroupSubscribedToTopic:
			default:
				if err := probeAnswer(rp.ErrorCode); err != nil {
					return fmt.Errorf("probe Delete on group %q: %w", group, err)
				}
			}
		}
	}
	return nil
}
