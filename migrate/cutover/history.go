package cutover

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A's records past the offset placed mean one of two things, and only A's offsets topic tells
// which. Either A never committed past it: its worker died (or its task failed) after producing
// them and before its next commit, the offset placed is the only one it has, and B produces
// them again as A would have after a restart (a replay). Or A had committed past it and its
// offset was set back since (by hand, or a tool that rewrote it): B produces again what A had
// committed, a wrong placement (a mismatch). So the migration reads, for each moved source
// whose records can judge it, every commit A's offsets topic still holds for its partitions,
// and keeps in the cutover report the furthest one when it is past the offset read
// (Partition.FurthestOnA). A compacted topic keeps only the last commit of a key once
// its segment is cleaned: the history is what the topic still holds.

// ReadHistoryOnA sets HistoryOnA of each moved source of c whose family's records can judge
// it, and the FurthestOnA of its partitions, from A's offsets topics (src; nil when A was read
// through its REST API only).
func (c *Cutover) ReadHistoryOnA(ctx context.Context, src *source.TopicsSource, rep *apply.Report, reg *connectors.Registry) {
	entries := map[string]*apply.Entry{}
	for _, e := range rep.Connectors {
		if e.Connector != nil && e.Outcome == apply.OutcomeSucceeded {
			entries[e.TargetName] = e
		}
	}
	var cl *kafka.Client
	if src != nil {
		cl = kafkaio.NewClient(kafkaio.Options{Brokers: src.Brokers, Transport: src.Transport, Principal: src.Principal})
	}
	for _, cc := range c.Connectors {
		e := entries[cc.TargetName]
		if _, ok := recordFamilyOf(reg, cc.Class); !ok || e == nil || cc.Type == string(connectors.Sink) || len(cc.Partitions) == 0 {
			continue
		}
		if src == nil {
			cc.HistoryOnA = fleet.Textf("not read: A was read through its REST API only (%s without %s)", fleet.FromConnectURL, fleet.FromBrokers)
			continue
		}
		topic := src.OffsetsTopic
		if t, ok := e.Connector.Config.Get("offsets.storage.topic"); ok && t != "" {
			topic = t
		}
		if err := cc.readHistory(ctx, cl, topic, e.Connector, e.Rekey(), orderOf(reg, cc.Class), partitionOrder(reg, cc.Class)); err != nil {
			cc.HistoryOnA = fleet.Textf("not read: %v", err)
			continue
		}
		cc.HistoryOnA = fleet.Plain(historyRead)
	}
}

// historyRead is HistoryOnA once A's offsets topic was read.
const historyRead = "read"

// partitionOrder is the order of a class's partition members in the key Connect writes.
func partitionOrder(reg *connectors.Registry, class string) func(jsonvalue.Map) jsonvalue.Map {
	if c, ok := reg.Lookup(class); ok && c.PartitionOrder != nil {
		return c.PartitionOrder
	}
	return offsetstore.JavaHashMapOrder
}

// readHistory reads in topic on A the commits of conn's partitions (A's name and partitions:
// those placed on B may be renamed, and re-keyed by rk) and sets the FurthestOnA of cc's
// partitions.
func (cc *Connector) readHistory(ctx context.Context, cl *kafka.Client, topic string, conn *fleet.Connector, rk *fleet.Rekey, order offsetOrder,
	keyOrder func(jsonvalue.Map) jsonvalue.Map) error {
	if order == nil {
		return nil
	}
	n, err := kafkaio.PartitionCount(ctx, cl, topic)
	if err != nil {
		return fmt.Errorf("read A's offsets topic %q: %w", topic, err)
	}
	// A's partition of each partition placed, by the Kafka partition that holds its key.
	byB := map[string]*Partition{}
	for _, p := range cc.Partitions {
		byB[jsonvalue.SortedText(p.Partition)] = p
		p.FurthestOnA = nil
	}
	want := map[int]map[string]*Partition{}
	for _, o := range conn.Offsets {
		p := byB[jsonvalue.SortedText(rk.Apply([]events.ConnectorOffset{o})[0].Partition)]
		if p == nil || p.OnA == nil {
			continue
		}
		part := offsetstore.PartitionFor(offsetstore.AppendKey(nil, conn.Name, keyOrder(o.Partition)), n)
		if want[part] == nil {
			want[part] = map[string]*Partition{}
		}
		want[part][jsonvalue.SortedText(o.Partition)] = p
	}
	for part, ps := range want {
		if err := scanCommits(ctx, cl, topic, part, func(key, value []byte) {
			name, pm, ok := offsetstore.DecodeKey(key)
			if !ok || name != conn.Name || value == nil {
				return
			}
			p := ps[jsonvalue.SortedText(pm)]
			if p == nil {
				return
			}
			sc := jsonvalue.NewScanner(value)
			sc.AllowLeadingZeros()
			m, err := sc.Object()
			if err != nil {
				return
			}
			past := p.OnA
			if p.FurthestOnA != nil {
				past = p.FurthestOnA
			}
			if c, ok := order(m, past); ok && c > 0 {
				p.FurthestOnA = m
			}
		}); err != nil {
			return fmt.Errorf("read A's offsets topic %q partition %d: %w", topic, part, err)
		}
	}
	return nil
}

// scanCommits gives each record of partition part of topic, read committed from its start to
// its last stable offset, to f.
func scanCommits(ctx context.Context, cl *kafka.Client, topic string, part int, f func(key, value []byte)) error {
	from := kafka.FirstOffset
	for range maxFetchesPerRead {
		got, err := kafkaio.FetchPartition(ctx, cl, topic, part, from, 1<<20, 100*time.Millisecond)
		if err != nil {
			return err
		}
		for _, m := range got.Messages {
			f(m.Key, m.Value)
		}
		if got.Next >= got.LastStable || (len(got.Messages) == 0 && got.Next == from) {
			return nil
		}
		from = got.Next
	}
	return nil
}
