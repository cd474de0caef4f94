package connectors

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Rules shared by the Debezium source connectors. Debezium implements no alterOffsets, so Connect
// accepts any offset and the task fails at start-up when its OffsetContext.Loader cannot read it. We
// apply the loader's rules now. Where the loader has a message we use its exact text; elsewhere (a
// ClassCastException, a partition the task would never look up) our own sentence names the entry.
// Failures are 400: KIP-995 answers an invalid initial_offsets with 400.
//
// Sources: debezium/debezium debezium-connector-common/.../connector/common/OffsetUtils.java
// (longOffsetValue, stringOffsetValue), .../pipeline/spi/OffsetContext.java (Loader.loadSnapshot),
// .../pipeline/txmetadata/TransactionContext.java, .../snapshot/incremental/AbstractIncrementalSnapshotContext.java,
// .../config/CommonConnectorConfig.java (logical name)

// dbzConnector describes one Debezium connector's partition and offset.
type dbzConnector struct {
	// partitions lists the accepted partition key sets, the one current versions write first.
	partitions [][]string
	// nameKey is the partition key holding the logical name ("server", MongoDB "server_id").
	nameKey string
	// legacyNameConfig is the 1.x config holding the logical name when topic.prefix is unset.
	legacyNameConfig string
	// partition adds connector-specific partition rules; may be nil.
	partition func(config map[string]string, i int, p jsonvalue.Map) error
	// offset checks a non-null offset map.
	offset func(i int, p, o jsonvalue.Map) error
	// partitionFlat and offsetKind are partition's and offset's twins for CheckFlat (flat.go);
	// without them CheckFlat leaves every entry to Validate. partitionFlat may return nil: no
	// rule for config. offsetKind is the rule of an offset member by its key.
	partitionFlat func(config map[string]string) func(p []FlatField) bool
	offsetKind    func(key string) flatKind
}

// validate is the Class.Validate of a Debezium connector.
func (d dbzConnector) validate(config map[string]string, offsets []events.OffsetEntry) error {
	nameConfig, name := "topic.prefix", config["topic.prefix"]
	if name == "" {
		nameConfig, name = d.legacyNameConfig, config[d.legacyNameConfig]
	}
	for i, e := range offsets {
		if e.Offset == nil {
			continue // a tombstone for any partition is harmless: it deletes what is not there
		}
		p := e.Partition
		if p == nil {
			return entryError(i, p, fmt.Sprintf("the partition cannot be null; the connector's tasks look their offset up under a partition with the key%s %s",
				plural(len(d.partitions[0])), quoteKeys(d.partitions[0])))
		}
		if !hasKeySet(p, d.partitions) {
			alternatives := make([]string, len(d.partitions))
			for j, set := range d.partitions {
				alternatives[j] = quoteKeys(set)
			}
			return entryError(i, p, fmt.Sprintf("the partition must have exactly the keys %s (found %s), or the connector's tasks never read this offset",
				strings.Join(alternatives, " or "), quoteKeys(mapKeys(p))))
		}
		for _, f := range p {
			if _, ok := f.Value.(string); !ok {
				return entryError(i, p, fmt.Sprintf("the partition's '%s' must be a string, found %s", f.Key, found(f.Value)))
			}
		}
		if got, _ := p.Get(d.nameKey); name != "" && got != name {
			return entryError(i, p, fmt.Sprintf("the partition's '%s' is %q but the connector's %s is %q; the tasks read offsets only under their logical name",
				d.nameKey, got, nameConfig, name))
		}
		if d.partition != nil {
			if err := d.partition(config, i, p); err != nil {
				return err
			}
		}
		if err := d.offset(i, p, e.Offset); err != nil {
			return err
		}
	}
	return nil
}

// dbzCommonOffset checks the keys every Debezium offset may carry: the snapshot marker, transaction
// metadata and the incremental-snapshot context.
func dbzCommonOffset(i int, p, o jsonvalue.Map) error {
	if v, ok := o.Get("snapshot"); ok && v != nil {
		// ≤3.0.1 writes true; ≥3.0.2 writes the SnapshotType name and casts any other value to String
		// (so false throws ClassCastException) and runs SnapshotType.valueOf on it.
		s, isString := v.(string)
		if v != true && !(isString && (s == "true" || s == "INITIAL" || s == "BLOCKING" || s == "INCREMENTAL")) {
			return entryError(i, p, "the offset's 'snapshot' must be true or one of \"INITIAL\", \"BLOCKING\", \"INCREMENTAL\", found "+found(v))
		}
	}
	for _, key := range []string{"transaction_id", "incremental_snapshot_primary_key", "incremental_snapshot_maximum_key",
		"incremental_snapshot_collections", "incremental_snapshot_correlation_id"} {
		if err := stringOrNull(i, p, o, key); err != nil {
			return err
		}
	}
	for _, f := range o {
		if strings.HasPrefix(f.Key, "transaction_data_collection_order_") {
			if _, ok := javaLong(f.Value); !ok {
				return entryError(i, p, fmt.Sprintf("the offset's '%s' must be an integer (the transaction's event count for that table), found %s", f.Key, found(f.Value)))
			}
		}
	}
	return nil
}

// dbzLong is OffsetUtils.longOffsetValue: null or absent reads as 0, any number is accepted, anything
// else must parse with Long.parseLong.
func dbzLong(o jsonvalue.Map, key string) (int64, error) {
	return dbzInteger(o, key, 64, "a long")
}

// dbzInteger is longOffsetValue (bits 64) or the MongoDB loader's intOffsetValue (bits 32).
func dbzInteger(o jsonvalue.Map, key string, bits int, what string) (int64, error) {
	v, _ := o.Get(key)
	switch t := v.(type) {
	case nil:
		return 0, nil
	case jsonvalue.Number:
		if n, ok := int64Of(t); ok {
			if bits == 32 {
				return int64(int32(n)), nil // Number.intValue truncates
			}
			return n, nil
		}
		return int64(clampFloat(offsetstore.Float64Of(t))), nil
	}
	text := offsetstore.JavaString(v, true)
	n, ok := parseJavaInteger(text, bits)
	if !ok {
		return 0, badRequest("Source offset '" + key + "' parameter value " + text + " could not be converted to " + what)
	}
	return n, nil
}

// clampFloat truncates f toward zero into the int64 range, as Java's double-to-long conversion does.
func clampFloat(f float64) float64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return math.Trunc(f)
}

// stringOrNull requires key, when present and non-null, to be a string: the loaders cast it.
func stringOrNull(i int, p, o jsonvalue.Map, key string) error {
	if v, ok := o.Get(key); ok && v != nil {
		if _, isString := v.(string); !isString {
			return entryError(i, p, fmt.Sprintf("the offset's '%s' must be a string or null, found %s", key, found(v)))
		}
	}
	return nil
}

// numberOrNull requires key, when present and non-null, to be a JSON number: the loader casts it to
// Number.
func numberOrNull(i int, p, o jsonvalue.Map, key string) error {
	if v, ok := o.Get(key); ok && v != nil {
		if _, isNumber := v.(jsonvalue.Number); !isNumber {
			return entryError(i, p, fmt.Sprintf("the offset's '%s' must be a number or null, found %s", key, found(v)))
		}
	}
	return nil
}

// integerOrNull requires key, when present and non-null, to be a JSON integer: the loader casts it to
// Long.
func integerOrNull(i int, p, o jsonvalue.Map, key string) error {
	if v, ok := o.Get(key); ok && v != nil {
		if _, isLong := javaLong(v); !isLong {
			return entryError(i, p, fmt.Sprintf("the offset's '%s' must be an integer or null, found %s", key, found(v)))
		}
	}
	return nil
}

// entryError is our own 400 for offset entry i.
func entryError(i int, p jsonvalue.Map, detail string) *Error {
	return badRequest(fmt.Sprintf("Offset entry %d (partition %s): %s", i, jsonvalue.String(p), detail))
}

// found describes a value for a message: its JSON kind and text.
func found(v any) string {
	if v == nil {
		return "null"
	}
	return jsonvalue.KindOf(v) + " " + jsonvalue.String(v)
}

func hasKeySet(p jsonvalue.Map, sets [][]string) bool {
	got := mapKeys(p)
	sort.Strings(got)
	for _, set := range sets {
		want := append([]string(nil), set...)
		sort.Strings(want)
		if strings.Join(want, "\x00") == strings.Join(got, "\x00") {
			return true
		}
	}
	return false
}

func mapKeys(m jsonvalue.Map) []string {
	keys := make([]string, len(m))
	for i, f := range m {
		keys[i] = f.Key
	}
	return keys
}

func quoteKeys(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return "'" + strings.Join(keys, "', '") + "'"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// UnderTopicPrefix reports whether topic t is one a Debezium connector with topic prefix p
// (topic.prefix, database.server.name before 2.0) writes: the prefix itself (its schema change
// topic) or "<p>.<anything>".
func UnderTopicPrefix(t, p string) bool {
	return t == p || strings.HasPrefix(t, p+".")
}
