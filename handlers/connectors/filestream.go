package connectors

import (
	"strings"

	"github.com/offsetagent/offsetagent/events"
)

// FileStream connectors, the Apache Kafka built-ins.
// Source: apache/kafka connect/file/src/main/java/org/apache/kafka/connect/file/FileStreamSourceConnector.java
// (alterOffsets, 3.6+), FileStreamSourceTask.java (partition {"filename": <file>}, offset
// {"position": <long>}), FileStreamSinkConnector.java (alterOffsets returns true, no checks);
// docs/connect-internals.md, "alterOffsets"

const fileStreamSource = `apache/kafka connect/file FileStreamSourceConnector.alterOffsets (3.6+); docs/connect-internals.md, "alterOffsets"`

func fileStreamClasses() []Class {
	return []Class{
		{
			Name:          "org.apache.kafka.connect.file.FileStreamSourceConnector",
			Aliases:       simpleAliases("org.apache.kafka.connect.file.FileStreamSourceConnector"),
			Type:          Source,
			AltersOffsets: true,
			Validate:      validateFileStreamSource,
			CheckFlat:     fileStreamSourceFlat,
			PerEntry:      true,
			Source:        fileStreamSource,
		},
		{
			Name:          "org.apache.kafka.connect.file.FileStreamSinkConnector",
			Aliases:       simpleAliases("org.apache.kafka.connect.file.FileStreamSinkConnector"),
			Type:          Sink,
			AltersOffsets: true,
			Source:        "apache/kafka connect/file FileStreamSinkConnector.alterOffsets (3.6+): no checks, returns true",
		},
	}
}

// validateFileStreamSource is FileStreamSourceConnector.alterOffsets. The 'file' check comes first and
// fails even for an empty list; per entry the offset is checked before the partition, and a null
// offset skips both.
func validateFileStreamSource(config map[string]string, offsets []events.OffsetEntry) error {
	// ConfigDef trims STRING values with String.trim, which strips every char <= ' '.
	if strings.TrimLeft(strings.TrimRight(config["file"], javaSpace), javaSpace) == "" {
		return connectFailure("Offsets cannot be modified if the 'file' configuration is unspecified. " +
			"This is because stdin is used for input and offsets are not tracked.")
	}
	for _, e := range offsets {
		if e.Offset == nil {
			continue
		}
		position, ok := e.Offset.Get("position")
		if !ok {
			return connectFailure("Offset objects should either be null or contain the key 'position'")
		}
		long, isLong := javaLong(position)
		if !isLong {
			return connectFailure("The value for the 'position' key in the offset is expected to be a Long value")
		}
		if long < 0 {
			return connectFailure("The value for the 'position' key in the offset should be a non-negative value")
		}
		if e.Partition == nil {
			return connectFailure("Partition objects cannot be null")
		}
		if _, ok := e.Partition.Get("filename"); !ok {
			return connectFailure("Partition objects should contain the key 'filename'")
		}
	}
	return nil
}

// javaSpace holds the characters String.trim strips: U+0000 to U+0020.
const javaSpace = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f" +
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "
