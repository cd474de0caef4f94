package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
)

// Config is the agent's configuration. cmd/offsetagent fills it from the environment with
// go-envconfig; tests build it directly. Validate never dials. A field whose zero value
// means its default but which cannot be zero carries a nonzero tag (the reason): the
// environment setting its variable to zero is refused there, where it is known that the
// zero was given rather than left unset.
type Config struct {
	// Brokers are the bootstrap brokers (default localhost:9092).
	Brokers []string `env:"OFFSETAGENT_BROKERS, default=localhost:9092"`
	// RequestTopic is where request events arrive (default connect-offset-requests).
	RequestTopic string `env:"OFFSETAGENT_REQUEST_TOPIC, default=connect-offset-requests"`
	// ResultTopic is where result events go (default connect-offset-results).
	ResultTopic string `env:"OFFSETAGENT_RESULT_TOPIC, default=connect-offset-results"`
	// GroupID is the consumer group shared by all agent replicas (default offsetagent).
	GroupID string `env:"OFFSETAGENT_GROUP_ID, default=offsetagent"`
	// IntentTopic is the agent's own compacted topic of in-flight requests, used to roll back
	// a request interrupted by a crash (default connect-offset-intents).
	IntentTopic string `env:"OFFSETAGENT_INTENT_TOPIC, default=connect-offset-intents"`
	// ConfigTopic is Connect's config.storage.topic (default connect-configs).
	ConfigTopic string `env:"OFFSETAGENT_CONFIG_TOPIC, default=connect-configs"`
	// OffsetsTopic is Connect's offset.storage.topic (default connect-offsets).
	OffsetsTopic string `env:"OFFSETAGENT_OFFSETS_TOPIC, default=connect-offsets"`
	// CreateConnectTopics creates Connect's internal topics with Connect's own settings when
	// they are missing (default false: a missing topic is a startup error).
	CreateConnectTopics bool `env:"OFFSETAGENT_CREATE_CONNECT_TOPICS, default=false"`
	// RequestTopicPartitions is the partition count used when the agent creates its request
	// topic (default 6). It bounds how many replicas share the work.
	RequestTopicPartitions int `env:"OFFSETAGENT_REQUEST_TOPIC_PARTITIONS, default=6"`
	// HTTPAddr serves /metrics, /healthz and /readyz (default :8080).
	HTTPAddr string `env:"OFFSETAGENT_HTTP_ADDR, default=:8080"`
	// Pprof exposes /debug/pprof on HTTPAddr (default false).
	Pprof bool `env:"OFFSETAGENT_PPROF, default=false"`
	// LogLevel is debug, info, warn or error (default info).
	LogLevel string `env:"OFFSETAGENT_LOG_LEVEL, default=info"`
	// LogFormat is json or text (default json).
	LogFormat string `env:"OFFSETAGENT_LOG_FORMAT, default=json"`
	// Concurrency bounds how many connectors are worked on at once (default 128). Requests for
	// one connector always run one after another.
	Concurrency int `env:"OFFSETAGENT_CONCURRENCY, default=128"`
	// MaxRequestBytes bounds a request record's value (default 16 MiB).
	MaxRequestBytes int `env:"OFFSETAGENT_MAX_REQUEST_BYTES, default=16777216"`
	// MaxInflightBytes bounds the memory of the requests held at once, from their fetch to the
	// end of their processing (default 32 MiB): a request counts 4 times its record's size,
	// what it holds while it is decoded, encoded and planned. Fetching pauses at the bound, so
	// large requests wait for each other (a request of 8 MiB or more runs alone) while small
	// ones run up to Concurrency. Zero (a field left unset) means the default
	// (InflightBound); the variable set to 0 is refused (nonzero), as any bound below 1024
	// bytes is: it would read as "no bound" and be the default without a word.
	MaxInflightBytes int64 `env:"OFFSETAGENT_MAX_INFLIGHT_BYTES, default=33554432" nonzero:"it bounds the memory of the requests held at once, at least 1024 bytes"`
	// RequestCompression is the codec offsetagent's own publishers (the publish and migrate
	// commands) compress request records with: none, gzip, snappy, lz4 or zstd (default
	// events.DefaultRequestCompression, snappy). The agent reads requests of every codec.
	RequestCompression events.Compression `env:"OFFSETAGENT_REQUEST_COMPRESSION"`
	// ShutdownTimeout bounds how long in-flight requests may take to finish on SIGTERM (default 30s).
	ShutdownTimeout time.Duration `env:"OFFSETAGENT_SHUTDOWN_TIMEOUT, default=30s"`
	// ResultReserve is the time a request's writes leave before its giveup (the giveup
	// extension: when its sender stops waiting and reports it failed) for its result to go
	// out (default 5s; at most half the sender's grace, the giveup less the deadline): a
	// write acknowledged later is rolled back and the request answered 408. Zero (a field
	// left unset) means the default; the variable set to 0 is refused (nonzero): no reserve
	// at all would publish the result of a write that ended at the giveup after its sender
	// reported the request failed.
	ResultReserve time.Duration `env:"OFFSETAGENT_RESULT_RESERVE, default=5s" nonzero:"a request's result needs time to go out before its giveup"`
	// SessionTimeout is the consumer group session timeout: how long a replica that died is
	// waited for before its partitions move (default 10s). Zero (a field left unset) means the
	// default (sessionTimeout); the variable set to 0 is refused (nonzero): Kafka's group
	// coordinator refuses a session below its group.min.session.timeout.ms (6s by default).
	SessionTimeout time.Duration `env:"OFFSETAGENT_SESSION_TIMEOUT, default=10s" nonzero:"Kafka's group coordinator refuses a session timeout below group.min.session.timeout.ms (6s by default)"`
	// PermissionCheckInterval is how often the agent asks the brokers whether it may still
	// read and write its topics and its group (default 15s): /readyz is 503 while one of
	// those permissions is missing. Zero (a field left unset) means the default; the variable
	// set to 0 is refused (nonzero): the checks cannot stop, for only a later check sees a
	// permission granted again (a refused write of the agent's own asks for one at once), and
	// without one /readyz would stay 503 for good.
	PermissionCheckInterval time.Duration `env:"OFFSETAGENT_PERMISSION_CHECK_INTERVAL, default=15s" nonzero:"only a later check sees a permission granted again, and without one /readyz would stay 503 for good"`
	// StuckAfter is how long a lane may work on one request before /readyz reports the
	// replica not ready (default 5m; 0 turns the check off).
	StuckAfter time.Duration `env:"OFFSETAGENT_STUCK_AFTER, default=5m"`
	// DedupeWindow is how long a request's result is remembered, so that a redelivered request
	// is not run again (default 168h; 0: no time bound, DedupeMaxEntries alone bounds it). The
	// result topic's retention should be at least as long.
	DedupeWindow time.Duration `env:"OFFSETAGENT_DEDUPE_WINDOW, default=168h"`
	// DedupeMaxEntries bounds the same memory by count (default 1000000, about 100 MB at most;
	// 0: no count bound, DedupeWindow alone bounds it).
	DedupeMaxEntries int `env:"OFFSETAGENT_DEDUPE_MAX_ENTRIES, default=1000000"`
	// AllowedSources, when set, lists the CloudEvent sources whose requests are accepted;
	// others get a failed result with error_code 403.
	AllowedSources []string `env:"OFFSETAGENT_ALLOWED_SOURCES"`
	// AllowedOffsetsTopics is a regexp that a connector's offsets.storage.topic must match
	// (default: only OffsetsTopic itself).
	AllowedOffsetsTopics string `env:"OFFSETAGENT_ALLOWED_OFFSETS_TOPICS"`
	// AllowedGroups lists Go regexps, each matched against a whole consumer group id: a sink
	// request may only wipe and rewrite a group one of them matches (default connect-.*,
	// Connect's own sink groups). It bounds what consumer.override.group.id can reach.
	AllowedGroups []string `env:"OFFSETAGENT_ALLOWED_GROUPS, default=connect-.*"`
	// ConnectURL, when set, is a Connect REST URL used to validate configs (optional).
	ConnectURL string `env:"OFFSETAGENT_CONNECT_URL"`
	// ConnectorsManagedBy names who creates the Connect cluster's connectors when it is not the
	// agent: "strimzi" (the operator with KafkaConnector resources) makes every request place
	// the offsets only, refuses requests for the connector itself and names that no
	// KafkaConnector can have (default: empty, the agent creates connectors).
	ConnectorsManagedBy handlers.Manager `env:"OFFSETAGENT_CONNECTORS_MANAGED_BY"`
	// ConnectConfig is a properties file with the ConnectURL client's settings: basic auth
	// (basic.auth.user.info) and TLS (ssl.truststore.*, ssl.keystore.* of type PEM,
	// ssl.endpoint.identification.algorithm); see clientconfig.ParseConnectConfig (optional).
	ConnectConfig string `env:"OFFSETAGENT_CONNECT_CONFIG"`
	// ConnectUserInfo is user:password for basic auth to ConnectURL, an alternative to
	// basic.auth.user.info in ConnectConfig (optional).
	ConnectUserInfo string `env:"OFFSETAGENT_CONNECT_USER_INFO"`
	// CommandConfig is a Kafka client properties file (what `kafka-*.sh --command-config`
	// reads) with the SASL and TLS settings to the brokers, an alternative to the
	// OFFSETAGENT_SASL_* and OFFSETAGENT_TLS_* variables (optional). cmd/offsetagent reads it
	// into Security and refuses it together with those variables (Validate cannot tell where
	// Security's values came from, so it does not judge that).
	CommandConfig string `env:"OFFSETAGENT_COMMAND_CONFIG"`
	// Security configures SASL and TLS to the brokers.
	Security clientconfig.Security
}

// defaultPermissionCheckInterval is PermissionCheckInterval when it is zero.
const defaultPermissionCheckInterval = 15 * time.Second

// defaultSessionTimeout is SessionTimeout when it is zero.
const defaultSessionTimeout = 10 * time.Second

// defaultMaxInflightBytes is MaxInflightBytes when it is zero.
const defaultMaxInflightBytes = 32 << 20

// InflightBound is the memory bound of the requests held at once: MaxInflightBytes, or its
// default when it is zero.
func (c *Config) InflightBound() int64 {
	if c.MaxInflightBytes == 0 {
		return defaultMaxInflightBytes
	}
	return c.MaxInflightBytes
}

// sessionTimeout is SessionTimeout, or its default when it is zero.
func (c *Config) sessionTimeout() time.Duration {
	if c.SessionTimeout == 0 {
		return defaultSessionTimeout
	}
	return c.SessionTimeout
}

// Validate reports every invalid setting at once.
func (c *Config) Validate() error {
	var errs []error
	errs = c.checkRequired(errs)
	errs = c.checkLogging(errs)
	errs = c.checkLimits(errs)
	errs = c.checkPatterns(errs)
	errs = c.checkSecurity(errs)
	return errors.Join(errs...)
}

// checkRequired appends to errs the brokers and topic and group names that are missing.
func (c *Config) checkRequired(errs []error) []error {
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("OFFSETAGENT_BROKERS: at least one broker is required"))
	}
	for _, f := range []struct{ name, value string }{
		{"OFFSETAGENT_REQUEST_TOPIC", c.RequestTopic}, {"OFFSETAGENT_RESULT_TOPIC", c.ResultTopic},
		{"OFFSETAGENT_GROUP_ID", c.GroupID}, {"OFFSETAGENT_CONFIG_TOPIC", c.ConfigTopic},
		{"OFFSETAGENT_OFFSETS_TOPIC", c.OffsetsTopic}, {"OFFSETAGENT_INTENT_TOPIC", c.IntentTopic},
	} {
		if strings.TrimSpace(f.value) == "" {
			errs = append(errs, fmt.Errorf("%s: must not be empty", f.name))
		}
	}
	return errs
}

// checkLogging appends to errs an invalid log level or format.
func (c *Config) checkLogging(errs []error) []error {
	// The logger is cmd's, but its settings are judged with the others, so that a wrong one is
	// not found only after the others are fixed. Empty is the default.
	if c.LogLevel != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
			errs = append(errs, fmt.Errorf("OFFSETAGENT_LOG_LEVEL: %q, must be debug, info, warn or error", c.LogLevel))
		}
	}
	if c.LogFormat != "" && c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_LOG_FORMAT: %q, must be json or text", c.LogFormat))
	}
	return errs
}

// checkLimits appends to errs the sizes, counts and durations out of their range.
func (c *Config) checkLimits(errs []error) []error {
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_CONCURRENCY: %d, must be at least 1", c.Concurrency))
	}
	if c.MaxRequestBytes < 1024 {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_MAX_REQUEST_BYTES: %d, must be at least 1024", c.MaxRequestBytes))
	}
	if c.MaxInflightBytes != 0 && c.MaxInflightBytes < 1024 {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_MAX_INFLIGHT_BYTES: %d, must be at least 1024", c.MaxInflightBytes))
	}
	if _, err := c.RequestCompression.Codec(); err != nil {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_REQUEST_COMPRESSION: %w", err))
	}
	if c.SessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_SESSION_TIMEOUT: %s, must not be negative", c.SessionTimeout))
	}
	if c.ResultReserve < 0 {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_RESULT_RESERVE: %s, must not be negative", c.ResultReserve))
	}
	if c.PermissionCheckInterval < 0 {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_PERMISSION_CHECK_INTERVAL: %s, must not be negative", c.PermissionCheckInterval))
	}
	if c.StuckAfter < 0 {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_STUCK_AFTER: %s, must not be negative", c.StuckAfter))
	}
	if c.DedupeWindow < 0 || c.DedupeMaxEntries < 0 {
		errs = append(errs, errors.New("OFFSETAGENT_DEDUPE_WINDOW and OFFSETAGENT_DEDUPE_MAX_ENTRIES must not be negative"))
	}
	if c.RequestTopicPartitions < 1 {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_REQUEST_TOPIC_PARTITIONS: %d, must be at least 1", c.RequestTopicPartitions))
	}
	return errs
}

// checkPatterns appends to errs the patterns and names that do not parse.
func (c *Config) checkPatterns(errs []error) []error {
	if c.AllowedOffsetsTopics != "" {
		if _, err := regexp.Compile(c.AllowedOffsetsTopics); err != nil {
			errs = append(errs, fmt.Errorf("OFFSETAGENT_ALLOWED_OFFSETS_TOPICS: %w", err))
		}
	}
	if _, err := c.GroupsPattern(); err != nil {
		errs = append(errs, err)
	}
	if _, err := handlers.ParseManager(string(c.ConnectorsManagedBy)); err != nil {
		errs = append(errs, fmt.Errorf("OFFSETAGENT_CONNECTORS_MANAGED_BY: %w", err))
	}
	return errs
}

// checkSecurity appends to errs the SASL, Connect REST and TLS settings that are incomplete or refused.
func (c *Config) checkSecurity(errs []error) []error {
	switch c.Security.SASLMechanism {
	case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		errs = append(errs, fmt.Errorf("OFFSETAGENT_SASL_MECHANISM: %q, must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.Security.SASLMechanism))
	}
	if c.Security.SASLMechanism != "" && c.Security.SASLUsername == "" {
		errs = append(errs, errors.New("OFFSETAGENT_SASL_USERNAME: required with OFFSETAGENT_SASL_MECHANISM"))
	}
	if c.ConnectURL == "" && (c.ConnectConfig != "" || c.ConnectUserInfo != "") {
		errs = append(errs, errors.New("OFFSETAGENT_CONNECT_CONFIG and OFFSETAGENT_CONNECT_USER_INFO: set without OFFSETAGENT_CONNECT_URL"))
	}
	if (c.Security.TLSCertFile == "") != (c.Security.TLSKeyFile == "") {
		errs = append(errs, errors.New("OFFSETAGENT_TLS_CERT_FILE and OFFSETAGENT_TLS_KEY_FILE: set both or neither"))
	}
	return errs
}

// OffsetsTopicPattern returns the compiled AllowedOffsetsTopics, defaulting to exactly OffsetsTopic.
func (c *Config) OffsetsTopicPattern() (*regexp.Regexp, error) {
	if c.AllowedOffsetsTopics == "" {
		return regexp.Compile("^" + regexp.QuoteMeta(c.OffsetsTopic) + "$")
	}
	return regexp.Compile("^(?:" + c.AllowedOffsetsTopics + ")$")
}

// DefaultAllowedGroups is AllowedGroups when it is empty: the groups Connect gives sink
// connectors (connect-<name>).
const DefaultAllowedGroups = "connect-.*"

// GroupsPattern returns AllowedGroups as one regexp that matches a whole group id when one of
// the patterns does (default DefaultAllowedGroups). Blank entries are ignored.
func (c *Config) GroupsPattern() (*regexp.Regexp, error) {
	var alts []string
	for _, p := range c.AllowedGroups {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("OFFSETAGENT_ALLOWED_GROUPS: %w", err)
		}
		alts = append(alts, "(?:"+p+")")
	}
	if len(alts) == 0 {
		alts = []string{DefaultAllowedGroups}
	}
	return regexp.Compile("^(?:" + strings.Join(alts, "|") + ")$")
}
