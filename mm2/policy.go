package mm2

import (
	"errors"
	"fmt"
	"strings"

	"github.com/offsetagent/offsetagent/internal/javaregex"
)

// PolicyKind names a MirrorMaker 2 replication policy (replication.policy.class).
type PolicyKind string

// The replication policies MirrorMaker 2 ships.
const (
	// PolicyDefault is DefaultReplicationPolicy: A's "orders" is "<alias><sep>orders" on B.
	PolicyDefault PolicyKind = "default"
	// PolicyIdentity is IdentityReplicationPolicy: A's "orders" stays "orders" on B.
	PolicyIdentity PolicyKind = "identity"
)

// DefaultSeparator is replication.policy.separator's default.
const DefaultSeparator = "."

// heartbeatsTopic is MM2's heartbeats topic; the identity policy still prefixes its copies
// (IdentityReplicationPolicy.looksLikeHeartbeat).
const heartbeatsTopic = "heartbeats"

// Policy is how MirrorMaker 2 names the source cluster's topics on the target cluster, and its
// internal topics (docs/mirrormaker2.md, "Topic renaming", "The checkpoints topic" and "The
// offset-syncs topic").
type Policy struct {
	// Kind is the replication policy; "" means PolicyDefault.
	Kind PolicyKind
	// SourceAlias is the source cluster's alias in MM2's configuration (A).
	SourceAlias string
	// TargetAlias is the target cluster's alias (B). Optional: when set, a topic that came from
	// the target originally ("B.orders" on A) goes back to its original name, as MM2 does.
	TargetAlias string
	// Separator is replication.policy.separator; "" means DefaultSeparator.
	Separator string
	// InternalSeparatorDisabled is replication.policy.internal.topic.separator.enabled=false:
	// internal topic names then use "." whatever the separator.
	InternalSeparatorDisabled bool
}

// Validate checks the policy without dialing.
func (p Policy) Validate() error {
	var errs []error
	if p.kind() != PolicyDefault && p.kind() != PolicyIdentity {
		errs = append(errs, fmt.Errorf("unknown replication policy %q (want %q or %q)", p.Kind, PolicyDefault, PolicyIdentity))
	}
	if p.SourceAlias == "" {
		errs = append(errs, errors.New("no source cluster alias"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("replication policy: %w", err)
	}
	return nil
}

func (p Policy) kind() PolicyKind {
	if p.Kind == "" {
		return PolicyDefault
	}
	return p.Kind
}

func (p Policy) sep() string {
	if p.Separator == "" {
		return DefaultSeparator
	}
	return p.Separator
}

func (p Policy) internalSep() string {
	if p.InternalSeparatorDisabled {
		return "."
	}
	return p.sep()
}

// CheckpointsTopic is the checkpoints topic on the target: "<alias>.checkpoints.internal" with
// the internal separator (DefaultReplicationPolicy.checkpointsTopic; the identity policy does
// not override it).
func (p Policy) CheckpointsTopic() string {
	s := p.internalSep()
	return p.SourceAlias + s + "checkpoints" + s + "internal"
}

// OffsetSyncsTopic is "mm2-offset-syncs<sep><otherAlias><sep>internal": with MM2's default
// offset-syncs.topic.location=source it is on the source cluster and otherAlias is the target's
// alias; with location=target it is on the target and otherAlias is the source's (docs/mirrormaker2.md,
// "The offset-syncs topic").
func (p Policy) OffsetSyncsTopic(otherAlias string) string {
	s := p.internalSep()
	return "mm2-offset-syncs" + s + otherAlias + s + "internal"
}

// RemoteTopic is the name of the source cluster's topic on the target cluster
// (MirrorCheckpointTask.renameTopicPartition).
func (p Policy) RemoteTopic(topic string) string {
	if src, ok := p.topicSource(topic); ok && p.TargetAlias != "" && src == p.TargetAlias {
		return p.originalTopic(topic)
	}
	return p.formatRemote(topic)
}

// UpstreamTopic is RemoteTopic's inverse for what MM2 copies: the name on the source cluster
// of a target's topic that is a copy of one of the source's, and true; false for a topic the
// policy does not name as a copy of the source's (a topic of the target itself, or of a third
// cluster). The default policy formats a copy's name as "<alias><sep><topic>", so a name that
// begins so is a copy of the rest (A.orders of orders, A.x.y of x.y, with a dotted alias
// too); the identity policy keeps every name (orders is orders), the heartbeats topics aside,
// which it formats as the default policy does. It cannot tell a copy from a topic of the
// target and says true.
//
// RemoteTopic also sends a topic of the source that came from the target back to its
// original name (B.orders on A is orders on B) for checkpoints: that maps a group's offsets,
// not records, since MM2 never copies such a topic back (its cycle check). Its records went
// the other way, so it is no copy of the source's and UpstreamTopic answers false for it;
// Reverse().RemoteTopic names its copy on the source.
func (p Policy) UpstreamTopic(topic string) (string, bool) {
	if p.kind() == PolicyIdentity && !strings.HasSuffix(topic, heartbeatsTopic) {
		return topic, true
	}
	up, ok := strings.CutPrefix(topic, p.RemotePrefix())
	if !ok || up == "" {
		return "", false
	}
	return up, true
}

// Reverse is the policy of a MirrorMaker 2 flow the other way, from the target to the source,
// with the same kind and separators: its source alias is p's target alias. It needs
// TargetAlias.
func (p Policy) Reverse() (Policy, error) {
	if p.TargetAlias == "" {
		return Policy{}, errors.New("replication policy: the reverse flow needs the target cluster's alias")
	}
	r := p
	r.SourceAlias, r.TargetAlias = p.TargetAlias, p.SourceAlias
	return r, nil
}

func (p Policy) formatRemote(topic string) string {
	if p.kind() == PolicyIdentity && !strings.HasSuffix(topic, heartbeatsTopic) {
		return topic
	}
	return p.SourceAlias + p.sep() + topic
}

// topicSource is the alias a topic name says it came from; false for none (Java's null).
func (p Policy) topicSource(topic string) (string, bool) {
	if p.kind() == PolicyIdentity {
		// IdentityReplicationPolicy.topicSource answers source.cluster.alias for every topic
		// (heartbeats aside), which is never the target: renaming never goes back.
		if strings.HasSuffix(topic, heartbeatsTopic) {
			return p.defaultTopicSource(topic)
		}
		return p.SourceAlias, true
	}
	return p.defaultTopicSource(topic)
}

// defaultTopicSource is DefaultReplicationPolicy.topicSource: the first part of the name split
// at the separator as Java splits it (javaSplit), when it has two parts or more; false (null)
// otherwise. The source may be empty: ".orders" came from "".
func (p Policy) defaultTopicSource(topic string) (string, bool) {
	parts := javaSplit(topic, p.sep())
	if len(parts) < 2 {
		return "", false
	}
	return parts[0], true
}

// upstreamTopic is DefaultReplicationPolicy.upstreamTopic: the name after "<source><sep>";
// false (null) for a name without a source.
func (p Policy) upstreamTopic(topic string) (string, bool) {
	src, ok := p.defaultTopicSource(topic)
	if !ok {
		return "", false
	}
	return topic[len(src)+len(p.sep()):], true
}

// originalTopic is ReplicationPolicy.originalTopic with the default policy: the upstream topic,
// again and again, until a name has none (or is its own upstream).
func (p Policy) originalTopic(topic string) string {
	for {
		up, ok := p.upstreamTopic(topic)
		if !ok || up == topic {
			return topic
		}
		topic = up
	}
}

// javaSplit splits s around sep as Java's String.split(Pattern.quote(sep)) does (limit 0): a
// string without sep is one part (the empty string too); otherwise the parts between the
// matches, leftmost first, with a leading empty part kept and every trailing empty part
// dropped. "B." is ["B"], "B..orders" is ["B", "", "orders"], ".orders" is ["", "orders"], and
// "." is [].
func javaSplit(s, sep string) []string {
	if !strings.Contains(s, sep) {
		return []string{s}
	}
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// Config keys a topic rename touches (SinkConnectorConfig).
const (
	TopicsKey      = "topics"
	TopicsRegexKey = "topics.regex"
)

// ConfigRewrite says what RewriteConfig changed in a sink connector's config.
type ConfigRewrite struct {
	// Topics maps each topic of `topics` to its name on the target.
	Topics map[string]string `json:"topics,omitempty"`
	// RegexFrom and RegexTo are `topics.regex` before and after; RegexTo is "" when the regex
	// was left as it was.
	RegexFrom string `json:"topics_regex_from,omitempty"`
	RegexTo   string `json:"topics_regex_to,omitempty"`
	// RegexNote flags a rewritten or unchanged `topics.regex`: a regex is checked against the
	// renamed topics by nobody but the operator.
	RegexNote string `json:"topics_regex_note,omitempty"`
}

// RewriteConfig returns a copy of a sink connector's config with `topics` renamed name by name
// (RewriteTopics) and `topics.regex` rewritten to match the renamed topics (RewriteTopicsRegex),
// or RewriteTopicsRegex's error. Everything else, the dead letter queue topic
// (errors.deadletterqueue.topic.name) included, stays as it is: the DLQ is written on the
// target and is no mirrored topic. A caller holding the config in order calls the two
// functions on its entries instead.
func (p Policy) RewriteConfig(cfg map[string]string) (map[string]string, ConfigRewrite, error) {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		out[k] = v
	}
	var rw ConfigRewrite
	if topics, ok := cfg[TopicsKey]; ok {
		out[TopicsKey], rw.Topics = p.RewriteTopics(topics)
	}
	if re, ok := cfg[TopicsRegexKey]; ok && re != "" {
		rw.RegexFrom = re
		rewritten, note, err := p.RewriteTopicsRegex(re)
		if err != nil {
			return nil, ConfigRewrite{}, err
		}
		rw.RegexNote = note
		if rewritten != re {
			rw.RegexTo, out[TopicsRegexKey] = rewritten, rewritten
		}
	}
	return out, rw, nil
}

// RewriteTopics renames every topic of a `topics` value (Connect's LIST: trimmed, split on
// commas with the spaces around them) and returns the new value and the renames.
func (p Policy) RewriteTopics(value string) (string, map[string]string) {
	var renamed []string
	var renames map[string]string
	for _, t := range splitList(value) {
		r := p.RemoteTopic(t)
		if renames == nil {
			renames = map[string]string{}
		}
		renames[t] = r
		renamed = append(renamed, r)
	}
	return strings.Join(renamed, ","), renames
}

// RemotePrefix is what the policy puts before the name of a topic it renames on the target,
// "<alias><sep>": every topic under the default policy, only the heartbeats topics under the
// identity policy. A topic that came from the target alias originally goes back to its
// original name instead (RemoteTopic).
func (p Policy) RemotePrefix() string {
	return p.SourceAlias + p.sep()
}

// RewriteTopicsRegex returns a `topics.regex` that matches the renamed topics of the ones re
// matches, and a note for the report, or an error when re, a Java regex, cannot be moved
// behind the policy's prefix with certainty (javaregex.AfterPrefix: an anchor or a boundary
// that may be at the start of the name, a lookbehind, the COMMENTS flag, an unterminated \Q),
// or Java refuses it.
func (p Policy) RewriteTopicsRegex(re string) (string, string, error) {
	if p.kind() == PolicyIdentity {
		return re, "topics.regex kept: the identity policy keeps topic names (its heartbeats topic aside)", nil
	}
	// Java's Pattern.matcher(topic).matches() is a whole-name match, so the prefix plus a
	// non-capturing group matches exactly the renamed topics of the old regex.
	out, err := javaregex.AfterPrefix(p.RemotePrefix(), re)
	if err != nil {
		return "", "", fmt.Errorf("rewrite topics.regex for the %s policy: %w", p.kind(), err)
	}
	note := "topics.regex rewritten to match the topics renamed by the " + string(p.kind()) + " policy; check it"
	if p.TargetAlias != "" {
		note += "; topics that came from " + p.TargetAlias + " keep their original names on it and are not matched"
	}
	return out, note, nil
}
