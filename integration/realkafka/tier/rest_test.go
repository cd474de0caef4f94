package tier

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The trace Connect 4.3.1 put in the status of a connector its worker started from a config
// snapshot without the connector's config (docs/connect-internals.md, "A connector started from
// a snapshot without its config"), as the worker of TestMigrateSinkAcrossMirrorMaker2 logged it.
const startedWithoutConfigTrace = `java.lang.NullPointerException: Cannot invoke "java.util.Map.get(Object)" because "connProps" is null
	at org.apache.kafka.connect.runtime.Worker.startConnector(Worker.java:318)
	at org.apache.kafka.connect.runtime.distributed.DistributedHerder.startConnector(DistributedHerder.java:2106)
	at org.apache.kafka.connect.runtime.distributed.DistributedHerder.lambda$getConnectorStartingCallable$0(DistributedHerder.java:2112)
	at java.base/java.util.concurrent.FutureTask.run(FutureTask.java:264)
	at java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)
	at java.base/java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)
	at java.base/java.lang.Thread.run(Thread.java:840)
`

// WaitState restarts a FAILED connector only for Connect's race: every other failure, the
// connector's own included, still fails the test at once.
func TestStartedWithoutConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trace string
		want  bool
	}{
		{"the race's trace", startedWithoutConfigTrace, true},
		{"the race's trace, Windows line ends", "java.lang.NullPointerException: Cannot invoke \"java.util.Map.get(Object)\" because \"connProps\" is null\r\n\tat org.apache.kafka.connect.runtime.Worker.startConnector(Worker.java:318)\r\n", true},
		{"the same dereference in a task's start", `java.lang.NullPointerException: Cannot invoke "java.util.Map.get(Object)" because "connProps" is null
	at org.apache.kafka.connect.runtime.Worker.startTask(Worker.java:640)
`, false},
		{"the connector's own NullPointerException", `java.lang.NullPointerException: Cannot invoke "String.length()" because "file" is null
	at org.apache.kafka.connect.file.FileStreamSinkConnector.start(FileStreamSinkConnector.java:60)
	at org.apache.kafka.connect.runtime.WorkerConnector.doStart(WorkerConnector.java:141)
`, false},
		{"the race's exception as the cause of another", `org.apache.kafka.connect.errors.ConnectException: Failed to start connector
	at org.apache.kafka.connect.runtime.Worker.startConnector(Worker.java:330)
Caused by: java.lang.NullPointerException: Cannot invoke "java.util.Map.get(Object)" because "connProps" is null
	at org.apache.kafka.connect.runtime.Worker.startConnector(Worker.java:318)
`, false},
		{"an unknown connector class", `org.apache.kafka.connect.errors.ConnectException: Failed to find any class that implements Connector and which name matches com.example.Missing
	at org.apache.kafka.connect.runtime.isolation.Plugins.connectorClass(Plugins.java:317)
`, false},
		{"the message without its frame", `java.lang.NullPointerException: Cannot invoke "java.util.Map.get(Object)" because "connProps" is null`, false},
		{"no trace", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, startedWithoutConfig(tc.trace))
		})
	}
}
