package handlers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/race"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// fastFamily generates source offsets of one connector family as request JSON: the i-th
// partition (unique per i) and offset, with values drawn by the generator.
type fastFamily struct {
	name   string
	class  string
	config map[string]string
	entry  func(g *offsetGen, i int) (partition, offset string)
}

func fastFamilies() []fastFamily {
	return []fastFamily{
		{name: "mm2 source", class: "org.apache.kafka.connect.mirror.MirrorSourceConnector",
			entry: func(g *offsetGen, i int) (string, string) {
				return g.object("cluster", g.str("src"), "topic", g.str(fmt.Sprintf("t-%d", i/7)), "partition", g.num(i%7)),
					g.object("offset", g.num(1000+i))
			}},
		{name: "mm2 checkpoint", class: "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
			entry: func(g *offsetGen, i int) (string, string) {
				return g.object("group", g.str(fmt.Sprintf("g-%d", i)), "topic", g.str("t"), "partition", g.num(0)),
					g.object("offset", g.num(0))
			}},
		{name: "mm2 heartbeat", class: "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
			entry: func(g *offsetGen, i int) (string, string) {
				return g.object("sourceClusterAlias", g.str(fmt.Sprintf("s-%d", i)), "targetClusterAlias", g.str("dst")),
					g.object("offset", g.num(0))
			}},
		{name: "filestream", class: "org.apache.kafka.connect.file.FileStreamSourceConnector",
			config: map[string]string{"file": "in.txt"},
			entry: func(g *offsetGen, i int) (string, string) {
				return g.object("filename", g.str(fmt.Sprintf("/data/f-\u00e9-%d.log", i))), g.object("position", g.num(30*i))
			}},
		{name: "filestream without file", class: "org.apache.kafka.connect.file.FileStreamSourceConnector",
			entry: func(g *offsetGen, i int) (string, string) {
				return g.object("filename", g.str(fmt.Sprintf("f-%d", i))), g.object("position", g.num(i))
			}},
		{name: "debezium sqlserver", class: "io.debezium.connector.sqlserver.SqlServerConnector",
			config: map[string]string{"topic.prefix": "srv"},
			entry: func(g *offsetGen, i int) (string, string) {
				lsn := fmt.Sprintf("%08x:%08x:%04x", 45, i, 3)
				return g.object("server", g.str("srv"), "database", g.str(fmt.Sprintf("db%d", i))),
					g.object("commit_lsn", g.str(lsn), "change_lsn", g.str(lsn), "event_serial_no", g.num(1))
			}},
		{name: "debezium sqlserver with database.names", class: "io.debezium.connector.sqlserver.SqlServerConnector",
			config: map[string]string{"topic.prefix": "srv", "database.names": "db1,db2,DB3"},
			entry: func(g *offsetGen, i int) (string, string) {
				return g.object("server", g.str("srv"), "database", g.str(fmt.Sprintf("db%d", 1+i%3))),
					g.object("commit_lsn", g.str("NULL"), "event_serial_no", g.num(i))
			}},
		{name: "jdbc (general path only)", class: "io.confluent.connect.jdbc.JdbcSourceConnector",
			entry: func(g *offsetGen, i int) (string, string) {
				return g.object("table", g.str(fmt.Sprintf("t%d", i))), g.object("incrementing", g.num(i))
			}},
		{name: "unknown class", class: "com.example.Unknown",
			entry: func(g *offsetGen, i int) (string, string) {
				return g.object("k", g.str(fmt.Sprintf("v%d", i)), "n", g.num(i)), g.object("o", g.num(i))
			}},
	}
}

// offsetGen writes JSON values; with left > 0, now and then (one value in every) one is
// replaced by an awkward one, or an object's keys are changed, left times at most.
type offsetGen struct {
	r     *rand.Rand
	left  int
	every int
}

func (g *offsetGen) chance() bool {
	if g.left > 0 && g.r.IntN(g.every) == 0 {
		g.left--
		return true
	}
	return false
}

var awkwardValues = []string{
	`-1`, `-0`, `1.0`, `1e2`, `99999999999999999999`, `-9223372036854775808`, `9223372036854775807`,
	`2147483648`, `true`, `null`, `"7"`, `""`, `{"a":1}`, `[1]`, `"caf\u00e9"`, `"tab\there"`, `"NULL"`,
	`"0000002d:00000b48:0003"`, `0`, `"src"`,
}

func (g *offsetGen) awkward() (string, bool) {
	if g.chance() {
		return awkwardValues[g.r.IntN(len(awkwardValues))], true
	}
	return "", false
}

func (g *offsetGen) str(s string) string {
	if v, ok := g.awkward(); ok {
		return v
	}
	b, _ := jsonString(s)
	return b
}

func (g *offsetGen) num(n int) string {
	if v, ok := g.awkward(); ok {
		return v
	}
	return fmt.Sprint(n)
}

// object writes the key/value pairs kv, now and then with a key dropped, renamed, added or
// moved when mutating.
func (g *offsetGen) object(kv ...string) string {
	if g.chance() {
		switch g.r.IntN(4) {
		case 0: // drop a key
			i := 2 * g.r.IntN(len(kv)/2)
			kv = slices.Delete(slices.Clone(kv), i, i+2)
		case 1: // rename a key
			kv = slices.Clone(kv)
			kv[2*g.r.IntN(len(kv)/2)] = "other"
		case 2: // add a key
			kv = append(slices.Clone(kv), "extra", `"x"`)
		case 3: // move the last key first
			kv = append(slices.Clone(kv[len(kv)-2:]), kv[:len(kv)-2]...)
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", kv[i], kv[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

func jsonString(s string) (string, error) {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r > 0x7f && r%2 == 0:
			fmt.Fprintf(&b, `\u%04x`, r) // some escaped, some not: the same decoded string
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// request builds a family's request body of n entries: valid ones, or with mutate, some
// awkward values and keys, null partitions or offsets and repeated partitions.
func (f fastFamily) request(r *rand.Rand, n int, mutate bool) []byte {
	g := &offsetGen{r: r, every: 4 * n}
	if mutate {
		g.left = 1 + r.IntN(2)
	}
	var b bytes.Buffer
	b.WriteString(`{"name":"c","config":{},"initial_offsets":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		p, o := f.entry(g, i)
		if mutate {
			switch r.IntN(4 * n) {
			case 0:
				p = "null"
			case 1:
				o = "null"
			case 2: // repeat an earlier partition
				p, _ = f.entry(&offsetGen{r: r}, r.IntN(i+1))
			}
		}
		fmt.Fprintf(&b, `{"partition":%s,"offset":%s}`, p, o)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// The fast path gives byte-identical records to the general one, or gives up so that the
// general one answers; sourceRecords (fast, then general) answers exactly as the general path
// does, records and errors alike, for fuzzed requests of every family.
func TestSourceFastPathMatchesGeneral(t *testing.T) {
	reg := connectors.Builtin()
	for _, f := range fastFamilies() {
		t.Run(f.name, func(t *testing.T) {
			class, _ := reg.Lookup(f.class)
			props := map[string]string{"connector.class": f.class, "name": "c"}
			for k, v := range f.config {
				props[k] = v
			}
			r := rand.New(rand.NewPCG(uint64(len(f.name)), 18))
			takesFastPath := class != nil && class.PerEntry && f.config["database.names"] == "" && f.name != "filestream without file"
			fast, failed := 0, 0
			// Under the race detector the families that take the fast path (and only they get
			// the large request whose records are encoded in parallel ranges) run fewer rounds.
			rounds := 40
			if takesFastPath {
				rounds = race.Rounds(40, 4)
			}
			for round := range rounds {
				n := fastPathMin + r.IntN(3*fastPathMin)
				if round == 0 && (takesFastPath || !race.Enabled) {
					n = encodeParallelMin + r.IntN(encodeParallelMin) // parallel ranges
					if race.Enabled {
						n = encodeParallelMin + r.IntN(256)
					}
				}
				took, refused := compareSourcePaths(t, class, props, f.request(r, n, round%2 == 1))
				if took {
					fast++
				}
				if refused {
					failed++
				}
			}
			t.Logf("%d of %d requests on the fast path, %d refused", fast, rounds, failed)
			if takesFastPath {
				require.Positive(t, fast, "no request took the fast path")
			} else {
				require.Zero(t, fast)
			}
			if !race.Enabled || takesFastPath { // the others' refusals come from the large request
				require.Positive(t, failed, "no request was refused")
			}
		})
	}
}

// compareSourcePaths runs the offsets of the request body through both paths and requires the
// same answer; it reports whether the fast path took the request and whether it was refused.
func compareSourcePaths(t *testing.T, class *connectors.Class, props map[string]string, body []byte) (took, refused bool) {
	t.Helper()
	req, err := events.ParseCreateRequest(body)
	require.NoError(t, err)
	entries := req.InitialOffsets
	want, wantErr := generalSourceRecords("c", class, props, slices.Clone(entries))
	got, ok := fastSourceRecords("c", class, props, slices.Clone(entries))
	took = ok
	if ok {
		require.NoError(t, wantErr, "the fast path accepted what the general path refuses")
		requireSameRecords(t, want, got)
	}
	both, err := sourceRecords("c", class, props, slices.Clone(entries))
	require.Equal(t, wantErr, err)
	requireSameRecords(t, want, both)

	// The same offsets as text (events.CreateRequest.RawOffsets), read in one range and in
	// three: the single pass's records are the general path's, and the text's entry point
	// answers as the general path does.
	raw := body[bytes.IndexByte(body, '[') : len(body)-1]
	for _, parts := range []int{1, 3} {
		got, rawOK := rawSourceRecords("c", class, props, raw, rawRanges(1, parts))
		if rawOK {
			require.NoError(t, wantErr, "the single pass (%d ranges) accepted what the general path refuses", parts)
			requireSameRecords(t, want, got)
		}
		took = took || rawOK
	}
	for _, parts := range []int{1, 3} {
		enc, rawOK := rawSourceBatches("c", class, props, raw, rawRanges(1, parts), 7)
		if rawOK {
			require.NoError(t, wantErr, "the single pass into batches (%d ranges) accepted what the general path refuses", parts)
			requireSameBatches(t, want, enc)
		}
	}
	fromText, enc, err := sourceRecordsFromText("c", class, props, raw, 0)
	require.Equal(t, wantErr, err)
	require.Nil(t, enc)
	requireSameRecords(t, want, fromText)
	requireSameFromText(t, want, wantErr, class, props, raw, 7)
	return took, wantErr != nil
}

// FuzzSourceFastPath is TestSourceFastPathMatchesGeneral driven by the fuzzer: a family, a
// seed for the generator, a size and whether to mutate.
func FuzzSourceFastPath(f *testing.F) {
	f.Add(uint8(0), uint64(1), uint16(10), true)
	f.Add(uint8(5), uint64(2), uint16(100), true)
	f.Add(uint8(3), uint64(3), uint16(0), false)
	fams := fastFamilies()
	reg := connectors.Builtin()
	f.Fuzz(func(t *testing.T, family uint8, seed uint64, extra uint16, mutate bool) {
		fam := fams[int(family)%len(fams)]
		class, _ := reg.Lookup(fam.class)
		props := map[string]string{"connector.class": fam.class, "name": "c"}
		for k, v := range fam.config {
			props[k] = v
		}
		r := rand.New(rand.NewPCG(seed, 18))
		compareSourcePaths(t, class, props, fam.request(r, fastPathMin+int(extra%512), mutate))
	})
}

func requireSameRecords(t *testing.T, want, got []offsetstore.Record) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, string(want[i].Key), string(got[i].Key), "record %d key", i)
		require.Equal(t, string(want[i].Value), string(got[i].Value), "record %d value", i)
		require.Equal(t, want[i].Partition, got[i].Partition, "record %d partition", i)
	}
}

// requireSameBatches requires enc to hold the records of want (records of the general path),
// each in its partition among enc.Partitions(), in want's order within each partition.
func requireSameBatches(t *testing.T, want []offsetstore.Record, enc *offsetstore.Encoded) {
	t.Helper()
	n := enc.Partitions()
	byPartition := slices.Clone(want)
	for i := range byPartition {
		byPartition[i].Partition = offsetstore.PartitionFor(byPartition[i].Key, n)
	}
	slices.SortStableFunc(byPartition, func(a, b offsetstore.Record) int { return a.Partition - b.Partition })
	requireSameRecords(t, byPartition, enc.Records())
}

// requireSameFromText requires the text's entry point, asked for batches of partitions, to
// answer as the general path does (want, wantErr), with records or batches.
func requireSameFromText(t *testing.T, want []offsetstore.Record, wantErr error, class *connectors.Class, props map[string]string, raw []byte, partitions int) {
	t.Helper()
	recs, enc, err := sourceRecordsFromText("c", class, props, raw, partitions)
	require.Equal(t, wantErr, err)
	if enc != nil {
		require.Nil(t, recs)
		require.Equal(t, partitions, enc.Partitions())
		requireSameBatches(t, want, enc)
		return
	}
	requireSameRecords(t, want, recs)
}
