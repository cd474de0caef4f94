package mm2

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// filterOracle is testdata/filter-oracle.json, written by MirrorMaker 2's own DefaultGroupFilter
// and DefaultTopicFilter on a real JVM (make regex-goldens): what each decides per name for a
// configuration, or that it refuses the configuration.
type filterOracle struct {
	Filter  string   `json:"filter"`
	Include *string  `json:"include"`
	Exclude *string  `json:"exclude"`
	Names   []string `json:"names"`
	Java    struct {
		Replicate []bool  `json:"replicate"`
		Error     *string `json:"error"`
	} `json:"java"`
}

// TestFilterOracle: the group and topic filters decide as MirrorMaker 2's, through Connect's
// LIST parsing, the join with |, Java's regex and the whole-name match; a configuration
// MirrorMaker 2 refuses is never judged.
func TestFilterOracle(t *testing.T) {
	b, err := os.ReadFile("testdata/filter-oracle.json")
	require.NoError(t, err)
	var table struct {
		Cases []filterOracle `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &table))
	require.NotEmpty(t, table.Cases)
	for _, c := range table.Cases {
		name := c.Filter
		for _, s := range []*string{c.Include, c.Exclude} {
			if s == nil {
				name += " default"
			} else {
				name += " " + *s
			}
		}
		t.Run(name, func(t *testing.T) {
			conn := MM2Connector{Config: map[string]string{}}
			f := groupFilter
			inKey, exKey := GroupsKey, GroupsExcludeKey
			if c.Filter == "topic" {
				f, inKey, exKey = topicFilter, TopicsKey, TopicsExcludeKey
			}
			if c.Include != nil {
				conn.Config[inKey] = *c.Include
			}
			if c.Exclude != nil {
				conn.Config[exKey] = *c.Exclude
			}
			filter := f(conn)
			for i, n := range c.Names {
				v := filter.judge(n)
				if c.Java.Error != nil {
					require.Error(t, v.err, "MirrorMaker 2 refuses it: %s", *c.Java.Error)
					continue
				}
				require.NoError(t, v.err)
				require.Equal(t, c.Java.Replicate[i], v.passes, "%q", n)
			}
		})
	}
}
