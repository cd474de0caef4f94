package integration

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/offsetstore"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// partitionOf is the partition Connect's default partitioner picks in a 25-partition topic.
func partitionOf(key string) int { return offsetstore.PartitionFor([]byte(key), 25) }

// offsetSet renders GET-offsets entries as sorted JSON strings, for order-free comparison.
func offsetSet(t *testing.T, o *events.ConnectorOffsets) []string {
	t.Helper()
	require.NotNil(t, o)
	var out []string
	for _, e := range o.Offsets {
		out = append(out, mustJSON(t, e))
	}
	sort.Strings(out)
	return out
}

// commitGroup commits offsets for an empty group, as a stopped sink connector's group has.
func commitGroup(t *testing.T, cl *client, group string, offsets map[int]int64, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cs []kafka.OffsetCommit
	for p, o := range offsets {
		cs = append(cs, kafka.OffsetCommit{Partition: p, Offset: o})
	}
	resp, err := cl.kc.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1, Topics: map[string][]kafka.OffsetCommit{topic: cs}})
	require.NoError(t, err)
	for _, ps := range resp.Topics {
		for _, p := range ps {
			require.NoError(t, p.Error)
		}
	}
}

// metric returns the value of a counter or gauge series (labels as name, value pairs).
func (r *runningAgent) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	m := r.find(t, name, labels...)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("metric %s is neither counter nor gauge", name)
	return 0
}

// failures sums offsetagent_stage_failures_total of one stage over its error codes.
func (r *runningAgent) failures(t *testing.T, stage string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "offsetagent_stage_failures_total" {
			continue
		}
		for _, m := range mf.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "stage" && lp.GetValue() == stage {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// waitMetric waits a little for a counter or gauge series to reach want, then asserts it: the
// agent counts a request once its result is acknowledged, so a test that has just read the
// result may look a moment too early.
func (r *runningAgent) waitMetric(t *testing.T, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.metric(t, name, labels...) != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, want, r.metric(t, name, labels...), "metric %s%v", name, labels)
}

// histogramCount sums the sample counts of every series of a histogram.
func (r *runningAgent) histogramCount(t *testing.T, name string) int {
	t.Helper()
	mfs, err := r.reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			n += int(m.GetHistogram().GetSampleCount())
		}
	}
	return n
}

func (r *runningAgent) find(t *testing.T, name string, labels ...string) *dto.Metric {
	t.Helper()
	mfs, err := r.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.Metric {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.Label {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			return m
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return nil
}

// blockOnce returns agent options whose fault hook holds the first request that reaches point
// until release is called.
func blockOnce(point string) (opts agent.Options, release func()) {
	ch := make(chan struct{})
	var once sync.Once
	opts.Fault = func(p, _ string) {
		if p == point {
			once.Do(func() { <-ch })
		}
	}
	var closeOnce sync.Once
	return opts, func() { closeOnce.Do(func() { close(ch) }) }
}

// gauge reads a gauge without labels, or -1 when it cannot (it also runs on the agent's
// goroutines, where a test must not fail).
func (r *runningAgent) gauge(name string) float64 {
	mfs, err := r.reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 {
			return mf.Metric[0].GetGauge().GetValue()
		}
	}
	return -1
}
