package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// isSQLServerLsn answers as the regular expression it replaces on the single pass.
func TestIsSQLServerLsn(t *testing.T) {
	for _, s := range []string{
		"NULL", "null", "0000002d:00000b48:0003", "0000002D:00000B48:0003", "0000002d:00000b48:003",
		"0000002d:00000b48:00030", "0000002d-00000b48:0003", "0000002g:00000b48:0003", "", "NULL\n",
		"0000002d:00000b48:0003\n", " 0000002d:00000b48:0003", "0000002d:0000:0b48:0003",
		"0000002d:00000b48:000:", ":0000002d:00000b4:0003", "fFfFfFfF:aAaAaAaA:9090",
	} {
		require.Equal(t, sqlServerLsn.MatchString(s), isSQLServerLsn(s), "%q", s)
	}
}

func FuzzIsSQLServerLsn(f *testing.F) {
	f.Add("0000002d:00000b48:0003")
	f.Add("NULL")
	f.Fuzz(func(t *testing.T, s string) {
		if sqlServerLsn.MatchString(s) != isSQLServerLsn(s) {
			t.Fatalf("%q: regexp %v, isSQLServerLsn %v", s, sqlServerLsn.MatchString(s), isSQLServerLsn(s))
		}
	})
}
