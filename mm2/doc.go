// Package mm2 translates a sink connector's consumer-group offsets from Kafka cluster A to
// cluster B across MirrorMaker 2.
package mm2
