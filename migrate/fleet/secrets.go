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
