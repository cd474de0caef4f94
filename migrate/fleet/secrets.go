package fleet

import (
	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
)

// Scrub hides the secrets of cfg that msg quotes, as result events do: events.Config.Scrub
// with the connector family's PASSWORD keys where reg knows the class. Connect's and the
// connectors' messages may quote a config value.
func Scrub(reg *connectors.Registry, cfg events.Config, msg string) string {
	var class *connectors.Class
	if name, ok := cfg.Get("connector.class"); ok {
		class, _ = reg.Lookup(name)
	}
	return cfg.Scrub(msg, class.IsSecret)
}

// ScrubText is t with the secrets of cfg it quotes hidden, as Scrub's, once it is spelled.
func ScrubText(reg *connectors.Registry, cfg events.Config, t Text) Text {
	if t.IsZero() {
		return t
	}
	return Textf("%v", scrubbed{reg: reg, cfg: cfg, t: t})
}

// scrubbed is a Text that Scrub hides cfg's secrets of when it is spelled.
type scrubbed struct {
	reg *connectors.Registry
	cfg events.Config
	t   Text
}

func (s scrubbed) Spell(w Words) string { return Scrub(s.reg, s.cfg, s.t.Spell(w)) }

// Secret returns whether a key of cfg holds a secret: by the class's family (Connect's own
// PASSWORD keys, where reg knows the class; nil reg is connectors.Builtin()) or by its name.
func Secret(reg *connectors.Registry, cfg events.Config) func(key string) bool {
	if reg == nil {
		reg = connectors.Builtin()
	}
	var class *connectors.Class
	if name, ok := cfg.Get("connector.class"); ok {
		class, _ = reg.Lookup(name)
	}
	return func(key string) bool { return class.IsSecret(key) || events.IsSecretKey(key) }
}
