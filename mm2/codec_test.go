package mm2

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// The examples of docs/mirrormaker2.md, "Checkpoint records" and "Offset-sync records".
const (
	specCheckpointKey              = "000e636f6e6e6563742d73696e6b2d3100066f726465727300000003"
	specCheckpointKeyDefault       = "000e636f6e6e6563742d73696e6b2d310008412e6f726465727300000003"
	specCheckpointValue            = "000000000000000003e800000000000003de0000"
	specOffsetSyncKey              = "00066f726465727300000003"
	specOffsetSyncValue            = "00000000000003e800000000000003de"
	specCheckpointGroup            = "connect-sink-1"
	specUpstream, specOffset       = int64(1000), int64(990)
	specPartition            int32 = 3
)

func TestCheckpointSpecExamples(t *testing.T) {
	tests := []struct {
		name  string
		topic string
		key   string
	}{
		{name: "identity topic", topic: "orders", key: specCheckpointKey},
		{name: "default policy topic", topic: "A.orders", key: specCheckpointKeyDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Checkpoint{Group: specCheckpointGroup, Topic: tt.topic, Partition: specPartition,
				UpstreamOffset: specUpstream, Offset: specOffset}
			key, err := c.Key()
			require.NoError(t, err)
			require.Equal(t, tt.key, hex.EncodeToString(key))
			value, err := c.Value()
			require.NoError(t, err)
			require.Equal(t, specCheckpointValue, hex.EncodeToString(value))

			got, err := DecodeCheckpoint(unhex(t, tt.key), unhex(t, specCheckpointValue))
			require.NoError(t, err)
			require.Equal(t, c, got)
		})
	}
	require.Len(t, unhex(t, specCheckpointKey), 28)
	require.Len(t, unhex(t, specCheckpointKeyDefault), 30)
	require.Len(t, unhex(t, specCheckpointValue), 20)
}

func TestOffsetSyncSpecExample(t *testing.T) {
	s := OffsetSync{Topic: "orders", Partition: specPartition, UpstreamOffset: specUpstream, Offset: specOffset}
	key, err := s.Key()
	require.NoError(t, err)
	require.Equal(t, specOffsetSyncKey, hex.EncodeToString(key))
	value, err := s.Value()
	require.NoError(t, err)
	require.Equal(t, specOffsetSyncValue, hex.EncodeToString(value))
	got, err := DecodeOffsetSync(key, value)
	require.NoError(t, err)
	require.Equal(t, s, got)
}

func TestCheckpointMetadataAndTrailingValueBytes(t *testing.T) {
	c := Checkpoint{Group: "g", Topic: "t", Partition: 0, UpstreamOffset: 5, Offset: 4, Metadata: "héllo"}
	key, err := c.Key()
	require.NoError(t, err)
	value, err := c.Value()
	require.NoError(t, err)
	// Java's Schema.read ignores bytes after the last field of a value: a future field must not
	// make today's reader refuse the record.
	got, err := DecodeCheckpoint(key, append(value, 0xca, 0xfe))
	require.NoError(t, err)
	require.Equal(t, c, got)

	s := OffsetSync{Topic: "t", Partition: 1, UpstreamOffset: 7, Offset: 3}
	sk, _ := s.Key()
	sv, _ := s.Value()
	gs, err := DecodeOffsetSync(sk, append(sv, 1, 2, 3))
	require.NoError(t, err)
	require.Equal(t, s, gs)
}

func TestEncodeRefusesLongStrings(t *testing.T) {
	_, err := Checkpoint{Group: strings.Repeat("g", maxStringBytes+1), Topic: "t"}.Key()
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, ReasonStringTooLong, fe.Reason)
	require.Equal(t, "group", fe.Field)

	_, err = Checkpoint{Group: strings.Repeat("g", maxStringBytes), Topic: "t"}.Key()
	require.NoError(t, err)
}

func TestDecodeMalformed(t *testing.T) {
	base64Key := []byte(`"` + base64.StdEncoding.EncodeToString(unhex(t, specCheckpointKey)) + `"`)
	tests := []struct {
		name   string
		key    string // hex
		rawKey []byte // used when key is ""
		value  string // hex
		nilVal bool
		part   string
		field  string
		reason Reason
	}{
		{name: "truncated key partition", key: specCheckpointKey[:len(specCheckpointKey)-2], value: specCheckpointValue,
			part: "key", field: "partition", reason: ReasonTruncated},
		{name: "empty key", rawKey: []byte{}, value: specCheckpointValue, part: "key", field: "group", reason: ReasonTruncated},
		{name: "key group length beyond the record", key: "00ff6162", value: specCheckpointValue,
			part: "key", field: "group", reason: ReasonOversizedLength},
		{name: "key negative group length", key: "ffff00066f726465727300000003", value: specCheckpointValue,
			part: "key", field: "group", reason: ReasonNegativeLength},
		{name: "key trailing bytes", key: specCheckpointKey + "00", value: specCheckpointValue,
			part: "key", reason: ReasonTrailingBytes},
		{name: "key wrapped by JsonConverter", rawKey: base64Key, value: specCheckpointValue,
			part: "key", reason: ReasonWrapped},
		{name: "value version 1", key: specCheckpointKey, value: "0001" + specCheckpointValue[4:],
			part: "value", field: "version", reason: ReasonVersion},
		{name: "value version -1", key: specCheckpointKey, value: "ffff" + specCheckpointValue[4:],
			part: "value", field: "version", reason: ReasonVersion},
		{name: "value truncated in offset", key: specCheckpointKey, value: specCheckpointValue[:20],
			part: "value", field: "offset", reason: ReasonTruncated},
		{name: "value without metadata", key: specCheckpointKey, value: specCheckpointValue[:36],
			part: "value", field: "metadata", reason: ReasonTruncated},
		{name: "value negative metadata length", key: specCheckpointKey, value: specCheckpointValue[:36] + "8000",
			part: "value", field: "metadata", reason: ReasonNegativeLength},
		{name: "value metadata beyond the record", key: specCheckpointKey, value: specCheckpointValue[:36] + "000561",
			part: "value", field: "metadata", reason: ReasonOversizedLength},
		{name: "value wrapped in a schema envelope", key: specCheckpointKey,
			value: hex.EncodeToString([]byte(`{"schema":{"type":"bytes","optional":false},"payload":"AAAA"}`)),
			part:  "value", reason: ReasonWrapped},
		{name: "tombstone", key: specCheckpointKey, nilVal: true, part: "value", reason: ReasonNull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := tt.rawKey
			if tt.key != "" {
				key = unhex(t, tt.key)
			}
			var value []byte
			if !tt.nilVal {
				value = unhex(t, tt.value)
			}
			_, err := DecodeCheckpoint(key, value)
			var fe *FormatError
			require.True(t, errors.As(err, &fe), "error %v", err)
			require.Equal(t, "checkpoint", fe.Record)
			require.Equal(t, tt.part, fe.Part)
			require.Equal(t, tt.field, fe.Field)
			require.Equal(t, tt.reason, fe.Reason)
			require.NotEmpty(t, fe.Error())
		})
	}
}

func TestDecodeOffsetSyncMalformed(t *testing.T) {
	tests := []struct {
		name       string
		key, value string
		part       string
		reason     Reason
	}{
		{name: "key trailing bytes", key: specOffsetSyncKey + "ff", value: specOffsetSyncValue, part: "key", reason: ReasonTrailingBytes},
		{name: "key truncated", key: specOffsetSyncKey[:20], value: specOffsetSyncValue, part: "key", reason: ReasonTruncated},
		{name: "key negative length", key: "fffe" + specOffsetSyncKey[4:], value: specOffsetSyncValue, part: "key", reason: ReasonNegativeLength},
		{name: "value truncated", key: specOffsetSyncKey, value: specOffsetSyncValue[:30], part: "value", reason: ReasonTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeOffsetSync(unhex(t, tt.key), unhex(t, tt.value))
			var fe *FormatError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "offset sync", fe.Record)
			require.Equal(t, tt.part, fe.Part)
			require.Equal(t, tt.reason, fe.Reason)
		})
	}
}

func TestUnwrapConverted(t *testing.T) {
	raw := unhex(t, specCheckpointKey)
	b64 := base64.StdEncoding.EncodeToString(raw)
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{name: "json string", in: `"` + b64 + `"`, ok: true},
		{name: "schema envelope", in: `{"schema":{"type":"bytes","optional":false},"payload":"` + b64 + `"}`, ok: true},
		{name: "object without payload", in: `{"a":1}`},
		{name: "not base64", in: `"%%%"`},
		{name: "raw bytes", in: string(raw)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := unwrapConverted([]byte(tt.in))
			require.Equal(t, tt.ok, ok)
			if tt.ok {
				require.Equal(t, raw, got)
			}
		})
	}
}
