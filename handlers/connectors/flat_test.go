package connectors

import (
	"math/rand/v2"
	"slices"

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
	// Every byte value in every place of a valid LSN.
	for _, lsn := range []string{"0000002d:00000b48:0003", "FFFFffff:aAbBcCdD:9eF0"} {
		for at := range len(lsn) {
			for c := range 256 {
				b := []byte(lsn)
				b[at] = byte(c)
				require.Equal(t, sqlServerLsn.MatchString(string(b)), isSQLServerLsn(string(b)), "%q", b)
			}
		}
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

// flatKeyPool and flatValuePool are what TestCheckFlatKeysMatchesCheckFlat builds entries of.
var (
	flatKeyPool = []string{"server", "database", "server_id", "commit_lsn", "change_lsn", "event_serial_no",
		"snapshot", "transaction_id", "transaction_data_collection_order_db.t", "incremental_snapshot_primary_key", "other"}
	flatValuePool = []FlatField{
		{Text: "srv"}, {Text: "db1"}, {Text: "DB1"}, {Text: "0000002d:00000b48:0003"}, {Text: "NULL"},
		{Text: "0000002d:00000b48:003"}, {Text: "1", Long: true}, {Text: "-7", Long: true}, {Text: "true"},
		{Text: "INITIAL"}, {Text: "false"}, {Text: ""},
	}
)

// CheckFlatKeys, made once for a key sequence, answers every entry with those keys as
// CheckFlat does, for every class that has both, under configs with and without the logical
// name and database.names.
func TestCheckFlatKeysMatchesCheckFlat(t *testing.T) {
	configs := []map[string]string{
		{},
		{"topic.prefix": "srv"},
		{"topic.prefix": "other"},
		{"database.server.name": "srv"},
		{"topic.prefix": "srv", "database.names": "db1, db2"},
		{"database.names": "  "},
	}
	r := rand.New(rand.NewPCG(18, 3))
	pick := func(n int) []string {
		keys := slices.Clone(flatKeyPool)
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		return keys[:n]
	}
	fill := func(keys []string) []FlatField {
		fs := make([]FlatField, len(keys))
		for i, k := range keys {
			fs[i] = flatValuePool[r.IntN(len(flatValuePool))]
			fs[i].Key = k
		}
		return fs
	}
	for _, class := range Builtin().Classes() {
		if class.CheckFlatKeys == nil {
			continue
		}
		require.NotNil(t, class.CheckFlat, class.Name)
		for _, config := range configs {
			check, checkFor := class.CheckFlat(config), class.CheckFlatKeys(config)
			yes := 0
			for range 400 {
				// Partition keys are mostly a key set the class takes.
				pkeys := []string{"server", "database"}
				switch r.IntN(4) {
				case 0:
					pkeys = []string{"server"}
				case 1:
					pkeys = pick(1 + r.IntN(3))
				case 2:
					pkeys = []string{"database", "server"}
				}
				okeys := pick(1 + r.IntN(5))
				keyed := checkFor(pkeys, okeys)
				for range 20 {
					p, o := fill(pkeys), fill(okeys)
					if r.IntN(2) == 0 {
						for i := range p {
							p[i].Text, p[i].Long = "srv", false
						}
					}
					want := check(p, o)
					if want {
						yes++
					}
					require.Equal(t, want, keyed(p, o), "%s %v: %+v %+v", class.Name, config, p, o)
				}
			}
			if config["topic.prefix"] != "other" {
				require.Positive(t, yes, "%s %v: no entry passed: the test misses the interesting half", class.Name, config)
			}
		}
	}
}

// hex8 marks every byte value, at every place among hex digits, as the digits' table does.
func TestHex8(t *testing.T) {
	isHex := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
	for _, bg := range []byte{'0', '9', 'a', 'f', 'A', 'F'} {
		for c := range 256 {
			for at := range 8 {
				var x uint64
				for i := range 8 {
					b := bg
					if i == at {
						b = byte(c)
					}
					x |= uint64(b) << (8 * i)
				}
				require.Equal(t, isHex(byte(c)), hex8(x), "byte %#x at %d among %q", c, at, bg)
			}
		}
	}
}
