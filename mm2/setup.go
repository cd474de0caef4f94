package mm2

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/javaregex"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/internal/wording"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// MirrorMaker 2's settings that decide whether a group gets checkpoints (DefaultGroupFilter,
// MirrorCheckpointConfig, MirrorConnectorConfig), as keys of a connector's config. In a dedicated
// MirrorMaker 2's mm2.properties each is written behind the flow, "<source>-><target>.<key>".
const (
	GroupsKey           = "groups"
	GroupsExcludeKey    = "groups.exclude"
	EmitCheckpointsKey  = "emit.checkpoints.enabled"
	EmitOffsetSyncsKey  = "emit.offset-syncs.enabled" // Kafka 3.9+ (KIP-1031)
	EnabledKey          = "enabled"
	GroupFilterClassKey = "group.filter.class"
	// groups.exclude's former name, deprecated by KIP-629 and removed in Kafka 4.0.
	groupsBlacklistKey = "groups.blacklist"
)

// MM2's defaults of the settings above: every group, but Connect sink groups (connect-<name>),
// console consumers and internal groups. connect-.* has been excluded since MM2's first release.
const (
	DefaultGroups        = ".*"
	DefaultGroupsExclude = "console-consumer-.*, connect-.*, __.*"
)

// StrimziConfigTopic is the config topic of the Connect cluster a Strimzi KafkaMirrorMaker2 runs
// its connectors on (on the target cluster), unless its spec names another.
const StrimziConfigTopic = "mirrormaker2-cluster-configs"

// DedicatedConfigTopic is the config topic a dedicated MirrorMaker 2 (connect-mirror-maker.sh)
// keeps, on the target cluster, for the flow from the cluster with alias sourceAlias
// (MirrorMakerConfig's "mm2-configs.<source>.internal").
func DedicatedConfigTopic(sourceAlias string) string {
	return "mm2-configs." + sourceAlias + ".internal"
}

func isDedicatedTopic(topic string) bool {
	return strings.HasPrefix(topic, "mm2-configs.") && strings.HasSuffix(topic, ".internal")
}

// MM2Connector is one of MirrorMaker 2's connectors of the flow from A, as found in a config
// topic on B.
type MM2Connector struct {
	Name  string
	Topic string
	// Dedicated: found in a dedicated MirrorMaker 2's config topic, whose settings are written
	// in mm2.properties, not on the connector.
	Dedicated bool
	// Config is the connector's config as stored; only the settings above are ever quoted.
	Config map[string]string
	// Status is the connector's status on the Connect REST API of the cluster it runs on, when
	// the caller read it (ReadSetup does not); StatusUnread then says why it was not, in the
	// caller's words (a Text, which may name a setting of its run).
	Status       *ConnectorStatus
	StatusUnread wording.Text
}

// ConnectorStatus is a connector's status as Connect's REST API gives it
// (GET /connectors/{name}/status).
type ConnectorStatus struct {
	Connector struct {
		State string `json:"state"`
		Trace string `json:"trace,omitempty"`
	} `json:"connector"`
	Tasks []TaskStatus `json:"tasks"`
}

// TaskStatus is one task's status in a ConnectorStatus.
type TaskStatus struct {
	ID    int    `json:"id"`
	State string `json:"state"`
	Trace string `json:"trace,omitempty"`
}

// Setup is what B shows of MirrorMaker 2's configuration for the flow from A.
type Setup struct {
	// Checkpoint and Source are the MirrorCheckpointConnectors and MirrorSourceConnectors
	// whose source.cluster.alias is A's alias (and target.cluster.alias B's, when known).
	Checkpoint, Source []MM2Connector
	// Looked says, per topic read, what was found there or why it could not be read.
	Looked []string
}

// setupReadTimeout bounds the read of one config topic.
const setupReadTimeout = 15 * time.Second

// ReadSetup reads MirrorMaker 2's connector configs for the flow of policy from the Connect
// config topics named on cluster b. A topic that does not exist or cannot be read is noted in
// Looked, not an error: B may hold MM2's configuration anywhere, or nowhere the caller may read.
func ReadSetup(ctx context.Context, b kafkaio.Options, topics []string, policy Policy) Setup {
	var s Setup
	seen := map[string]bool{}
	for _, topic := range topics {
		if topic == "" || seen[topic] {
			continue
		}
		seen[topic] = true
		rctx, cancel := context.WithTimeout(ctx, setupReadTimeout)
		configs, err := offsetstore.ReadConnectorConfigs(rctx, b, topic)
		cancel()
		switch {
		case errors.Is(err, kafka.UnknownTopicOrPartition):
			s.Looked = append(s.Looked, fmt.Sprintf("%s: no such topic", topic))
			continue
		case err != nil:
			s.Looked = append(s.Looked, fmt.Sprintf("%s: not readable (%v)", topic, err))
			continue
		}
		names := make([]string, 0, len(configs))
		for name := range configs {
			names = append(names, name)
		}
		sort.Strings(names)
		found := 0
		for _, name := range names {
			cfg := configs[name]
			if strings.TrimSpace(cfg["source.cluster.alias"]) != policy.SourceAlias {
				continue
			}
			if ta := strings.TrimSpace(cfg["target.cluster.alias"]); policy.TargetAlias != "" && ta != "" && ta != policy.TargetAlias {
				continue
			}
			c := MM2Connector{Name: name, Topic: topic, Dedicated: isDedicatedTopic(topic), Config: cfg}
			switch class := strings.TrimSpace(cfg["connector.class"]); {
			case strings.HasSuffix(class, "MirrorCheckpointConnector"):
				s.Checkpoint = append(s.Checkpoint, c)
				found++
			case strings.HasSuffix(class, "MirrorSourceConnector"):
				s.Source = append(s.Source, c)
				found++
			}
		}
		s.Looked = append(s.Looked, fmt.Sprintf("%s: %d MirrorMaker 2 connectors of source alias %s", topic, found, policy.SourceAlias))
	}
	return s
}

// Known reports whether B showed MM2's checkpoint connector for the flow.
func (s Setup) Known() bool { return len(s.Checkpoint) > 0 }

// setting is the value of key in c's config and whether it is set (a deprecated name counts).
func (c MM2Connector) setting(key string, deprecated ...string) (string, bool) {
	for _, k := range append([]string{key}, deprecated...) {
		if v, ok := c.Config[k]; ok {
			return v, true
		}
	}
	return "", false
}

// disabled reports whether boolean setting key is false (Connect parses booleans ignoring case).
func (c MM2Connector) disabled(key string) bool {
	v, ok := c.setting(key)
	return ok && strings.EqualFold(strings.TrimSpace(v), "false")
}

// without returns the entries of list that match none of names on their own (an entry that
// is not a pattern of its own is kept).
func without(list []string, names ...string) []string {
	var out []string
	for _, e := range list {
		re, err := javaregex.Compile(e)
		if err == nil && slices.ContainsFunc(names, func(n string) bool { m, err := re.Matches(n); return err == nil && m }) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// where names c for a message: the connector, and the topic its config was read from.
func (c MM2Connector) where() string {
	if c.Dedicated {
		return fmt.Sprintf("dedicated MirrorMaker 2's %s (config topic %s on B)", c.Name, c.Topic)
	}
	return fmt.Sprintf("MirrorMaker 2's connector %q (config topic %s on B)", c.Name, c.Topic)
}

// flowPrefix is the prefix of a flow's settings in mm2.properties: "<source>-><target>.".
func flowPrefix(policy Policy, cfg map[string]string) string {
	target := strings.TrimSpace(cfg["target.cluster.alias"])
	if target == "" {
		target = policy.TargetAlias
	}
	if target == "" {
		target = "<target alias>"
	}
	return policy.SourceAlias + "->" + target + "."
}

// fixFor says how to set key to value in both of MM2's deployments: on the connector named
// (class when unknown), or in mm2.properties behind the flow's prefix. c is nil when MM2's
// configuration was not read.
func fixFor(policy Policy, c *MM2Connector, class, key, value string) string {
	var cfg map[string]string
	if c != nil {
		cfg = c.Config
	}
	onConnector := fmt.Sprintf("set %s = %s on the %s", key, value, class)
	if c != nil && !c.Dedicated {
		onConnector += fmt.Sprintf(" %q", c.Name)
	}
	dedicated := fmt.Sprintf("%s%s = %s in mm2.properties (dedicated MirrorMaker 2, connect-mirror-maker.sh)", flowPrefix(policy, cfg), key, value)
	switch {
	case c == nil:
		return onConnector + " (MirrorMaker 2 run as connectors on a Connect cluster), or " + dedicated
	case c.Dedicated:
		return "set " + dedicated
	default:
		return onConnector + " (or, were MirrorMaker 2 dedicated, " + dedicated + ")"
	}
}
