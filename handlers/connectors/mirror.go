package connectors

import (
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// MirrorMaker 2 connectors, the Apache Kafka built-ins.
// Source: apache/kafka connect/mirror/src/main/java/org/apache/kafka/connect/mirror/MirrorSourceConnector.java,
// MirrorCheckpointConnector.java, MirrorHeartbeatConnector.java (alterOffsets, 3.6+, commit de409b3) and
// MirrorUtils.java (validateSourcePartitionString, validateSourcePartitionPartition, validateSourceOffset);
// docs/connect-internals.md, "alterOffsets"
//
// alterOffsets sees the offsets after Worker.normalizeSourceConnectorOffsets, so maps are HashMaps and
// print in Java HashMap order, and integers are Longs.

const mirrorSource = `apache/kafka connect/mirror MirrorUtils + Mirror*Connector.alterOffsets (3.6+); docs/connect-internals.md, "alterOffsets"`

func mirrorClasses() []Class {
	mk := func(name string, validate func(map[string]string, []events.OffsetEntry) error, flat func(map[string]string) FlatCheck) Class {
		return Class{
			Name:          name,
			Aliases:       simpleAliases(name),
			Type:          Source,
			AltersOffsets: true,
			Validate:      validate,
			CheckFlat:     flat,
			PerEntry:      true,
			Source:        mirrorSource,
		}
	}
	return []Class{
		mk("org.apache.kafka.connect.mirror.MirrorSourceConnector", mirrorValidator(false, "cluster", "topic"), mirrorFlat(false, "cluster", "topic")),
		mk("org.apache.kafka.connect.mirror.MirrorCheckpointConnector", mirrorValidator(true, "group", "topic"), mirrorFlat(true, "group", "topic")),
		mk("org.apache.kafka.connect.mirror.MirrorHeartbeatConnector", mirrorValidator(true, "sourceClusterAlias", "targetClusterAlias"),
			mirrorFlat(true, "sourceClusterAlias", "targetClusterAlias")),
	}
}

// mirrorValidator checks string keys, then (for the source and checkpoint connectors, whose partitions
// name a topic-partition) the 'partition' key, then the offset. Heartbeat partitions have no
// 'partition' key; onlyZero marks the connectors whose offsets are the dummy 0.
func mirrorValidator(onlyZero bool, stringKeys ...string) func(map[string]string, []events.OffsetEntry) error {
	checkPartitionKey := stringKeys[0] != "sourceClusterAlias"
	return func(_ map[string]string, offsets []events.OffsetEntry) error {
		for _, e := range offsets {
			if e.Offset == nil {
				// Connect allows tombstones for anything so that garbage can be cleaned up.
				continue
			}
			if e.Partition == nil {
				return connectFailure("Source partitions may not be null")
			}
			for _, k := range stringKeys {
				if err := mirrorPartitionString(e.Partition, k); err != nil {
					return err
				}
			}
			if checkPartitionKey {
				if err := mirrorPartitionPartition(e.Partition); err != nil {
					return err
				}
			}
			if err := mirrorOffset(e.Partition, e.Offset, onlyZero); err != nil {
				return err
			}
		}
		return nil
	}
}

// mirrorPartitionString is MirrorUtils.validateSourcePartitionString.
func mirrorPartitionString(p jsonvalue.Map, key string) error {
	v, ok := p.Get(key)
	if !ok {
		return connectFailure("Source partition " + offsetstore.JavaString(p, true) + " is missing the '" + key + "' key, which is required")
	}
	if _, isString := v.(string); !isString {
		return connectFailure("Source partition " + offsetstore.JavaString(p, true) + " has an invalid value " +
			offsetstore.JavaString(v, true) + " for the '" + key + "' key, which must be a string")
	}
	return nil
}

// mirrorPartitionPartition is MirrorUtils.validateSourcePartitionPartition. Its negativity test is
// ((Number) value).intValue() < 0 on a Long: the value is truncated to 32 bits first, so a Long below
// Integer.MIN_VALUE can pass (e.g. -4294967296 truncates to 0). We reproduce that, so the answer is
// Connect's.
func mirrorPartitionPartition(p jsonvalue.Map) error {
	v, ok := p.Get("partition")
	if !ok {
		return connectFailure("Source partition " + offsetstore.JavaString(p, true) + " is missing the 'partition' key, which is required")
	}
	long, isLong := javaLong(v)
	if !isLong || long > 1<<31-1 {
		return connectFailure("Source partition " + offsetstore.JavaString(p, true) + " has an invalid value " +
			offsetstore.JavaString(v, true) + " for the 'partition' key, which must be an integer")
	}
	if int32(long) < 0 {
		return connectFailure("Source partition " + offsetstore.JavaString(p, true) + " has an invalid value " +
			offsetstore.JavaString(v, true) + " for the 'partition' key, which cannot be negative")
	}
	return nil
}

// mirrorOffset is MirrorUtils.validateSourceOffset for a non-null offset. The messages' prefix prints
// both maps, so it is built only on failure: a valid offset costs no allocation.
func mirrorOffset(p, o jsonvalue.Map, onlyZero bool) error {
	v, ok := o.Get("offset")
	if !ok {
		return connectFailure(mirrorOffsetPrefix(p, o) + " is missing the 'offset' key, which is required")
	}
	long, isLong := javaLong(v)
	if !isLong {
		return connectFailure(mirrorOffsetPrefix(p, o) + " has an invalid value " + offsetstore.JavaString(v, true) + " for the 'offset' key, which must be an integer")
	}
	if onlyZero && long != 0 {
		return connectFailure(mirrorOffsetPrefix(p, o) + " has an invalid value " + offsetstore.JavaString(v, true) + " for the 'offset' key; the only accepted value is 0")
	}
	if !onlyZero && long < 0 {
		return connectFailure(mirrorOffsetPrefix(p, o) + " has an invalid value " + offsetstore.JavaString(v, true) + " for the 'offset' key, which cannot be negative")
	}
	return nil
}

func mirrorOffsetPrefix(p, o jsonvalue.Map) string {
	return "Source offset " + offsetstore.JavaString(o, true) + " for source partition " + offsetstore.JavaString(p, true)
}

// javaLong reports whether v is what Connect's JsonConverter reads back as a Long (a JSON integer; the
// generic checks already rejected integers outside a long) and returns it.
func javaLong(v any) (int64, bool) {
	n, ok := v.(jsonvalue.Number)
	if !ok {
		return 0, false
	}
	return int64Of(n)
}
