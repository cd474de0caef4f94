package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/offsetagent/offsetagent/events"
)

// A result refused for anything but its size (an ACL, an invalid record) is tried again
// whole: once the refusal lifts, the whole result goes out, not the minimal one (which says
// less: no config, "truncated"). Only a refusal about size is answered with the minimal
// result at once (TestResultPublishNonRetriable).
func TestResultRefusalLiftedFullResult(t *testing.T) {
	cases := []struct {
		name  string
		err   *kerr.Error
		count int
	}{
		{name: "not authorized once", err: kerr.TopicAuthorizationFailed, count: 1},
		{name: "invalid record three times", err: kerr.InvalidRecord, count: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			r.start(t, "", nil)
			r.install(produceFault(r.cfg.ResultTopic, tc.err, tc.count))
			id := r.cl.publish(readFile(t, "testdata/file-src-1.json"), events.RequestOptions{})
			res := r.cl.waitResult(id, 60*time.Second)
			r.waitCommitted(t, 1, resultWait)
			require.Equal(t, tc.count, r.hits())
			require.Equal(t, 1, r.cl.resultsFor(id))
			require.Equal(t, events.TypeCreateSucceeded, res.Type)
			d := res.Data
			require.False(t, d.Truncated, "the minimal result went out after the refusal lifted")
			require.Nil(t, d.FullCounts)
			require.Equal(t, "file-src-1", d.Name)
			require.Equal(t, id, d.RequestID)
			require.Equal(t, "source", d.Type)
			require.Equal(t, "RUNNING", d.InitialState)
			require.NotEmpty(t, d.Config, "the whole result carries the connector's config")
			require.Equal(t, "org.apache.kafka.connect.file.FileStreamSourceConnector", d.Config.Map()["connector.class"])
			require.Equal(t, 1, *d.OffsetsWritten)
			require.NotEmpty(t, d.InitialOffsetsResponse)
			require.Len(t, d.Stages, 5)
			require.Equal(t, 0.0, r.agent.gauge("offsetagent_results_pending"))
		})
	}
}
