package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// resultLine is one result as `offsetagent results` prints it: what an on-call engineer
// needs to tell whose mistake a failure was, one JSON object a line.
type resultLine struct {
	Time       time.Time `json:"time"`
	Partition  int       `json:"partition"`
	Offset     int64     `json:"offset"`
	Type       string    `json:"type"`
	RequestID  string    `json:"request_id"`
	Source     string    `json:"source"`
	Connector  string    `json:"connector"`
	FailedStep string    `json:"failed_step,omitempty"`
	ErrorCode  int       `json:"error_code,omitempty"`
	Message    string    `json:"message,omitempty"`
	Cleanup    string    `json:"cleanup,omitempty"`
	Left       string    `json:"cleanup_left,omitempty"`
}

const resultsUsage = "usage: offsetagent results [--failed] [-n N] [--scan N]"

// cmdResults prints the latest results of the result topic, oldest first: with --failed only
// failed ones, with their step, error code and message.
func cmdResults(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("results", flag.ContinueOnError)
	fs.SetOutput(stderr)
	failed := fs.Bool("failed", false, "print failed results only")
	n := fs.Int("n", 20, "how many results to print (the latest)")
	scan := fs.Int64("scan", 10000, "how many of the latest records of each partition of the result topic to read")
	fs.Usage = func() { fmt.Fprintln(stderr, resultsUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *n < 1 || *scan < 1 {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, conns, err := clientConfig(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	lines, err := latestResults(ctx, cfg, conns, *failed, *n, *scan)
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	for _, l := range lines {
		_ = enc.Encode(l)
	}
	return 0
}

// latestResults reads up to scan records at the end of each partition of the result topic
// and returns the latest n results (failed ones only with onlyFailed), oldest first.
func latestResults(ctx context.Context, cfg agent.Config, conns *clientconfig.Connections, onlyFailed bool, n int, scan int64) ([]resultLine, error) {
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: cfg.Brokers, Transport: conns.Transport, Principal: cfg.Security.Principal()})
	cl.Timeout = 10 * time.Second
	end, err := endOffsets(ctx, cl, cfg.ResultTopic)
	if err != nil {
		return nil, err
	}
	var out []resultLine
	for p, last := range end {
		from := max(last-scan, 0) // below the log start, a fetch starts at the log start
		for off := from; off < last; {
			f, err := kafkaio.FetchPartition(ctx, cl, cfg.ResultTopic, p, off, 1<<20, 100*time.Millisecond)
			if err != nil {
				return nil, fmt.Errorf("read partition %d of %s: %w", p, cfg.ResultTopic, err)
			}
			if f.Next <= off && len(f.Messages) == 0 {
				break // nothing more to read below the end (records of an open transaction)
			}
			off = f.Next
			for i := range f.Messages {
				m := &f.Messages[i]
				if m.Offset >= last {
					break
				}
				typ, res, err := events.DecodeResult(m)
				if err != nil || (onlyFailed && typ != events.TypeCreateFailed) {
					continue // not a result of this agent's, or not asked for
				}
				l := resultLine{Time: m.Time.UTC(), Partition: m.Partition, Offset: m.Offset, Type: typ,
					RequestID: res.RequestID, Source: res.RequestSource, Connector: res.Name,
					FailedStep: res.FailedStep, ErrorCode: res.ErrorCode, Message: res.Message}
				if c := res.Cleanup; c != nil {
					l.Cleanup, l.Left = c.Summary, c.Left
				}
				out = append(out, l)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b resultLine) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}
