package offsetstore

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenAssignment is an assignment as testdata/golden/ConnectGroupVectors.java prints what
// Connect's own deserializer read back from the bytes.
type goldenAssignment struct {
	Version           int16        `json:"version"`
	Error             int16        `json:"error"`
	Leader            string       `json:"leader"`
	LeaderURL         string       `json:"leader_url"`
	ConfigOffset      int64        `json:"config_offset"`
	Connectors        []string     `json:"connectors"`
	Tasks             []goldenTask `json:"tasks"`
	RevokedConnectors []string     `json:"revoked_connectors"`
	RevokedTasks      []goldenTask `json:"revoked_tasks"`
	Delay             int32        `json:"delay"`
}

type goldenTask struct {
	Connector string `json:"connector"`
	Task      int32  `json:"task"`
}

func (g *goldenAssignment) assignment() *WorkerAssignment {
	if g == nil {
		return nil
	}
	tasks := func(ts []goldenTask) []TaskID {
		var out []TaskID
		for _, t := range ts {
			out = append(out, TaskID(t))
		}
		return out
	}
	names := func(ns []string) []string {
		if len(ns) == 0 {
			return nil
		}
		return ns
	}
	return &WorkerAssignment{Version: g.Version, Error: g.Error, Leader: g.Leader, LeaderURL: g.LeaderURL, ConfigOffset: g.ConfigOffset,
		Connectors: names(g.Connectors), Tasks: tasks(g.Tasks), RevokedConnectors: names(g.RevokedConnectors), RevokedTasks: tasks(g.RevokedTasks),
		Delay: g.Delay}
}

type workerGroupGoldens struct {
	KafkaVersion string `json:"kafka_version"`
	Assignments  []struct {
		Name, Protocol, Hex string
		Decoded             goldenAssignment
	} `json:"assignments"`
	Metadata []struct {
		Name, Protocol, Hex string
		Decoded             struct {
			Version      int16             `json:"version"`
			URL          string            `json:"url"`
			ConfigOffset int64             `json:"config_offset"`
			Allocation   *goldenAssignment `json:"allocation"`
		}
	} `json:"metadata"`
}

// TestWorkerGroupGoldens decodes the assignments and worker metadata that Connect's own classes
// serialized (testdata/connect-group-goldens.json, made by testdata/golden/ConnectGroupVectors.java
// on the real tier's jars; the real tier's TestConnectGroupGoldens checks they still are what
// Connect makes) and compares with what Connect's own deserializers read from the same bytes.
func TestWorkerGroupGoldens(t *testing.T) {
	data, err := os.ReadFile("testdata/connect-group-goldens.json")
	require.NoError(t, err)
	var g workerGroupGoldens
	require.NoError(t, json.Unmarshal(data, &g))
	require.NotEmpty(t, g.Assignments)
	require.NotEmpty(t, g.Metadata)
	versions := map[int16]bool{}
	for _, c := range g.Assignments {
		b, err := hex.DecodeString(c.Hex)
		require.NoError(t, err, c.Name)
		got, err := DecodeWorkerAssignment(b)
		require.NoError(t, err, c.Name)
		require.Equal(t, c.Decoded.assignment(), got, c.Name)
		versions[got.Version] = true
	}
	require.Equal(t, map[int16]bool{0: true, 1: true, 2: true}, versions, "every version of the protocol has goldens")
	for _, c := range g.Metadata {
		b, err := hex.DecodeString(c.Hex)
		require.NoError(t, err, c.Name)
		got, err := DecodeWorkerMetadata(b)
		require.NoError(t, err, c.Name)
		require.Equal(t, WorkerMetadata{Version: c.Decoded.Version, URL: c.Decoded.URL, ConfigOffset: c.Decoded.ConfigOffset,
			Allocation: c.Decoded.Allocation.assignment()}, got, c.Name)
	}
}

// TestWorkerAssignmentRefused: bytes that are not an assignment Connect would read, or of a
// version after the known ones, are an error, never an empty assignment.
func TestWorkerAssignmentRefused(t *testing.T) {
	full, err := hex.DecodeString("00020000000c636f6e6e6563742d312d3961000f687474703a2f2f77323a383038332f000000000000002a0000000100076d64622d63646300000001000000000000000000000000")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"a consumer group's assignment", []byte{0, 0, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, "ends early"},
		{"a version after the known ones", append([]byte{0, 3}, full[2:]...), "protocol version 3"},
		{"a negative version", append([]byte{0xff, 0xff}, full[2:]...), "protocol version -1"},
		{"cut in the leader's name", full[:10], "ends early"},
		{"cut in the assignment", full[:len(full)-20], "ends early"},
		{"an array longer than the bytes", append(append([]byte{}, full[:43]...), 0x7f, 0xff, 0xff, 0xff), "array of"},
		{"a name that is not UTF-8", []byte{0, 0, 0, 0, 0, 2, 0xc3, 0x28}, "not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := DecodeWorkerAssignment(tc.b)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, a)
		})
	}
	a, err := DecodeWorkerAssignment(nil)
	require.NoError(t, err)
	require.Nil(t, a, "no assignment shown")
}

// TestWorkerHolds: with the incremental protocols a worker runs what it held when it joined,
// less what the round revokes, plus what it assigns; with the eager one, the assignment.
func TestWorkerHolds(t *testing.T) {
	held := &WorkerAssignment{Version: 2, Connectors: []string{"a", "b"}, Tasks: []TaskID{{"a", 0}, {"b", 0}}}
	for _, tc := range []struct {
		name      string
		m         WorkerMetadata
		a         *WorkerAssignment
		wantConns []string
		wantTasks []TaskID
	}{
		{"eager: the assignment", WorkerMetadata{}, &WorkerAssignment{Connectors: []string{"x"}, Tasks: []TaskID{{"x", 1}}}, []string{"x"}, []TaskID{{"x", 1}}},
		{"incremental, nothing new: what it held", WorkerMetadata{Version: 2, Allocation: held}, &WorkerAssignment{Version: 2},
			[]string{"a", "b"}, []TaskID{{"a", 0}, {"b", 0}}},
		{"incremental: less revoked, plus assigned", WorkerMetadata{Version: 2, Allocation: held},
			&WorkerAssignment{Version: 2, Connectors: []string{"c"}, RevokedConnectors: []string{"a"}, RevokedTasks: []TaskID{{"b", 0}}},
			[]string{"b", "c"}, []TaskID{{"a", 0}}},
		{"not shown: what it held", WorkerMetadata{Version: 1, Allocation: held}, nil, []string{"a", "b"}, []TaskID{{"a", 0}, {"b", 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ts := WorkerHolds(tc.m, tc.a)
			require.Equal(t, tc.wantConns, c)
			require.Equal(t, tc.wantTasks, ts)
		})
	}
}
