package handlers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unsafe"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// validateConfig applies Connect's POST /connectors checks in Connect's order
// (docs/connect-internals.md, "Validating a new connector"): the name against config.name (400), a
// connector class (400), the aggregated ConfigDef errors (400), then existence (409). It also
// settles the connector's type, target state and offsets topics.
func (c *Creator) validateConfig(ctx context.Context, j *job) error {
	// ConnectorsResource trims the name; a null name is "".
	j.name = strings.TrimSpace(j.req.Data.Name)
	if err := refuseLoneSurrogates(j.req.Data.LoneSurrogates, false); err != nil {
		return err
	}
	// Requests for one connector take turns: before reading or rolling back anything, this
	// one must hold the connector's claim (a request that does not is a 409).
	if err := c.claim(ctx, j); err != nil {
		return err
	}
	c.fault(j, "validate_config:claimed")
	// An earlier request for this connector that was interrupted (the agent died mid-way) is
	// rolled back first, so this one starts from the state before it. A dry run writes
	// nothing, not even that.
	if !j.req.DryRun {
		var err error
		if j.rolledBack, err = c.recoverInterrupted(ctx, j); err != nil {
			return err
		}
	}
	if err := c.checkConfig(j); err != nil {
		return err
	}
	j.class, _ = c.opts.Registry.Lookup(j.props["connector.class"])
	j.typ = c.opts.Registry.TypeOf(j.props)
	if c.opts.Validator != nil {
		if err := c.validateWithConnect(ctx, j); err != nil {
			return err
		}
	}
	if err := c.settleTopics(j); err != nil {
		return err
	}
	// The Write probes and the intent record go out now, in one request to the broker (the
	// store's writes are held while both are queued), overlapping the barriers: the intent
	// from the view as it is, which the wipe checks against the snapshot taken after them.
	release := c.opts.Store.HoldWrites()
	c.startWriteProbes(ctx, j)
	c.startOptimisticIntent(ctx, j)
	release()
	if c.opts.Fault != nil && j.optimistic != nil {
		// Crash tests: a point where the intent is visible and the existence check has not
		// settled (a rejected request's intent must not be taken for a creation's).
		_ = j.optimistic.result()
		c.fault(j, "validate_config:intent")
	}
	return c.checkNotExists(ctx, j)
}

// checkConfig takes the request's config into the job and runs Connect's checks on it that
// need no cluster: the name, the class, ConfigDef's errors and the initial state.
func (c *Creator) checkConfig(j *job) error {
	d := &j.req.Data
	var err error
	if j.offsetsOnly, err = c.createMode(j.name, d); err != nil {
		return err
	}
	if d.Config == nil {
		// Connect answers a body without config with a NullPointerException (500); a clear
		// message serves automation better and the status stays the same.
		return internal("Connector config is missing: the request body must contain a \"config\" object")
	}
	// Own copies of the strings: the decoded request may share memory with its (possibly
	// large) record, which should not stay alive for the name and config alone. They are
	// copied into one allocation (a string each was a dozen allocations a request).
	n := len(j.name) + len(d.InitialState)
	for _, e := range d.Config {
		n += len(e.Key) + len(e.Value)
	}
	own := ownedStrings{b: make([]byte, 0, n)}
	j.name = own.clone(j.name)
	cfg := make(events.Config, 0, len(d.Config)+1)
	for _, e := range d.Config {
		cfg = append(cfg, events.ConfigEntry{Key: own.clone(e.Key), Value: own.clone(e.Value), Null: e.Null})
	}
	d.Name, d.Config, d.InitialState = j.name, nil, own.clone(d.InitialState)
	if v, ok := cfg.Get("name"); ok {
		if v != j.name {
			return badRequest(fmt.Sprintf("Connector name configuration (%s) doesn't match connector name in the URL (%s)", v, j.name))
		}
	} else {
		cfg = append(cfg, events.ConfigEntry{Key: "name", Value: j.name})
	}
	j.config = cfg
	j.props = cfg.Map()

	if _, ok := cfg.Get("connector.class"); !ok {
		return badRequest(fmt.Sprintf("Connector config %s contains no connector type", javaMapString(cfg.Redacted())))
	}
	if errs := configErrors(j.name, cfg); len(errs) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", len(errs))
		for _, e := range errs {
			b.WriteString("\n")
			b.WriteString(e)
		}
		b.WriteString("\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
		return badRequest(b.String())
	}
	state, rest, err := targetState(d.InitialState)
	if err != nil {
		return err
	}
	j.state, j.restState = state, rest
	return nil
}

// settleTopics sets where the connector's offsets live: a sink connector's consumer group, a
// source connector's own offsets topic when it has an allowed one.
func (c *Creator) settleTopics(j *job) error {
	switch j.typ {
	case connectors.Sink:
		j.group = offsetstore.SinkGroup(j.name, j.props)
		// A sink request deletes its group's offsets and commits new ones: without a bound,
		// consumer.override.group.id would reach any idle group of the cluster. The message
		// names the agent's setting, since that is what an operator changes.
		if !c.opts.AllowedGroups.MatchString(j.group) {
			return badRequest(fmt.Sprintf("consumer group %q is not allowed: sink connectors may only use groups matching %s (OFFSETAGENT_ALLOWED_GROUPS)", j.group, c.opts.AllowedGroups))
		}
	case connectors.Source:
		if t, ok := j.props["offsets.storage.topic"]; ok && strings.TrimSpace(t) != "" && t != c.opts.OffsetsTopic {
			if !c.opts.AllowedOffsetsTopics.MatchString(t) {
				return badRequest(fmt.Sprintf("offsets.storage.topic %q is not allowed: it must match %s", t, c.opts.AllowedOffsetsTopics))
			}
			j.connectorTopic = t
		}
	}
	return nil
}

// checkNotExists reads the config topic to its end, as Connect's leader does, and fails with
// 409 when the connector exists. It starts reading the offsets topics the later stages need.
func (c *Creator) checkNotExists(ctx context.Context, j *job) error {
	// The wipe will read the global offsets topic to its end: its end offsets are read with the
	// config topic's, in one round trip, and the view catches up with them beside the existence
	// check. The barrier still covers every write made before the request arrived.
	var waitConfig func(context.Context) error
	if j.typ == connectors.Source && j.req.Data.HasInitialOffsets {
		var waitOffsets func(context.Context) error
		if waits, err := c.opts.Store.SyncEnds(ctx, c.opts.ConfigTopic, c.opts.OffsetsTopic); err == nil {
			waitConfig, waitOffsets = waits[0], waits[1]
		}
		// Waited for when the snapshot needs it: the barrier's fetch is in flight already, so
		// a goroutine to wait for it meanwhile would buy nothing.
		j.globalSynced = func(ctx context.Context) error { return c.syncAfter(ctx, c.opts.OffsetsTopic, waitOffsets) }
	}
	if err := c.syncAfter(ctx, c.opts.ConfigTopic, waitConfig); err != nil {
		return fmt.Errorf("read config topic %q: %w", c.opts.ConfigTopic, err)
	}
	if _, exists := c.opts.Store.ConnectorConfig(j.name); exists {
		return conflict(fmt.Sprintf("Connector %s already exists", j.name))
	}
	if err := c.checkGroupFree(ctx, j); err != nil {
		return err
	}
	if j.connectorTopic != "" && j.req.Data.HasInitialOffsets {
		if err := c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Track(ctx, j.connectorTopic) }); err != nil {
			return fmt.Errorf("read connector offsets topic %q: %w", j.connectorTopic, err)
		}
	}
	return nil
}

// syncAfter reads topic to its end: with wait, a barrier whose end offsets were read already
// (Store.SyncEnds), and when there is none or it failed, with Store.Sync and the Creator's
// retries, as a barrier of its own.
func (c *Creator) syncAfter(ctx context.Context, topic string, wait func(context.Context) error) error {
	if wait != nil && wait(ctx) == nil {
		return nil
	}
	return c.retry(ctx, func(ctx context.Context) error { return c.opts.Store.Sync(ctx, topic) })
}

// configErrors returns ConfigDef's messages for the settings Connect's ConnectorConfig checks
// itself, in definition order (name, then tasks.max), then one line per null value.
func configErrors(name string, cfg events.Config) []string {
	var errs []string
	if name == "" {
		errs = append(errs, "Invalid value  for configuration name: String may not be empty")
	} else if codes := controlChars(name); len(codes) > 0 {
		errs = append(errs, fmt.Sprintf("Invalid value %s for configuration name: String may not contain control sequences but had the following ASCII chars: %s", name, codes))
	}
	for _, e := range cfg {
		if e.Key != "tasks.max" || e.Null {
			continue
		}
		// ConfigDef parses INT with Integer.parseInt on the trimmed text.
		n, err := strconv.ParseInt(strings.TrimSpace(e.Value), 10, 32)
		switch {
		case err != nil:
			// The value that failed to parse is null to the validator, which says so too
			// (Apache Kafka 4.3.1 POST /connectors answers both lines).
			errs = append(errs, fmt.Sprintf("Invalid value %s for configuration tasks.max: Not a number of type INT", e.Value),
				"Invalid value null for configuration tasks.max: Value must be non-null")
		case n < 1:
			errs = append(errs, fmt.Sprintf("Invalid value %d for configuration tasks.max: Value must be at least 1", n))
		}
	}
	for _, e := range cfg {
		if e.Null {
			errs = append(errs, "Null value can not be supplied as the configuration value.")
		}
	}
	return errs
}

// controlChars lists the ISO control characters of s as Connect's validator prints them:
// their code points joined by ", ".
func controlChars(s string) string {
	var codes []string
	for _, r := range s {
		if unicode.IsControl(r) { // Character.isISOControl: U+0000-U+001F and U+007F-U+009F
			codes = append(codes, strconv.Itoa(int(r)))
		}
	}
	return strings.Join(codes, ", ")
}

// javaMapString formats a config the way Java's AbstractMap.toString does: {k=v, k2=v2}.
func javaMapString(cfg events.Config) string {
	m := make(jsonvalue.Map, len(cfg))
	for i, e := range cfg {
		m[i] = jsonvalue.Field{Key: e.Key}
		if !e.Null {
			m[i].Value = e.Value
		}
	}
	return offsetstore.JavaString(m, false)
}

// targetState maps KIP-980's initial_state (any case) to the config topic's state and the
// REST spelling. An absent state is written explicitly as STARTED (docs/connect-internals.md, "Write order": it also
// overrides a stale target state left behind for the name).
func targetState(s string) (state, rest string, err error) {
	switch strings.ToUpper(s) {
	case "", "RUNNING":
		return "STARTED", "RUNNING", nil
	case "PAUSED":
		return "PAUSED", "PAUSED", nil
	case "STOPPED":
		return "STOPPED", "STOPPED", nil
	}
	return "", "", badRequest(fmt.Sprintf("Invalid initial_state %q: must be one of RUNNING, PAUSED or STOPPED", s))
}

// missingTopicAttempts × 300 ms outlasts the agent transport's metadata refresh interval.
const missingTopicAttempts = 6

// checkSinkPartitions refuses offsets for topics or partitions that do not exist. Connect
// does not check them up front; the broker refuses the commit, which our classifier would
// retry for a minute before failing with 500. A clear 400 before anything is wiped is better.
func (c *Creator) checkSinkPartitions(ctx context.Context, offsets []connectors.SinkOffset) error {
	counts := map[string]int{}
	for _, o := range offsets {
		if o.Offset == nil {
			continue // a reset needs nothing to exist
		}
		n, ok := counts[o.Topic]
		if !ok {
			// A missing topic is an answer, not a transient error; but a topic created just
			// before the request may not be in the client's metadata yet (kafka-go caches it;
			// the agent's transport refreshes every second), so ask again for a short while.
			missing := false
			for attempt := 0; ; attempt++ {
				err := c.retry(ctx, func(ctx context.Context) (err error) {
					n, err = c.opts.Store.Partitions(ctx, o.Topic)
					var kerr kafka.Error
					if missing = errors.As(err, &kerr) && kerr == kafka.UnknownTopicOrPartition; missing {
						err = nil
					}
					return err
				})
				if err != nil {
					return fmt.Errorf("describe topic %q: %w", o.Topic, err)
				}
				if !missing || attempt >= missingTopicAttempts {
					break
				}
				if !kafkaio.Sleep(ctx, 300*time.Millisecond) {
					return ctx.Err()
				}
			}
			if missing {
				// A topic the principal may not Describe looks missing too: name the ACL.
				if err := c.opts.Store.ProbeRead(ctx, o.Topic); err != nil {
					if _, refused := kafkaio.AuthorizationCode(err); refused {
						return c.refused(err)
					}
				}
				return badRequest(fmt.Sprintf("Topic %s of the sink connector's initial offsets does not exist", o.Topic))
			}
			counts[o.Topic] = n
		}
		if int(o.Partition) >= n {
			return badRequest(fmt.Sprintf("Partition %d of topic %s does not exist: the topic has %d partitions", o.Partition, o.Topic, n))
		}
	}
	return nil
}

// asFailure keeps a connectors.Error's status and text.
func asFailure(err error) error {
	var ce *connectors.Error
	if errors.As(err, &ce) {
		return &Failure{Code: ce.Code, Message: ce.Message, Reason: kafkaio.ReasonPermanent}
	}
	return badRequest(err.Error())
}

// validateWithConnect asks the Connect cluster (docs/connect-internals.md, "Validating a new
// connector"), in Connect's order: a config with errors fails with Connect's aggregated message
// (400), then an existing connector is a 409. The reported type settles source or sink for classes
// the registry does not know. An unreachable cluster is retried as a transient error and then fails
// the request: it is never a pass.
func (c *Creator) validateWithConnect(ctx context.Context, j *job) error {
	var typ string
	if err := c.retry(ctx, func(ctx context.Context) (err error) {
		typ, err = c.opts.Validator.Validate(ctx, j.props["connector.class"], j.props)
		return err
	}); err != nil {
		var f *Failure
		if errors.As(err, &f) {
			// Results carry 400, 409 or 500 only: Connect's other statuses keep their
			// class (bad input or internal) and their message.
			out := *f
			switch {
			case out.Code == 409:
			case out.Code >= 400 && out.Code < 500:
				out.Code = 400
			default:
				out.Code = 500
			}
			return &out
		}
		return fmt.Errorf("validate config with Connect: %w", err)
	}
	var exists bool
	if err := c.retry(ctx, func(ctx context.Context) (err error) {
		exists, err = c.opts.Validator.Exists(ctx, j.name)
		return err
	}); err != nil {
		return fmt.Errorf("ask Connect whether connector %q exists: %w", j.name, err)
	}
	if exists {
		return conflict(fmt.Sprintf("Connector %s already exists", j.name))
	}
	if j.class == nil && (typ == string(connectors.Source) || typ == string(connectors.Sink)) {
		j.typ = connectors.Type(typ)
	}
	return nil
}

// ownedStrings copies strings into one buffer, made with room for all of them: strings.Clone
// of each, in one allocation. Were the buffer to grow, the strings copied before would keep
// the old one: still correct, one allocation more.
type ownedStrings struct{ b []byte }

func (o *ownedStrings) clone(s string) string {
	if s == "" {
		return ""
	}
	start := len(o.b)
	o.b = append(o.b, s...)
	return unsafe.String(&o.b[start], len(s))
}
