package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offsetagent/offsetagent/events"
)

// TestChaos publishes requests (valid and invalid, several per connector) while agent
// processes are killed at random points of random requests and restarted and transient
// broker faults hit every kind of write, then checks that
// every request got exactly one result and Connect's topics hold exactly what the first valid
// request of each connector asked for. CHAOS_REQUESTS sets the size (make chaos: 150).
//
// Connectors that exist before the run (sources with offsets, sinks with a group) are the
// targets of some of the requests, which must fail with 409; half of the kills stop a request
// for one of them inside validate_config (its intent visible, its existence check not settled,
// or just after it), the window in which a rollback once deleted a live connector. At the end
// each of them is byte for byte what it was: config records, offsets, group entries.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	n := 24
	if s := os.Getenv("CHAOS_REQUESTS"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err)
		n = v
	}
	rng := rand.New(rand.NewPCG(42, uint64(n)))
	c := crashCluster(t)
	cfg := testConfig(c)
	cl := newClient(t, cfg)
	cl.createTopic(cfg.RequestTopic, 3)
	seedConnectTopics(t, cl, cfg)

	connectors := max(1, n/3)
	type want struct{ offset int }
	expected := map[string]want{} // connector -> offset of its first valid request
	ids := make([]string, 0, n)

	// Connectors that exist before the run, and what they hold.
	cl.createTopic("in", 2)
	var existing []crashCase
	for i := 0; i < max(2, n/12); i++ {
		existing = append(existing,
			crashCase{name: fmt.Sprintf("old-src-%d", i), existing: true, offsets: true},
			crashCase{name: fmt.Sprintf("old-sink-%d", i), sink: true, existing: true, offsets: true})
	}
	for _, cc := range existing {
		seedCrashCase(t, cl, cfg, cc)
	}
	seededConfigs, seededOffsets := cl.live(cfg.ConfigTopic), cl.live(cfg.OffsetsTopic)
	before := map[string]connectorState{}
	for _, cc := range existing {
		before[cc.name] = stateOf(t, cl, cfg, cc.name, seededConfigs, seededOffsets)
	}
	existingIDs := map[string]string{} // request id -> existing connector it targets

	for i := 0; i < n; i++ {
		if i%4 == 3 {
			// A create request for a connector that exists (with or without offsets).
			cc := existing[rng.IntN(len(existing))]
			cc.offsets = rng.IntN(2) == 0
			id := cl.publish(cc.body(), events.RequestOptions{})
			existingIDs[id] = cc.name
			ids = append(ids, id)
			continue
		}
		name := fmt.Sprintf("conn-%d", rng.IntN(connectors))
		pos := i + 1
		if rng.IntN(4) == 0 {
			pos = -1 // invalid: FileStream positions are non-negative
		}
		body := fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","file":"f","topic":"t"},
		  "initial_offsets":[{"partition":{"filename":"f"},"offset":{"position":%d}},{"partition":{"filename":"g"},"offset":{"position":%d}}]}`, name, pos, pos)
		if _, ok := expected[name]; !ok && pos >= 0 {
			expected[name] = want{offset: pos}
		}
		ids = append(ids, cl.publish(body, events.RequestOptions{}))
	}

	points := []string{"validate_config:claimed", "validate_config:intent", "after:validate_config", "after:validate_offsets",
		"mid:wipe_offsets", "after:wipe_offsets", "mid:write_offsets", "after:write_offsets", "mid:write_config",
		"after:write_config", "before:publish", "after:publish"}
	// The points of a request for an existing connector: it stops inside validate_config.
	existingPoints := []string{"validate_config:intent", "after:validate_config", "before:publish"}
	deadline := time.Now().Add(4 * time.Minute)
	kills := 0
	faults := 0
	for round := 0; round < n/4+2 && time.Now().Before(deadline); round++ {
		if c.fake != nil {
			// Transient broker faults on every kind of write, a few each round: the agent
			// must retry through them.
			fs := []kfake.Fault{
				produceFault(cfg.OffsetsTopic, kerr.NotLeaderForPartition, 1+rng.IntN(3)),
				produceFault(cfg.ConfigTopic, kerr.NotEnoughReplicas, 1+rng.IntN(2)),
				produceFault(cfg.ResultTopic, kerr.NotLeaderForPartition, 1+rng.IntN(2)),
				produceFault(cfg.IntentTopic, kerr.NotEnoughReplicas, 1),
				commitFault(cfg.GroupID, kerr.CoordinatorNotAvailable, 1),
			}
			c.fake.Fault(fs...)
			faults += len(fs)
		}
		point := points[rng.IntN(len(points))]
		if round%2 == 0 {
			point = existingPoints[rng.IntN(len(existingPoints))] + "@" + existing[rng.IntN(len(existing))].name
		}
		p := startProcess(t, cfg, point)
		done := make(chan int, 1)
		go func() { done <- p.wait(t, 2*time.Minute) }()
		select {
		case <-done:
			kills++
		case <-time.After(8 * time.Second):
			_ = p.cmd.Process.Kill() // SIGKILL while it works
			<-done
			kills++
		}
		dropKilled(t, cfg)
		if len(cl.allResults()) >= n {
			break
		}
	}
	final := startProcess(t, cfg, "")
	results := cl.waitResults(n, 3*time.Minute)
	_ = final.cmd.Process.Kill()

	perID := map[string]int{}
	for _, r := range results {
		perID[r.Data.RequestID]++
	}
	duplicates, lost := 0, 0
	for _, id := range ids {
		switch perID[id] {
		case 0:
			lost++
		case 1:
		default:
			duplicates += perID[id] - 1
		}
	}
	configs := cl.live(cfg.ConfigTopic)
	offsets := cl.live(cfg.OffsetsTopic)
	halfCreated, differing := 0, 0
	for name, w := range expected {
		if _, ok := configs["connector-"+name]; !ok {
			halfCreated++
			continue
		}
		for _, file := range []string{"f", "g"} {
			key := fmt.Sprintf(`[%q,{"filename":%q}]`, name, file)
			if offsets[key].Value != fmt.Sprintf(`{"position":%d}`, w.offset) {
				differing++
			}
		}
	}
	for key := range configs {
		if name, ok := strings.CutPrefix(key, "connector-"); ok {
			if _, want := expected[name]; !want && !strings.HasPrefix(name, "old-") {
				halfCreated++ // a connector no valid request asked for
			}
		}
	}
	live := 0
	for key := range offsets {
		if strings.HasPrefix(key, `["conn-`) {
			live++
		}
	}
	if live != 2*len(expected) {
		differing += abs(live - 2*len(expected))
	}
	// Every connector that existed before the run is what it was, and every request for one
	// failed with 409.
	harmed, recreated := 0, 0
	for _, cc := range existing {
		if !reflect.DeepEqual(before[cc.name], stateOf(t, cl, cfg, cc.name, configs, offsets)) {
			harmed++
			t.Logf("existing connector %s changed:\nbefore %+v\nafter  %+v", cc.name, before[cc.name], stateOf(t, cl, cfg, cc.name, configs, offsets))
		}
	}
	for _, r := range results {
		if _, ok := existingIDs[r.Data.RequestID]; ok && (r.Type != events.TypeCreateFailed || r.Data.ErrorCode != 409) {
			recreated++
		}
	}
	t.Logf("\n| requests | results | duplicate results | lost requests | half-created connectors | offsets differing | existing connectors changed | requests for existing ones not 409 | agent kills | broker fault rules |\n|---|---|---|---|---|---|---|---|---|---|\n| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |",
		n, len(results), duplicates, lost, halfCreated, differing, harmed, recreated, kills, faults)
	require.Equal(t, n, len(results))
	require.Zero(t, duplicates)
	require.Zero(t, lost)
	require.Zero(t, halfCreated)
	require.Zero(t, differing)
	require.Zero(t, harmed, "existing connectors changed")
	require.Zero(t, recreated, "requests for existing connectors that did not fail with 409")
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
