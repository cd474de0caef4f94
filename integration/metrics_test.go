package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/events"
)

// stageCounts returns the sample count of offsetagent_stage_duration_seconds by stage.
func (r *runningAgent) stageCounts(t *testing.T) map[string]int {
	t.Helper()
	mfs, err := r.reg.Gather()
	require.NoError(t, err)
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "offsetagent_stage_duration_seconds" {
			continue
		}
		for _, m := range mf.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "stage" {
					out[lp.GetValue()] = int(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return out
}

// After a known sequence of requests every counter, the gauges and the histogram counts have
// exact values: one success, three failures (at decode_request, validate_offsets and
// validate_config), one dry run and one redelivery. decode_request is timed for every record,
// successful decodes included; the lag is 0 once everything is committed.
func TestMetricsExactValues(t *testing.T) {
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	a := startAgent(t, cfg, agent.Options{})

	body := readFile(t, "testdata/file-src-1.json")
	first := cl.publish(body, events.RequestOptions{})
	cl.publish(`{"name":"m2","config":{"connector.class":"FileStreamSource","file":"f"},
	  "initial_offsets":[{"partition":{"filename":"f"},"offset":{"position":-1}}]}`, events.RequestOptions{})
	cl.publishRaw(kafka.Message{Key: []byte("garbage"), Value: []byte{0xff}})
	cl.publish(`{"name":"m3","config":{"connector.class":"FileStreamSource","file":"f"},
	  "initial_offsets":[{"partition":{"filename":"f"},"offset":{"position":5}},{"partition":{"filename":"g"},"offset":{"position":6}}]}`,
		events.RequestOptions{DryRun: true})
	cl.publish(body, events.RequestOptions{ID: first}) // a redelivery: not run again
	last := cl.publish(body, events.RequestOptions{})  // 409
	require.Equal(t, 409, cl.waitResult(last, resultWait).Data.ErrorCode)
	cl.waitResults(5, resultWait)
	require.Eventually(t, func() bool { return a.metric(t, "offsetagent_request_lag") == 0 }, 20*time.Second, 100*time.Millisecond,
		"request lag once everything is committed: %v", a.metric(t, "offsetagent_request_lag"))

	want := `
# HELP offsetagent_requests_total Requests finished, by result (succeeded, failed, planned for dry runs, duplicate for redeliveries that were not run again).
# TYPE offsetagent_requests_total counter
offsetagent_requests_total{result="duplicate"} 1
offsetagent_requests_total{result="failed"} 3
offsetagent_requests_total{result="planned"} 1
offsetagent_requests_total{result="succeeded"} 1
# HELP offsetagent_stage_failures_total Requests that failed, by the stage that failed and the result's error code (Connect's HTTP status: 400, 403, 408, 409, 500, or other).
# TYPE offsetagent_stage_failures_total counter
offsetagent_stage_failures_total{error_code="400",stage="decode_request"} 1
offsetagent_stage_failures_total{error_code="403",stage="decode_request"} 0
offsetagent_stage_failures_total{error_code="408",stage="decode_request"} 0
offsetagent_stage_failures_total{error_code="409",stage="decode_request"} 0
offsetagent_stage_failures_total{error_code="500",stage="decode_request"} 0
offsetagent_stage_failures_total{error_code="other",stage="decode_request"} 0
offsetagent_stage_failures_total{error_code="400",stage="validate_config"} 0
offsetagent_stage_failures_total{error_code="403",stage="validate_config"} 0
offsetagent_stage_failures_total{error_code="408",stage="validate_config"} 0
offsetagent_stage_failures_total{error_code="409",stage="validate_config"} 1
offsetagent_stage_failures_total{error_code="500",stage="validate_config"} 0
offsetagent_stage_failures_total{error_code="other",stage="validate_config"} 0
offsetagent_stage_failures_total{error_code="400",stage="validate_offsets"} 0
offsetagent_stage_failures_total{error_code="403",stage="validate_offsets"} 0
offsetagent_stage_failures_total{error_code="408",stage="validate_offsets"} 0
offsetagent_stage_failures_total{error_code="409",stage="validate_offsets"} 0
offsetagent_stage_failures_total{error_code="500",stage="validate_offsets"} 1
offsetagent_stage_failures_total{error_code="other",stage="validate_offsets"} 0
offsetagent_stage_failures_total{error_code="400",stage="wipe_offsets"} 0
offsetagent_stage_failures_total{error_code="403",stage="wipe_offsets"} 0
offsetagent_stage_failures_total{error_code="408",stage="wipe_offsets"} 0
offsetagent_stage_failures_total{error_code="409",stage="wipe_offsets"} 0
offsetagent_stage_failures_total{error_code="500",stage="wipe_offsets"} 0
offsetagent_stage_failures_total{error_code="other",stage="wipe_offsets"} 0
offsetagent_stage_failures_total{error_code="400",stage="write_config"} 0
offsetagent_stage_failures_total{error_code="403",stage="write_config"} 0
offsetagent_stage_failures_total{error_code="408",stage="write_config"} 0
offsetagent_stage_failures_total{error_code="409",stage="write_config"} 0
offsetagent_stage_failures_total{error_code="500",stage="write_config"} 0
offsetagent_stage_failures_total{error_code="other",stage="write_config"} 0
offsetagent_stage_failures_total{error_code="400",stage="write_offsets"} 0
offsetagent_stage_failures_total{error_code="403",stage="write_offsets"} 0
offsetagent_stage_failures_total{error_code="408",stage="write_offsets"} 0
offsetagent_stage_failures_total{error_code="409",stage="write_offsets"} 0
offsetagent_stage_failures_total{error_code="500",stage="write_offsets"} 0
offsetagent_stage_failures_total{error_code="other",stage="write_offsets"} 0
# HELP offsetagent_offsets_written_total Initial offsets written, by connector type (source records or sink group partitions).
# TYPE offsetagent_offsets_written_total counter
offsetagent_offsets_written_total{type="sink"} 0
offsetagent_offsets_written_total{type="source"} 1
# HELP offsetagent_offsets_wiped_total Existing offsets wiped before writing initial offsets, by connector type.
# TYPE offsetagent_offsets_wiped_total counter
offsetagent_offsets_wiped_total{type="sink"} 0
offsetagent_offsets_wiped_total{type="source"} 0
# HELP offsetagent_requests_in_flight Requests received and not yet finished.
# TYPE offsetagent_requests_in_flight gauge
offsetagent_requests_in_flight 0
# HELP offsetagent_results_unpublished_total Requests whose result the agent gave up publishing because shutdown cut it off: they stay uncommitted and are redelivered.
# TYPE offsetagent_results_unpublished_total counter
offsetagent_results_unpublished_total 0
# HELP offsetagent_results_pending Results the broker refuses (too large, invalid, not authorised), even as minimal results, being tried again: each keeps its request, and every later one of its partition, uncommitted until it is out.
# TYPE offsetagent_results_pending gauge
offsetagent_results_pending 0
`
	require.NoError(t, testutil.GatherAndCompare(a.reg, strings.NewReader(want),
		"offsetagent_requests_total", "offsetagent_stage_failures_total", "offsetagent_offsets_written_total",
		"offsetagent_offsets_wiped_total", "offsetagent_requests_in_flight", "offsetagent_results_unpublished_total",
		"offsetagent_results_pending"))
	require.Equal(t, 0.0, a.sumCounter(t, "offsetagent_retries_total"))
	require.Equal(t, 0.0, a.metric(t, "offsetagent_requests_in_flight_bytes"))
	require.Equal(t, map[string]int{
		"decode_request":   6, // every record, the redelivery too
		"validate_config":  4, // success, validate_offsets failure, dry run, 409
		"validate_offsets": 3, // success, its own failure, dry run
		"wipe_offsets":     1,
		"write_offsets":    1,
		"write_config":     1,
	}, a.stageCounts(t))
	require.Equal(t, 5, a.histogramCount(t, "offsetagent_request_duration_seconds"), "every request with a result")
}

// offsetagent_request_lag is, summed over the request partitions, the log end offset minus the
// group's committed offset: the requests not yet finished while one is stuck, and 0 once the
// group is idle and fully committed.
func TestRequestLagIsExact(t *testing.T) {
	t.Parallel() // waits for the lag's measurements (every 5 s): doc.go
	c := startCluster(t)
	cfg := testConfig(c)
	cfg.RequestTopicPartitions = 1
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 1)
	opts, release := blockOnce("before:validate_config")
	a := startAgent(t, cfg, opts)
	lag := func() float64 { return a.metric(t, "offsetagent_request_lag") }
	for i := range 3 {
		cl.publish(strings.Replace(readFile(t, "testdata/file-src-1.json"), "file-src-1", "lag-"+string(rune('a'+i)), 1), events.RequestOptions{})
	}
	require.Eventually(t, func() bool { return lag() == 3 }, 20*time.Second, 100*time.Millisecond, "lag with the first request stuck: %v", lag())
	release()
	cl.waitResults(3, resultWait)
	require.Eventually(t, func() bool { return lag() == 0 }, 20*time.Second, 100*time.Millisecond, "lag once idle: %v", lag())
}
