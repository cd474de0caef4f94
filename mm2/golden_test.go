package mm2

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldens is testdata/mm2-goldens.json, written by MirrorMaker 2's own classes
// (tools/oracle/RecordsOracle.java, make goldens).
type goldens struct {
	Checkpoints []struct {
		Checkpoint
		Key, Value string
	} `json:"checkpoints"`
	OffsetSyncs []struct {
		OffsetSync
		Key, Value string
	} `json:"offset_syncs"`
	JavaDecodes []struct {
		Record, Name, Key, Value string
		Java                     struct {
			Accepts bool `json:"java_accepts"`
		}
	} `json:"java_decodes"`
	Policies []struct {
		Kind              PolicyKind        `json:"kind"`
		Separator         string            `json:"separator"`
		InternalSeparator bool              `json:"internal_separator"`
		Checkpoints       string            `json:"checkpoints"`
		OffsetSyncs       string            `json:"offset_syncs"`
		Remote            map[string]string `json:"remote"`
	} `json:"policies"`
}

func loadGoldens(t *testing.T) goldens {
	t.Helper()
	b, err := os.ReadFile("testdata/mm2-goldens.json")
	require.NoError(t, err)
	var g goldens
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.Checkpoints)
	return g
}

func TestGoldenCheckpoints(t *testing.T) {
	g := loadGoldens(t)
	for _, c := range g.Checkpoints {
		t.Run(c.Group+"/"+c.Topic, func(t *testing.T) {
			key, err := c.Checkpoint.Key()
			require.NoError(t, err)
			value, err := c.Checkpoint.Value()
			require.NoError(t, err)
			require.Equal(t, c.Key, hex.EncodeToString(key))
			require.Equal(t, c.Value, hex.EncodeToString(value))
			got, err := DecodeCheckpoint(key, value)
			require.NoError(t, err)
			require.Equal(t, c.Checkpoint, got)
		})
	}
	for _, s := range g.OffsetSyncs {
		t.Run(s.Topic, func(t *testing.T) {
			key, _ := s.OffsetSync.Key()
			value, _ := s.OffsetSync.Value()
			require.Equal(t, s.Key, hex.EncodeToString(key))
			require.Equal(t, s.Value, hex.EncodeToString(value))
			got, err := DecodeOffsetSync(key, value)
			require.NoError(t, err)
			require.Equal(t, s.OffsetSync, got)
		})
	}
}

// TestGoldenJavaDecodes: the Go readers accept what Java accepts, except where
// docs/mirrormaker2.md, "Primitive encodings" and "Checkpoint records" ask for more care than Java
// takes: trailing key bytes and value versions other than 0, which Java
// reads (the second one wrongly).
func TestGoldenJavaDecodes(t *testing.T) {
	stricter := map[string]Reason{"key trailing bytes": ReasonTrailingBytes, "value version 1": ReasonVersion}
	for _, d := range loadGoldens(t).JavaDecodes {
		t.Run(d.Record+"/"+d.Name, func(t *testing.T) {
			var err error
			if d.Record == "checkpoint" {
				_, err = DecodeCheckpoint(unhex(t, d.Key), unhex(t, d.Value))
			} else {
				_, err = DecodeOffsetSync(unhex(t, d.Key), unhex(t, d.Value))
			}
			if reason, ok := stricter[d.Name]; ok {
				require.True(t, d.Java.Accepts)
				var fe *FormatError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, reason, fe.Reason)
				return
			}
			require.Equal(t, d.Java.Accepts, err == nil, "%v", err)
		})
	}
}

func TestGoldenPolicies(t *testing.T) {
	for _, p := range loadGoldens(t).Policies {
		pol := Policy{Kind: p.Kind, SourceAlias: "A", TargetAlias: "B", Separator: p.Separator, InternalSeparatorDisabled: !p.InternalSeparator}
		t.Run(string(p.Kind)+p.Separator, func(t *testing.T) {
			require.Equal(t, p.Checkpoints, pol.CheckpointsTopic())
			require.Equal(t, p.OffsetSyncs, pol.OffsetSyncsTopic("B"))
			for topic, want := range p.Remote {
				require.Equal(t, want, pol.RemoteTopic(topic), topic)
			}
		})
	}
}
