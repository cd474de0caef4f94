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

// checkPermissions probes every permission once and returns the refused ones, each an
// *kafkaio.AuthzError. A probe that could not be asked (a broker down) counts as granted
// here: the other health checks see brokers that do not answer.
func (a *Agent) checkPermissions(ctx context.Context) []error {
	principal := a.cfg.Security.Principal()
	var denied []error
	for _, p := range a.permissions() {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.probe(pctx)
		cancel()
		if _, ok := kafkaio.AuthorizationCode(err); ok {
			denied = append(denied, &kafkaio.AuthzError{Principal: principal, Operation: p.op,
				ResourceType: p.resourceType, Resource: p.resource, Code: authzCode(err)})
		}
	}
	return denied
}

func authzCode(err error) error {
	c, _ := kafkaio.AuthorizationCode(err)
	return c
}

// permissionLoop runs checkPermissions every interval, and at once when kicked, until ctx
// ends, and hands what it finds to the health.
func (a *Agent) permissionLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		a.notePermissions(a.checkPermissions(ctx))
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

// notePermissions records denied in the health and logs what changed.
func (a *Agent) notePermissions(denied []error) {
	before := a.health.setDenied(denied)
	msgs := func(errs []error) []string {
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
