package target

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// Target says where B is: its brokers, the agents' request and result topics and B's Connect
// topics (checked before anything is published).
type Target struct {
	Brokers      []string
	RequestTopic string
	ResultTopic  string
	ConfigTopic  string
	OffsetsTopic string
	// Transport and Dialer carry SASL/TLS; nil means none.
	Transport *kafka.Transport
	Dialer    *kafka.Dialer
	// Principal describes who Transport authenticates as on B (clientconfig.Security.Principal),
	// for the messages of refused permissions.
	Principal string
	// AgentGroup is the consumer group of B's agents (their OFFSETAGENT_GROUP_ID): when no
	// agent is found on the request topic, a refused Describe of it is named (Kafka lists
	// only the groups the principal may Describe). "" for none.
	AgentGroup string
	// ConnectURL is B's Connect REST API, optional: used by the prechecks only.
	ConnectURL string
	// HTTPClient calls B's Connect REST API, with B's credentials and TLS settings (A's are in
	// Options.HTTPClient); nil means a client with a 30 s timeout.
	HTTPClient *http.Client
	// Compression is the codec requests are published with (default
	// events.DefaultRequestCompression).
	Compression events.Compression
	// RequireAgent refuses the migration when no agent consumes RequestTopic (without it,
	// a warning: the requests wait for an agent until the run's timeout).
	RequireAgent bool
	// MaxRequestBytes is the largest request record B's agents take, their
	// OFFSETAGENT_MAX_REQUEST_BYTES (default 16 MiB): a connector whose request is larger
	// fails at publish_request, alone.
	MaxRequestBytes int
}

// B is B once its prechecks passed: its Kafka cluster's id, and its Connect REST API
// (nil without Target.ConnectURL), where the hazard checks look up B's plugins and the giveup
// asks for a connector.
type B struct {
	ClusterID string
	REST      *connectrest.Client
	// Connect is what GET / answered on B's Connect REST API (zero without it): B's Connect
	// version and commit, which a plan records.
	Connect connectrest.RootInfo
}

// Open runs the checks of B before anything is stopped or published: B reachable,
// the principal allowed every operation the run does on B's topics (the config topic's are
// configOps, the state topic's stateOps; the agents' group is checkAgents'), B's Connect
// topics and the agents' topics exist with Connect's settings, B not the Connect cluster a
// is (A, by its identity), the agents consuming the request topic serve B's Connect cluster,
// publish to the result topic and accept source, the requests' (checkAgents). Warnings go to
// logger.
func Open(ctx context.Context, to Target, a fleet.Cluster, configOps []string, stateOps kafkaio.TopicOps, source string, logger *slog.Logger) (*B, error) {
	cl := kafkaio.NewClient(kafkaio.Options{Brokers: to.Brokers, Transport: to.Transport, Principal: to.Principal})
	cl.Timeout = 30 * time.Second
	clusterB, err := kafkaio.ClusterID(ctx, cl)
	if err != nil {
		return nil, fleet.Precheckf("B's Kafka cluster is unreachable: %v", err)
	}
	// Every permission of the run on B, asked before anything is stopped on A: a Write on the
	// request topic refused only at publishing would leave A's connectors stopped.
	if err := kafkaio.RequireTopicOps(ctx, cl, to.Principal, []kafkaio.TopicOps{
		{Topic: to.ConfigTopic, Ops: configOps},
		{Topic: to.OffsetsTopic, Ops: []string{kafkaio.OpDescribe}},
		{Topic: to.RequestTopic, Ops: []string{kafkaio.OpWrite}},
		{Topic: to.ResultTopic, Ops: []string{kafkaio.OpRead}},
		stateOps,
	}); err != nil {
		return nil, fleet.Precheckf("B: %v", err)
	}
	if err := offsetstore.CheckConnectTopics(ctx, cl, to.ConfigTopic, to.OffsetsTopic, false); err != nil {
		return nil, fleet.Precheckf("B's Connect topics: %v", err)
	}
	for _, t := range []string{to.RequestTopic, to.ResultTopic} {
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{t}})
		if err == nil && (len(md.Topics) == 0 || md.Topics[0].Error != nil) {
			err = fmt.Errorf("topic %q not found: is an agent running on B?", t)
		}
		if err != nil {
			return nil, fleet.Precheckf("B's agent topics: %v", err)
		}
	}
	if a.ConfigTopic != "" && a.KafkaClusterID == clusterB && a.ConfigTopic == to.ConfigTopic {
		return nil, fleet.Precheckf("A and B are the same Connect cluster (Kafka cluster %q, config topic %q)", a.KafkaClusterID, to.ConfigTopic)
	}
	warnings, err := checkAgents(ctx, cl, to, clusterB, source, to.RequireAgent)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		fleet.Warn(logger, w)
	}
	b := &B{ClusterID: clusterB}
	if to.ConnectURL == "" {
		return b, nil
	}
	restB, err := connectrest.New(to.ConnectURL, to.HTTPClient)
	if err != nil {
		return nil, fleet.Precheckf("%s: %v", fleet.ToConnectURL, err)
	}
	rootB, err := restB.Root(ctx)
	if err != nil {
		return nil, fleet.Precheckf("GET / on B: %v", err)
	}
	b.REST, b.Connect = restB, rootB
	if a.ConnectURL == "" {
		return b, nil
	}
	if strings.TrimRight(to.ConnectURL, "/") == strings.TrimRight(a.ConnectURL, "/") ||
		(a.Connect.KafkaClusterID == rootB.KafkaClusterID && a.ConfigTopic != "" && a.ConfigTopic == to.ConfigTopic) {
		return nil, fleet.Precheckf("A and B are the same Connect cluster (%s, Kafka cluster %q)", connectrest.Redact(to.ConnectURL), rootB.KafkaClusterID)
	}
	return b, nil
}
