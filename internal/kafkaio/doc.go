// Package kafkaio owns generic Kafka I/O on segmentio/kafka-go: the tailing reader of a
// compacted topic (Log, the twin of Connect's KafkaBasedLog, which also takes its owner's
// acknowledged writes without fetching them: Log.Written, Log.WrittenBatch), the Producer with
// its two ways of writing (queued small writes shared by concurrent callers, ordered large
// writes in rounds), both built on one Produce request builder, record-batch encoding (also
// straight from a caller's records into batches sent as they are: BatchEncoder,
// WriteEncoded), Produce and Fetch requests that write themselves on the connection and read
// their response into one buffer (record sets written from where they lie, fetched batches
// decoded in place: FetchPartition and the Log's loops, on the same kafka.Transport as
// everything else), the admin commit of a consumer group's offsets (CommitGroupOffsets, a
// kmsg OffsetCommit request on that transport, sent to the group's coordinator with every
// field Kafka's Admin client sets), a short-lived cache of partition leaders, topic metadata helpers, and the
// one error classifier (Classify) with its capped, jittered Backoff and Retry.
//
// Everything is built from Options naming one cluster; there is no package state, so a process
// can read one cluster and write another. What records mean is left to callers: Connect's
// formats to offsetstore, the agent's own topics to agent.
package kafkaio
