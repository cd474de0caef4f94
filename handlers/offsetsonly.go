package handlers

import (
	"fmt"
	"regexp"

	"github.com/offsetagent/offsetagent/events"
)

// Manager names who creates a Connect cluster's connectors when it is not the agent.
type Manager string

// Managers.
const (
	// ManagerNone: the agent creates connectors (the default).
	ManagerNone Manager = ""
	// ManagerStrimzi: the Strimzi operator, with strimzi.io/use-connector-resources: "true" on
	// the KafkaConnect resource, owns the connector list. At every reconciliation it lists
	// the worker's connectors and deletes, through the REST API, each one that no
	// KafkaConnector resource declares (AbstractConnectOperator.reconcileConnectors), so a
	// connector that the agent creates is deleted minutes later while its offsets stay. The
	// agent then places offsets only, and the operator creates the connector from its
	// resource: POST /connectors without offsets starts it at the offsets placed.
	ManagerStrimzi Manager = "strimzi"
)

// ParseManager reads OFFSETAGENT_CONNECTORS_MANAGED_BY.
func ParseManager(s string) (Manager, error) {
	switch m := Manager(s); m {
	case ManagerNone, ManagerStrimzi:
		return m, nil
	}
	return "", fmt.Errorf("connectors managed by %q: expected %q or nothing", s, ManagerStrimzi)
}

// createMode settles what a request creates from its "create" field and the agent's
// ManagedBy: true for the offsets only. A request that asks for the connector on a cluster
// whose connectors an operator manages is refused (400), since the operator would delete the
// connector; so is one for the offsets only that carries none, and, on a Strimzi cluster, one
// whose name no KafkaConnector resource can have (the operator names the connector after its
// resource's metadata.name, so offsets under any other name would never be read).
func (c *Creator) createMode(name string, d *events.CreateRequest) (offsetsOnly bool, err error) {
	switch d.Create {
	case "":
		offsetsOnly = c.opts.ManagedBy != ManagerNone
	case events.CreateOffsetsOnly:
		offsetsOnly = true
	case events.CreateConnector:
		if c.opts.ManagedBy != ManagerNone {
			return false, badRequest(fmt.Sprintf("this Connect cluster's connectors are managed by %s (OFFSETAGENT_CONNECTORS_MANAGED_BY), "+
				"which deletes every connector no resource of its declares: send \"create\": %q and declare the connector in a KafkaConnector resource",
				c.opts.ManagedBy, events.CreateOffsetsOnly))
		}
	default:
		return false, badRequest(fmt.Sprintf("create must be %q or %q, got %q", events.CreateConnector, events.CreateOffsetsOnly, d.Create))
	}
	if c.opts.ManagedBy == ManagerStrimzi && !IsKubernetesName(name) {
		return false, badRequest(fmt.Sprintf("connector name %q is not a Kubernetes resource name (lowercase letters, digits, '-' and '.', "+
			"starting and ending with a letter or digit, at most 253 characters): the Strimzi operator names a connector after its KafkaConnector "+
			"resource, so no connector of this cluster can have it", name))
	}
	if offsetsOnly && !d.HasInitialOffsets {
		return false, badRequest(fmt.Sprintf("create %q needs initial_offsets (an empty list clears the connector's offsets): there is nothing else to place", events.CreateOffsetsOnly))
	}
	return offsetsOnly, nil
}

// offsetsOnlyNext is the "next" of an offsets-only result: what must happen for the connector
// to start at the offsets placed.
func offsetsOnlyNext(name, state string, m Manager) string {
	how := "POST /connectors on the Connect cluster, without initial_offsets"
	if m == ManagerStrimzi {
		how = fmt.Sprintf("a KafkaConnector resource named %s with the label strimzi.io/cluster, applied for the Strimzi operator to create", name)
	}
	return fmt.Sprintf("create connector %s with this config (%s), in state %s: it starts at the offsets placed. "+
		"Until it exists the offsets stay where they are, and a later request for %s replaces them.", name, how, state, name)
}

// kubernetesName is a DNS-1123 subdomain, what Kubernetes requires of a custom resource's
// metadata.name.
var kubernetesName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// IsKubernetesName reports whether name can be a KafkaConnector resource's metadata.name.
func IsKubernetesName(name string) bool {
	return len(name) <= 253 && kubernetesName.MatchString(name)
}
