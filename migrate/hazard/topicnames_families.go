package hazard

import (
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// What the sink families offsetagent knows derive from a record's topic, and whether they take
// a record whose topic is not the partition it was consumed from (topicnames.go restores A's
// names with a transform only for those that do). Read in each connector's source where it is
// open; where it is not, the family is not known to take such records, and is refused rather
// than guessed about.

// sinkFamily is what offsetagent knows of a sink connector class about topic names.
type sinkFamily struct {
	// name is how messages call the family.
	name    string
	classes []string
	// derives says what the connector names after a record's topic, given its config on B
	// ("" when nothing).
	derives func(cfg map[string]string) string
	// renamedRecords says whether the connector takes records whose topic is not a partition
	// it was assigned, and where that was read.
	renamedRecords func(cfg map[string]string) (bool, string)
	// fix is the family's own way out when it does not take them (zero for none).
	fix fleet.Text
}

// takesRenamed is renamedRecords for a family that always takes them.
func takesRenamed(why string) func(map[string]string) (bool, string) {
	return func(map[string]string) (bool, string) { return true, why }
}

// refusesRenamed is renamedRecords for a family that is not known to take them.
func refusesRenamed(why string) func(map[string]string) (bool, string) {
	return func(map[string]string) (bool, string) { return false, why }
}

// always is derives for a family that always names something after the topic.
func always(what string) func(map[string]string) string {
	return func(map[string]string) string { return what }
}

// formatWithTopic is derives for a family whose destination is a format with "${topic}" in
// it under one of keys (the first set wins), def when none is set.
func formatWithTopic(what, def string, keys ...string) func(map[string]string) string {
	return func(cfg map[string]string) string {
		for _, k := range keys {
			if v, ok := cfg[k]; ok {
				if strings.Contains(v, "${topic}") {
					return fmt.Sprintf("%s (%s %q)", what, k, v)
				}
				return ""
			}
		}
		return fmt.Sprintf("%s (%s %q, the default)", what, keys[0], def)
	}
}

const (
	objectStorePaths = "the paths of the objects it writes (<topics.dir>/<topic>/... and the file names <topic>+<partition>+<offset>)"
	storageWriters   = "its writers are kept per record topic and partition (S3SinkTask.put: topicPartitionWriters.get(new TopicPartition(record.topic(), ...))), so a record whose topic is not an assigned partition fails the task"
	storageClosed    = "not known to take them (closed source; Confluent's storage sinks keep their writers per assigned partition)"
)

// sinkFamilies are the families offsetagent knows; docs/migration.md ("Settings derived from
// topic names") has them as a table.
func sinkFamilies() []sinkFamily {
	return []sinkFamily{
		{name: "Kafka's FileStream sink", classes: []string{"org.apache.kafka.connect.file.FileStreamSinkConnector"},
			derives:        always(""),
			renamedRecords: takesRenamed("FileStreamSinkTask writes record values to its file and leaves its offsets to the framework")},
		{name: "Confluent's JDBC sink", classes: []string{"io.confluent.connect.jdbc.JdbcSinkConnector"},
			derives:        formatWithTopic("its tables", "${topic}", "table.name.format"),
			renamedRecords: takesRenamed("JdbcSinkTask leaves its offsets to the framework (no preCommit of its own)")},
		{name: "Debezium's JDBC sink", classes: []string{"io.debezium.connector.jdbc.JdbcSinkConnector"},
			derives: func(cfg map[string]string) string {
				if s := cfg["table.naming.strategy"] + cfg["collection.naming.strategy"]; s != "" && !strings.Contains(s, "DefaultTableNamingStrategy") && !strings.Contains(s, "DefaultCollectionNamingStrategy") {
					return fmt.Sprintf("its tables (naming strategy %q)", s)
				}
				return formatWithTopic("its tables", "${topic}", "collection.name.format", "table.name.format")(cfg)
			},
			renamedRecords: takesRenamed("JdbcSinkConnectorTask commits the offsets of the partition each record was consumed from, not of its topic (DBZ-6491)")},
		{name: "Confluent's Elasticsearch sink", classes: []string{"io.confluent.connect.elasticsearch.ElasticsearchSinkConnector"},
			derives: always("its indices or data streams, named after the record's topic"),
			renamedRecords: func(cfg map[string]string) (bool, string) {
				if strings.EqualFold(strings.TrimSpace(cfg["flush.synchronously"]), "true") {
					return true, "with flush.synchronously=true it commits the framework's offsets (SyncOffsetTracker)"
				}
				return false, "its asynchronous offset tracker (flush.synchronously=false, the default) fails a record whose topic is not an assigned partition (\"Connector doesn't support topic mutating SMTs\")"
			},
			fix: fleet.Textf("%s (offsetagent then restores A's names with a transform; indexing is synchronous)",
				fleet.SetValue{Key: "flush.synchronously", Value: fleet.Lit("true")})},
		{name: "Aiven's OpenSearch sink", classes: []string{"io.aiven.kafka.connect.opensearch.OpensearchSinkConnector", "io.aiven.kafka.connect.opensearch.OpenSearchSinkConnector"},
			derives:        always("its indices, named after the record's topic (topic.index.map by topic)"),
			renamedRecords: takesRenamed("its task flushes and commits the framework's offsets")},
		{name: "Confluent's S3 sink", classes: []string{"io.confluent.connect.s3.S3SinkConnector"},
			derives: always(objectStorePaths), renamedRecords: refusesRenamed(storageWriters)},
		{name: "Confluent's HDFS sink", classes: []string{"io.confluent.connect.hdfs.HdfsSinkConnector", "io.confluent.connect.hdfs3.Hdfs3SinkConnector"},
			derives:        always("the paths of the files it writes (<topics.dir>/<topic>/... and its write-ahead log per topic)"),
			renamedRecords: refusesRenamed("DataWriter.write keeps its writers per record topic and partition, so a record whose topic is not an assigned partition fails the task")},
		{name: "Confluent's GCS sink", classes: []string{"io.confluent.connect.gcs.GcsSinkConnector"},
			derives: always(objectStorePaths), renamedRecords: refusesRenamed(storageClosed)},
		{name: "Confluent's Azure storage sink", classes: []string{"io.confluent.connect.azure.blob.AzureBlobStorageSinkConnector", "io.confluent.connect.azure.datalake.gen2.AzureDataLakeGen2SinkConnector"},
			derives: always(objectStorePaths), renamedRecords: refusesRenamed(storageClosed)},
		{name: "Aiven's object storage sink", classes: []string{"io.aiven.kafka.connect.s3.AivenKafkaConnectS3SinkConnector", "io.aiven.kafka.connect.gcs.GcsSinkConnector"},
			derives: func(cfg map[string]string) string {
				tmpl, ok := cfg["file.name.template"]
				if !ok {
					return `the names of the objects it writes (file.name.template "{{topic}}-{{partition}}-{{start_offset}}", the default)`
				}
				if strings.Contains(tmpl, "{{topic}}") {
					return fmt.Sprintf("the names of the objects it writes (file.name.template %q)", tmpl)
				}
				return ""
			},
			renamedRecords: refusesRenamed("not known to take them (not checked in code)")},
		{name: "Snowflake's sink", classes: []string{"com.snowflake.kafka.connector.SnowflakeSinkConnector"},
			derives:        always("its tables, named after the record's topic unless snowflake.topic2table.map maps it"),
			renamedRecords: refusesRenamed("not known to take them: its channels are opened per assigned partition (not checked in code)")},
	}
}

// familyOf is the family of a connector.class: its fully qualified name or a simple-name alias
// (Connect's, with or without "Connector"). An alias two families claim, as Connect's
// JdbcSinkConnector is claimed by Confluent's and Debezium's sinks, names neither, as in Connect.
func familyOf(class string) *sinkFamily {
	class = strings.TrimSpace(class)
	var found *sinkFamily
	families := sinkFamilies()
	for i := range families {
		f := &families[i]
		for _, fqcn := range f.classes {
			if class == fqcn {
				return f
			}
			simple := fqcn[strings.LastIndexByte(fqcn, '.')+1:]
			if pruned, _ := strings.CutSuffix(simple, "Connector"); class == simple || class == pruned {
				if found != nil && found != f {
					return nil
				}
				found = f
			}
		}
	}
	return found
}

// Transforms and predicates: what reads the record's topic. Kafka's own transforms are known
// by their classes (a simple-name alias too); any other transform may read it.
const (
	kafkaTransforms = "org.apache.kafka.connect.transforms."
	kafkaPredicates = "org.apache.kafka.connect.transforms.predicates."
)

// topicReading are the transforms and predicates that read the record's topic, each with the
// keys of its config that concern it and their defaults ("" for none).
func topicReading() map[string][][2]string {
	return map[string][][2]string{
		kafkaTransforms + "RegexRouter":               {{"regex", ""}, {"replacement", ""}},
		kafkaTransforms + "TimestampRouter":           {{"topic.format", "${topic}-${timestamp}"}},
		kafkaTransforms + "InsertField$Key":           {{"topic.field", ""}},
		kafkaTransforms + "InsertField$Value":         {{"topic.field", ""}},
		kafkaPredicates + "TopicNameMatches":          {{"pattern", ""}},
		"io.debezium.transforms.ByLogicalTableRouter": {{"topic.regex", ""}, {"topic.replacement", ""}},
		"io.debezium.transforms.ContentBasedRouter":   {{"topic.regex", ""}},
	}
}

// topicBlind are Kafka's transforms and predicates that never read the record's topic (after
// kafkaTransforms).
func topicBlind() []string {
	return []string{
		"Cast$Key", "Cast$Value", "DropHeaders", "ExtractField$Key", "ExtractField$Value", "Filter",
		"Flatten$Key", "Flatten$Value", "HeaderFrom$Key", "HeaderFrom$Value", "HoistField$Key",
		"HoistField$Value", "InsertHeader", "MaskField$Key", "MaskField$Value", "ReplaceField$Key",
		"ReplaceField$Value", "SetSchemaMetadata$Key", "SetSchemaMetadata$Value",
		"TimestampConverter$Key", "TimestampConverter$Value", "ValueToKey",
		"predicates.HasHeaderKey", "predicates.RecordIsTombstone",
	}
}

// pluginClass resolves a transform or predicate type: a simple-name alias of Kafka's own
// classes (InsertField$Value, TopicNameMatches) to its class; other names as given.
func pluginClass(typ string) string {
	typ = strings.TrimSpace(typ)
	if strings.Contains(typ, ".") {
		return typ
	}
	for class := range topicReading() {
		if strings.HasPrefix(class, kafkaTransforms) && class[strings.LastIndexByte(class, '.')+1:] == typ {
			return class
		}
	}
	for _, b := range topicBlind() {
		if b[strings.LastIndexByte(b, '.')+1:] == typ {
			return kafkaTransforms + b
		}
	}
	return typ
}

// readsTopic says whether a transform or predicate class reads the record's topic, and the
// keys of its config that concern it (with their defaults); known is false for a class
// offsetagent does not know. InsertField reads it only with topic.field set.
func readsTopic(class string, cfg map[string]string, prefix string) (reads bool, keys [][2]string, known bool) {
	if keys, ok := topicReading()[class]; ok {
		if strings.HasPrefix(class, kafkaTransforms+"InsertField$") && strings.TrimSpace(cfg[prefix+"topic.field"]) == "" {
			return false, nil, true
		}
		return true, keys, true
	}
	if strings.HasPrefix(class, kafkaTransforms) {
		for _, b := range topicBlind() {
			if class == kafkaTransforms+b {
				return false, nil, true
			}
		}
	}
	return false, nil, false
}
