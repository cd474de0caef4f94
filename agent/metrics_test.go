package agent

import (
	"io"

	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// The stage and reason label values are pre-created from the definitions they label: every
// step of a request and every transient reason of the classifier, and nothing else.
func TestMetricsLabelsFollowDefinitions(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, "test")

	stages := handlers.StepNames()
	require.Equal(t, "decode_request", stages[0])
	require.Equal(t, len(stages)*len(ErrorCodes), testutil.CollectAndCount(m.StageFailures))
	require.Equal(t, len(stages), testutil.CollectAndCount(m.StageDuration))
	for _, s := range stages {
		for _, c := range ErrorCodes {
			require.Zero(t, testutil.ToFloat64(m.StageFailures.WithLabelValues(s, c)), s)
		}
	}
	require.Equal(t, len(stages)*len(ErrorCodes), testutil.CollectAndCount(m.StageFailures), "no stage or code outside the steps and codes")

	reasons := kafkaio.TransientReasons()
	require.Equal(t, len(reasons), testutil.CollectAndCount(m.Retries))
	for _, err := range []error{kafka.RequestTimedOut, io.EOF, kafka.NotLeaderForPartition, kafka.NotEnoughReplicas,
		kafka.GroupCoordinatorNotAvailable, kafka.KafkaStorageError} {
		r, transient := kafkaio.Classify(err)
		require.True(t, transient, err)
		require.Contains(t, reasons, r, "a transient reason has a pre-created retries series")
	}
	for _, r := range reasons {
		require.Zero(t, testutil.ToFloat64(m.Retries.WithLabelValues(string(r))))
	}
	require.Equal(t, len(reasons), testutil.CollectAndCount(m.Retries), "no reason outside the transient ones")

	want := `
# HELP offsetagent_requests_total Requests finished, by result (succeeded, failed, planned for dry runs, duplicate for redeliveries that were not run again).
# TYPE offsetagent_requests_total counter
offsetagent_requests_total{result="duplicate"} 0
offsetagent_requests_total{result="failed"} 0
offsetagent_requests_total{result="planned"} 0
offsetagent_requests_total{result="succeeded"} 0
`
	require.NoError(t, testutil.CollectAndCompare(m.Requests, strings.NewReader(want)))
}
