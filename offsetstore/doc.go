// Package offsetstore owns Kafka Connect's internal topics as a worker sees them: the exact
// key and value bytes of the offsets topic (Jackson's JSON layout, java.util.HashMap key order,
// Java number formatting), the murmur2 partition a Java producer would choose, the
// materialised view of the offsets and config topics, wiping, writing, snapshotting and
// restoring a connector's offsets, and the consumer-group offsets of sink connectors. It also
// reads what Connect's workers tell their group's coordinator (workergroup.go): a worker's
// metadata and the assignment its leader gave it, in each version of Connect's group protocol,
// and so what a live worker runs, checked against bytes Connect's own classes made.
//
// Reading and writing Kafka is package kafkaio's; the JSON value model is package jsonvalue's.
// Results are values with per-partition detail. Deciding which offsets a connector accepts,
// and in which order the creation stages run, is left to callers (package handlers).
package offsetstore
