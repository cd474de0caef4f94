package plan

import (
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/strimzi"
)

// kubernetesTarget is target, a name on B, made a KafkaConnector name (the operator names a
// connector after its resource), and the warning of a rename ("" when it is one already).
func kubernetesTarget(target string) (string, string) {
	k := strimzi.KubernetesName(target)
	if k == target {
		return target, ""
	}
	return k, fmt.Sprintf("named %s on B: %q is not a Kubernetes resource name, and the operator names a connector after its KafkaConnector", k, target)
}

// refuseExisting gives a Problem (409) to each connector of the plan that exists on B, as B's config
// topic holds it now, with another config than its manifest declares (ConfigOnB, the config
// on B every check judges: the edit flags, and a sink's MirrorMaker 2 topic names and
// restoring transform; then declared, the config with its secrets referenced in the Secret,
// nil leaving it as it is): applying the manifest would replace that connector's config (the
// operator updates an existing connector with PUT .../config), and an offsets-only request
// would be refused anyway. A connector whose manifest cannot be declared (a secret that cannot
// be referenced) gets that Problem. Every selected connector is checked, with or without
// offsets on A, before anything is stopped on A. A connector that exists with the config of
// its manifest (one applied already) goes on.
func refuseExisting(cs []*Connector, onB map[string]map[string]string, declared func(string, events.Config) (events.Config, error)) {
	for _, pc := range cs {
		c := pc.Connector
		if !c.Problem.IsZero() {
			continue
		}
		cfg := pc.OnB
		if declared != nil {
			d, err := declared(pc.Target, cfg)
			if err != nil {
				c.Problem = fleet.Textf("its KafkaConnector manifest cannot be written: %v", err)
				continue
			}
			cfg = d
		}
		have, ok := onB[pc.Target]
		if !ok {
			continue
		}
		if diff := strimzi.Conflict(have, cfg); len(diff) > 0 {
			c.Problem = fleet.Textf("409 Connector %s already exists on B with another config (%s): its manifest would replace that config; "+
				"delete the connector on B first, or give this one another name (%s)", pc.Target, strings.Join(diff, ", "), fleet.Rename)
		}
	}
}
