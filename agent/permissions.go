package agent

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// The agent depends, for as long as it runs, on reading and writing a few topics and on its
// consumer group: without Write on the result topic no result goes out, without Read on it
// (or on the intent topic) the agent runs without its dedupe memory (or its intent log),
// without Read on the request topic or the group it consumes nothing. A broker refuses such
// an operation only when it is tried, and the readers retry it in the background, so the
// agent asks instead: every OFFSETAGENT_PERMISSION_CHECK_INTERVAL (and at once when a write
// of its own was refused) it probes each permission without reading or writing anything
// (kafkaio.ProbeRead, ProbeWrite, ProbeGroupCommit), and /readyz answers 503 naming each
// missing one until a later round finds it granted. A refusal is logged once at ERROR when
// it is found and once at INFO when it is lifted, with the principal, the operation and the
// resource.

// permission is one operation the agent needs on a resource for as long as it runs.
type permission struct {
	op, resourceType, resource string
	probe                      func(ctx context.Context) error
}

// permissions lists what the agent needs for as long as it runs, in a fixed order.
func (a *Agent) permissions() []permission {
	read := func(topic string) permission {
		return permission{kafkaio.OpRead, kafkaio.ResourceTopic, topic,
			func(ctx context.Context) error { return kafkaio.ProbeRead(ctx, a.client, topic) }}
	}
	write := func(topic string) permission {
		return permission{kafkaio.OpWrite, kafkaio.ResourceTopic, topic,
			func(ctx context.Context) error { return kafkaio.ProbeWrite(ctx, a.client, topic) }}
	}
	group := permission{kafkaio.OpRead, kafkaio.ResourceGroup, a.cfg.GroupID, func(ctx context.Context) error {
		err := kafkaio.ProbeGroupCommit(ctx, a.client, a.cfg.GroupID, []string{a.cfg.RequestTopic})
		if errors.Is(err, kafkaio.ErrGroupAuthorization) {
			return err
		}
		return nil // the request topic's Read has its own probe
	}}
	return []permission{
		read(a.cfg.RequestTopic), group,
		write(a.cfg.ResultTopic), read(a.cfg.ResultTopic),
		write(a.cfg.IntentTopic), read(a.cfg.IntentTopic),
		read(a.cfg.ConfigTopic), write(a.cfg.ConfigTopic),
		read(a.cfg.OffsetsTopic), write(a.cfg.OffsetsTopic),
	}
}

// checkPermissions probes every permission once and returns the refused ones (the probes'
// *kafkaio.AuthzError), and the keys (permission.key) of those whose probe could not be asked
// (a broker down, ctx ended): those keep what the previous round found, and the other health
// checks see brokers that do not answer.
func (a *Agent) checkPermissions(ctx context.Context) (denied kafkaio.Denied, unknown []string) {
	for _, p := range a.permissions() {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.probe(pctx)
		cancel()
		if az := refusalOf(err); az != nil {
			denied = append(denied, az)
		} else if err != nil {
			unknown = append(unknown, p.key())
		}
	}
	return denied, unknown
}

// refusalOf is the *kafkaio.AuthzError a probe's refusal is (kafkaio's probes word every
// refusal so), nil for any other answer: one that is not worded so counts as not answered.
func refusalOf(err error) *kafkaio.AuthzError {
	var az *kafkaio.AuthzError
	if _, refused := kafkaio.AuthorizationCode(err); refused && errors.As(err, &az) {
		return az
	}
	return nil
}

// key identifies a permission among the agent's.
func (p permission) key() string { return p.op + " " + p.resourceType + " " + p.resource }

func authzKey(err error) string {
	var az *kafkaio.AuthzError
	if errors.As(err, &az) {
		return az.Operation + " " + az.ResourceType + " " + az.Resource
	}
	return ""
}

// permissionLoop runs checkPermissions every interval, and at once when kicked, until ctx
// ends, and hands what it finds to the health.
func (a *Agent) permissionLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		denied, unknown := a.checkPermissions(ctx)
		if ctx.Err() != nil {
			return
		}
		a.notePermissions(denied, unknown)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.permKick:
		}
	}
}

// kickPermissions asks the permission loop for a round now (a write of the agent's own was
// refused for an ACL).
func (a *Agent) kickPermissions() {
	select {
	case a.permKick <- struct{}{}:
	default:
	}
}

// notePermissions records denied in the health, with the previous refusals of the unknown
// ones, and logs what changed.
func (a *Agent) notePermissions(denied kafkaio.Denied, unknown []string) {
	for _, e := range a.health.deniedNow() {
		if slices.Contains(unknown, authzKey(e)) {
			denied = append(denied, e)
		}
	}
	before := a.health.setDenied(denied)
	msgs := func(errs kafkaio.Denied) []string {
		out := make([]string, len(errs))
		for i, e := range errs {
			out[i] = e.Error()
		}
		return out
	}
	was, now := msgs(before), msgs(denied)
	for _, m := range now {
		if !slices.Contains(was, m) {
			a.log.Error("permission missing; not ready until it is granted", "err", m)
		}
	}
	for _, m := range was {
		if !slices.Contains(now, m) {
			a.log.Info("permission granted", "was", m)
		}
	}
}

// readsDenied asks again, now, each Read the last round found refused, and returns those
// still refused (one whose probe cannot be asked counts as still refused). A request is not
// carried out while one is: the agent would run it without a view it depends on (its intent
// log, its dedupe memory, Connect's topics) and wait for a read that never comes, with no
// result. A refused Write needs no such gate: the request's own write is refused at its step,
// before anything is written, and its failed result names it. One found granted kicks a
// round, so that /readyz follows.
func (a *Agent) readsDenied(ctx context.Context) kafkaio.Denied {
	var prev kafkaio.Denied
	for _, e := range a.health.deniedNow() {
		if e.Operation == kafkaio.OpRead {
			prev = append(prev, e)
		}
	}
	if len(prev) == 0 {
		return nil
	}
	var out kafkaio.Denied
	for _, p := range a.permissions() {
		i := slices.IndexFunc(prev, func(e *kafkaio.AuthzError) bool { return authzKey(e) == p.key() })
		if i < 0 {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.probe(pctx)
		cancel()
		if az := refusalOf(err); az != nil {
			out = append(out, az)
		} else if err != nil {
			out = append(out, prev[i])
		}
	}
	if len(out) < len(prev) {
		a.kickPermissions()
	}
	return out
}
