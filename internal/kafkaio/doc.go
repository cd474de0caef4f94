// Package kafkaio owns generic Kafka I/O on segmentio/kafka-go: the tailing reader of a
// compacted topic (Log, the twin of Connect's KafkaBasedLog, which also takes its owner's
// acknowledged writes without fetching them: Log.Written, Log.WrittenBatch), the Producer with
// its two ways of writing (queued small writes shared by concurrent callers, ordered large
// writes, a partition's next batch sent once its last one is answered), both built on one Produce request builder, record-batch encoding (also
// straight from a caller's records into batches sent as they are: BatchEncoder,
// WriteEncoded), Produce and Fetch requests that write themselves on the connection and read
// their response into one buffer (record sets written from where they lie, fetched batches
// decoded in place: FetchPartition and the Log's loops, on the same kafka.Transport as
// everything else), the admin commit and fetch of a consumer group's offsets (CommitGroupOffsets,
// FetchGroupOffsets: kmsg OffsetCommit and OffsetFetch requests on that transport, sent to the
// group's coordinator, the commit with every field Kafka's Admin client sets and the fetch
// with each entry's committed leader epoch and metadata), the admin requests about topics and
// groups (admin.go: a topic's config, a topic created when missing, a group or its offsets
// deleted), each client remembering the coordinator of every group it asked (coordinator.go:
// no FindCoordinator before each group request, a new one when the coordinator moved or its
// connection failed), the groups of every broker and a group's members with the bytes of
// their metadata and assignment whatever the protocol (ListGroups, DescribeGroup: a Connect
// worker's too, which kafka-go's own drop), a short-lived cache of partition leaders, topic
// metadata helpers, the
// Kafka cluster id behind one bootstrap address (ClusterIDs: a cluster is known by its id,
// not by how an address is spelled; each address asked once, bounded), and the one error
// classifier (Classify) with its capped, jittered Backoff and Retry.
//
// Every read is READ_COMMITTED (aborts.go), as Connect's KafkaBasedLog reads with
// exactly.once.source.support=enabled: Fetch with isolation level 1, nothing past a
// partition's last stable offset (LSO), the batches of aborted transactions dropped by the
// response's aborted-transactions list, control batches skipped; Log.Sync, the Log's
// readiness and ListOffsets stop at the LSO. The owner's own writes are applied in log order
// (log_own.go): a transaction of another producer still open below them holds them back, as
// it holds back a read_committed consumer, until it commits, aborts or times out.
//
// Why the framing stays here rather than on franz-go's kgo: kgo reads committed data
// correctly, but its consumer hands out a *kgo.Record per record, copied out of the response;
// the Log's loops decode record batches in place (a borrowing view keeps no copy), fetch all
// the partitions of a leader in one request, take the owner's writes from their bytes, bound
// what compressed batches inflate to, and read the message formats before record batches.
// Rebuilt on kgo, those would be lost or done again on top of it, and the view's load, which
// runs above a franz-go consumer's speed today (docs/benchmarks.md), would fall to it or
// below. The requests themselves are already franz-go's kmsg structures (FetchRequest's
// IsolationLevel, FetchResponse's LastStableOffset and AbortedTransactions), so reading
// committed data took those fields and the filtering of aborts.go, the Java consumer's own
// algorithm on the batch headers. Produce requests write no transactions and are untouched.
//
// Everything is built from Options naming one cluster; there is no package state, so a process
// can read one cluster and write another. A client NewClient builds holds its first request
// until its kafka-go transport has loaded the cluster's layout: kafka-go bounds each metadata
// refresh by the transport's MetadataTTL (a second for offsetagent's, so that new topics are
// seen soon) and fails every request until one refresh succeeds, so one slow metadata answer
// would otherwise fail a request whose own bound is far longer. What records mean is left to callers: Connect's
// formats to offsetstore, the agent's own topics to agent.
package kafkaio
