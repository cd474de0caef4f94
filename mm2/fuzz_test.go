package mm2

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

var reasons = []Reason{ReasonNull, ReasonTruncated, ReasonNegativeLength, ReasonOversizedLength,
	ReasonTrailingBytes, ReasonVersion, ReasonWrapped}

// checkFormatError fails unless err is a *FormatError with a known reason.
func checkFormatError(t *testing.T, err error) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %T is not a *FormatError: %v", err, err)
	}
	if !slices.Contains(reasons, fe.Reason) {
		t.Fatalf("unknown reason %q", fe.Reason)
	}
}

// FuzzDecodeCheckpoint: a decoded checkpoint encodes back to the same key and to a prefix of the
// value (values may carry trailing bytes); anything else is a *FormatError. The seed corpus is in
// testdata/fuzz/FuzzDecodeCheckpoint.
func FuzzDecodeCheckpoint(f *testing.F) {
	for _, kv := range [][2]string{{specCheckpointKey, specCheckpointValue}, {specCheckpointKeyDefault, specCheckpointValue}} {
		k, v := unhex(f, kv[0]), unhex(f, kv[1])
		f.Add(k, v)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, err := DecodeCheckpoint(key, value)
		if err != nil {
			checkFormatError(t, err)
			return
		}
		k, err := c.Key()
		if err != nil || !bytes.Equal(k, key) {
			t.Fatalf("key %x decoded to %+v, encodes to %x (%v)", key, c, k, err)
		}
		v, err := c.Value()
		if err != nil || !bytes.HasPrefix(value, v) {
			t.Fatalf("value %x decoded to %+v, encodes to %x (%v)", value, c, v, err)
		}
	})
}

// FuzzDecodeOffsetSync is FuzzDecodeCheckpoint for offset syncs.
func FuzzDecodeOffsetSync(f *testing.F) {
	f.Add(unhex(f, specOffsetSyncKey), unhex(f, specOffsetSyncValue))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s, err := DecodeOffsetSync(key, value)
		if err != nil {
			checkFormatError(t, err)
			return
		}
		k, _ := s.Key()
		v, _ := s.Value()
		if !bytes.Equal(k, key) || !bytes.HasPrefix(value, v) {
			t.Fatalf("%x/%x decoded to %+v, encodes to %x/%x", key, value, s, k, v)
		}
	})
}
