package handlers

import (
	"github.com/offsetagent/offsetagent/events"
)

// secretKeys returns the job's rule for secret config keys: its connector family's PASSWORD
// keys (Connect's own rule) where the registry knows the class, the Kafka client's otherwise.
// The name rule applies on top of either (events.Config.RedactedBy).
func (c *Creator) secretKeys(j *job) func(key string) bool {
	class := j.class
	if class == nil {
		cfg := j.config
		if cfg == nil {
			cfg = j.req.Data.Config
		}
		if name, ok := cfg.Get("connector.class"); ok {
			class, _ = c.opts.Registry.Lookup(name)
		}
	}
	return class.IsSecret
}

// redactedConfig is the job's config as results and plans show it.
func (c *Creator) redactedConfig(j *job) events.Config {
	return j.config.RedactedBy(c.secretKeys(j))
}

// scrub hides the job's secrets in a failure message. Most messages are ours or Connect's and
// never quote a secret, but a connector's or Connect's validation error may quote the value it
// refused, whatever that value holds.
func (c *Creator) scrub(j *job, msg string) string {
	cfg := j.config
	if cfg == nil {
		cfg = j.req.Data.Config
	}
	return cfg.Scrub(msg, c.secretKeys(j))
}
