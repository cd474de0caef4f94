package cdc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// clusterBOnA is cluster B of the tests that judge a move by its records: a second Connect
// cluster on A's Kafka cluster (a worker and its agent). B's connectors write into the topics
// A's wrote, as with MirrorMaker 2's identity policy, so A's records are there to be told from
// B's. It starts at the first such test and serves the others (stopped after the tests).
var clusterBOnA struct {
	once   sync.Once
	worker *realkafka.Worker
	agent  *tier.Agent
	err    error
}

// startClusterBOnA returns clusterBOnA's worker and agent, started at the first call.
func startClusterBOnA(t *testing.T, ctx context.Context) (*realkafka.Worker, *tier.Agent) {
	t.Helper()
	c := &clusterBOnA
	c.once.Do(func() {
		started := time.Now()
		names := env.ConnectNames("recb")
		if c.worker, c.err = env.StartWorker(ctx, "worker-recb", names); c.err != nil {
			return
		}
		c.agent, c.err = env.StartAgentOn(ctx, "agent-recb", env.Broker.Addr, names)
		t.Logf("cluster B on A's Kafka cluster (worker and agent) started in %s", time.Since(started).Round(time.Second))
	})
	require.NoError(t, c.err, "start cluster B on A's Kafka cluster")
	return c.worker, c.agent
}

// change is one Debezium change event as the JsonConverter with schemas writes it.
type change struct {
	Op     string         `json:"op"`
	Before map[string]any `json:"before"`
	After  map[string]any `json:"after"`
	Source struct {
		TxID     int64  `json:"txId"`
		LSN      int64  `json:"lsn"`
		Snapshot string `json:"snapshot"`
	} `json:"source"`
}

// id is the change's event identity: the transaction and the LSN of its row change.
func (c change) id() string { return fmt.Sprintf("%d/%d", c.Source.TxID, c.Source.LSN) }

// changes reads the records of topic on broker (partition 0: Debezium's topics have one here)
// up to its current end and decodes the change events (tombstones skipped). A topic that does
// not exist has none.
func changes(t *testing.T, broker, topic string) []change {
	t.Helper()
	out, err := readChanges(broker, topic)
	require.NoError(t, err)
	return out
}

// readChanges is changes for the conditions of require.Eventually, which must not fail the test
// from their own goroutine.
func readChanges(broker, topic string) ([]change, error) { return readPayloads[change](broker, topic) }

// readPayloads reads the records of topic on broker (partition 0) up to its current end and
// decodes the payloads of the change events (tombstones skipped) as T.
func readPayloads[T any](broker, topic string) ([]T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(broker), Timeout: 10 * time.Second, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}})
	if err != nil || len(lo.Topics[topic]) == 0 || lo.Topics[topic][0].Error != nil || lo.Topics[topic][0].LastOffset == 0 {
		return nil, nil
	}
	end := lo.Topics[topic][0].LastOffset
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var out []T
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", topic, err)
		}
		if m.Value != nil {
			var env struct {
				Payload T `json:"payload"`
			}
			if err := json.Unmarshal(m.Value, &env); err != nil {
				return nil, fmt.Errorf("decode %s at %d: %w: %s", topic, m.Offset, err, m.Value)
			}
			out = append(out, env.Payload)
		}
		if m.Offset+1 >= end {
			return out, nil
		}
	}
}

// sqlRows runs a query on db and returns its rows ('|'-separated columns).
func sqlRows(t *testing.T, db, query string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := env.Postgres.Query(ctx, db, query)
	require.NoError(t, err)
	return rows(out)
}

// sqlExec runs statements on db.
func sqlExec(t *testing.T, db, stmts string) {
	t.Helper()
	sqlRows(t, db, stmts)
}

// debeziumConfig is a Debezium PostgreSQL source config for table public.items of db, through
// slot, with topic prefix prefix: pgoutput, snapshot.mode=initial (a lost offset shows as a
// re-snapshot), change events in JSON with schemas (the JDBC sink needs them).
func debeziumConfig(db, slot, prefix string) map[string]string {
	return map[string]string{
		"connector.class":                "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":                      "1",
		"database.hostname":              "127.0.0.1",
		"database.port":                  fmt.Sprint(env.Postgres.Port),
		"database.user":                  "postgres",
		"database.password":              "unused",
		"database.dbname":                db,
		"topic.prefix":                   prefix,
		"plugin.name":                    "pgoutput",
		"slot.name":                      slot,
		"publication.autocreate.mode":    "disabled",
		"publication.name":               "cdc",
		"table.include.list":             "public.items",
		"snapshot.mode":                  "initial",
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "true",
		"value.converter.schemas.enable": "true",
	}
}

// createSourceDB creates database db with the table items and a publication of it.
func createSourceDB(t *testing.T, db string) {
	t.Helper()
	sqlExec(t, "postgres", "CREATE DATABASE "+db)
	sqlExec(t, db, "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL, note text NOT NULL);\n"+
		"CREATE PUBLICATION cdc FOR TABLE items;")
}

// slots returns the replication slots of db as "name active".
func slots(t *testing.T, db string) []string {
	t.Helper()
	return sqlRows(t, "postgres", "SELECT slot_name || ' ' || active FROM pg_replication_slots WHERE database = '"+db+"' ORDER BY slot_name")
}
