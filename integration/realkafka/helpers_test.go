package realkafka_test

import (
	"testing"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// The helpers of package tier under the names the tests use.

// rest calls the worker's REST API and returns the status and the body.
func rest(t *testing.T, w *realkafka.Worker, method, path string, body any) (int, string) {
	t.Helper()
	return tier.Rest(t, w, method, path, body)
}

// restOK calls the worker's REST API and requires a 2xx answer.
func restOK(t *testing.T, w *realkafka.Worker, method, path string, body any) string {
	t.Helper()
	return tier.RestOK(t, w, method, path, body)
}

// waitState waits until the worker reports the connector and its tasks in state.
func waitState(t *testing.T, w *realkafka.Worker, name, state string) tier.ConnectorStatus {
	t.Helper()
	return tier.WaitState(t, w, name, state)
}

// offsetsOf is GET /connectors/NAME/offsets, as returned.
func offsetsOf(t *testing.T, w *realkafka.Worker, name string) string {
	t.Helper()
	return tier.OffsetsOf(t, w, name)
}

// record is one record of a topic.
type record = tier.Record

// readTopic returns every record of every partition of topic up to its current end.
func readTopic(t *testing.T, topic string) []record {
	t.Helper()
	return env.ReadTopic(t, topic)
}

// offsetRecords returns the records of an offsets topic whose key belongs to connector name.
func offsetRecords(t *testing.T, topic, name string) []record {
	t.Helper()
	return env.OffsetRecords(t, topic, name)
}

// waitValues waits until topic holds at least n records and returns their values.
func waitValues(t *testing.T, topic string, n int) []string {
	t.Helper()
	return env.WaitValues(t, topic, n)
}

func exists(t *testing.T, topic string) bool {
	t.Helper()
	return env.Exists(t, topic)
}

// createTopic creates a topic (compacted when compact is true).
func createTopic(t *testing.T, topic string, partitions int, compact bool) {
	t.Helper()
	env.CreateTopic(t, topic, partitions, compact)
}

// produce writes values to partition 0 of topic, in order.
func produce(t *testing.T, topic string, values ...string) {
	t.Helper()
	env.Produce(t, topic, values...)
}

// numbered returns format applied to 0..n-1.
func numbered(format string, n int) []string { return tier.Numbered(format, n) }

// lines returns n lines "<prefix>-<i>" from first, and their byte length with newlines.
func lines(prefix string, first, n int) (string, int) { return tier.Lines(prefix, first, n) }

// writeFile writes content to a new file in the run's folder and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	return env.WriteFile(t, name, content)
}

// jsonString is s as a JSON string, as the JsonConverter writes a string value without schema.
func jsonString(s string) string { return tier.JSONString(s) }

// groupOffsets returns the committed offsets of group on topic, as "offset metadata=<m>" by partition.
func groupOffsets(t *testing.T, group, topic string) map[int]string {
	t.Helper()
	return env.GroupOffsets(t, group, topic)
}
