package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// endOffsets returns the current end offset of every partition of topic.
func endOffsets(ctx context.Context, cl *kafka.Client, topic string) (map[int]int64, error) {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("read metadata of topic %q: %w", topic, err)
	}
	if len(md.Topics) == 0 || md.Topics[0].Error != nil {
		return nil, fmt.Errorf("topic %q not found", topic)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.LastOffsetOf(p.ID))
	}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("list offsets of topic %q: %w", topic, err)
	}
	out := map[int]int64{}
	for _, p := range lo.Topics[topic] {
		out[p.Partition] = p.LastOffset
	}
	return out, nil
}

// waitResult reads topic from the given offsets until it finds the result of requestID.
func waitResult(ctx context.Context, cfg agent.Config, conns *agent.Connections, from map[int]int64, requestID string) (*kafka.Message, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make(chan kafka.Message, 1)
	var wg sync.WaitGroup
	for p, off := range from {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Topic: cfg.ResultTopic, Partition: p,
				Dialer: conns.Dialer, MaxWait: 100 * time.Millisecond})
			defer r.Close()
			if err := r.SetOffset(off); err != nil {
				return
			}
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return
				}
				if id, _ := events.Header(&m, events.HeaderRequestID); id == requestID {
					select {
					case found <- m:
					default:
					}
					cancel()
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(found) }()
	m, ok := <-found
	if !ok {
		if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("no result for request %s: %w", requestID, err)
		}
		return nil, fmt.Errorf("no result for request %s", requestID)
	}
	return &m, nil
}

// printableResult is a result event as the CLI prints it.
type printableResult struct {
	Type    string         `json:"type"`
	Subject string         `json:"subject"`
	Data    *events.Result `json:"data"`
}

func toPrintable(m *kafka.Message) (printableResult, error) {
	typ, res, err := events.DecodeResult(m)
	if err != nil {
		return printableResult{}, err
	}
	return printableResult{Type: typ, Subject: res.Name, Data: res}, nil
}
