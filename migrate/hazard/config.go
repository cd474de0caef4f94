package hazard

import (
	"fmt"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/mm2"
)

// ConfigOnB is the config e's connector will have on B under its name there, the one place that says it:
// the body carries it, and every check that compares or judges the config on B (B's existing
// connector of that name, B's validate, the settings that point at A, a family's state on B)
// reads it. It is c's config on A with the names MirrorMaker 2's policy gives a sink's topics
// on B (MM2; a sink that follows its sources keeps them), then the edit flags, then the
// transform that gives the sink's records back their topics' names on A (topicnames.go), which
// checkTopicNames plans before the other checks run.
func (hc *Checks) ConfigOnB(e *Subject) events.Config {
	c := e.Connector
	cfg := c.Config
	if m := hc.opts.MM2; m != nil && c.Type == connectors.Sink && e.Follows == nil {
		cfg, _ = renamed(m.Policy, cfg) // a topics.regex it cannot rewrite refuses the sink (checkTopicNames)
	}
	return e.Restore.apply(hc.opts.Selection.EditConfig(cfg, e.Target))
}

// renamed is cfg with the names MirrorMaker 2's policy p gives its topics on B (rewriteConfig),
// or, with rewriteConfig's error when its topics.regex cannot be rewritten with certainty
// (checkTopicNames refuses such a sink), with `topics` renamed and topics.regex as it is.
func renamed(p mm2.Policy, cfg events.Config) (events.Config, error) {
	out, _, err := RewriteConfig(p, cfg)
	if err != nil {
		return renameTopics(p, cfg), err
	}
	return out, nil
}

// RewriteConfig renames cfg's `topics` name by name by policy p and rewrites its `topics.regex` to match
// the renamed topics, in place of their entries; the DLQ topic and the rest stay (what is
// derived from the topics' names is topicnames.go's). The second result flags a topics.regex
// for the report ("" when there is none). A topics.regex that cannot be rewritten with
// certainty is an error; the hazard check refuses such a sink before anything is stopped.
func RewriteConfig(p mm2.Policy, cfg events.Config) (events.Config, string, error) {
	out := make(events.Config, 0, len(cfg))
	var flag string
	for _, e := range cfg {
		switch e.Key {
		case mm2.TopicsKey:
			e.Value, _ = p.RewriteTopics(e.Value)
		case mm2.TopicsRegexKey:
			if e.Value != "" {
				to, note, err := p.RewriteTopicsRegex(e.Value)
				if err != nil {
					return nil, "", err
				}
				flag = fmt.Sprintf("%s -> %s: %s", e.Value, to, note)
				e.Value = to
			}
		}
		out = append(out, e)
	}
	return out, flag, nil
}
