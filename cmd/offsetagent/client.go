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
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// endOffsets returns the current end offset of every partition of topic: its last stable
// offset, where a reader of committed records stops.
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
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{IsolationLevel: kafka.ReadCommitted,
		Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("list offsets of topic %q: %w", topic, err)
	}
	out := map[int]int64{}
	for _, p := range lo.Topics[topic] {
		out[p.Partition] = p.LastOffset
	}
	return out, nil
}

// waitResult reads topic from the given offsets until it finds the result of requestID. It
// reads committed records only (kafkaio.FetchPartition), as every reader of the product.
func waitResult(ctx context.Context, cfg agent.Config, conns *clientconfig.Connections, from map[int]int64, requestID string) (*kafka.Message, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make(chan kafka.Message, 1)
	principal := cfg.Security.Principal()
	var wg sync.WaitGroup
	for p, off := range from {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A transport of its own: the long polls of one partition do not queue the others'.
			tr := conns.Separate()
			defer tr.CloseIdleConnections()
			cl := kafkaio.NewClient(kafkaio.Options{Brokers: cfg.Brokers, Transport: tr, Principal: principal})
			cl.Timeout = 10 * time.Second
			backoff := kafkaio.Backoff{Base: 50 * time.Millisecond, Max: time.Second}
			for failures := 0; ctx.Err() == nil; {
				f, err := kafkaio.FetchPartition(ctx, cl, cfg.ResultTopic, p, off, 1<<20, 100*time.Millisecond)
				if err != nil {
					failures++
					kafkaio.Sleep(ctx, backoff.Delay(failures))
					continue
				}
				failures, off = 0, f.Next
				for i := range f.Messages {
					if id, _ := events.Header(&f.Messages[i], events.HeaderRequestID); id == requestID {
						select {
						case found <- f.Messages[i]:
						default:
						}
						cancel()
						return
					}
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
