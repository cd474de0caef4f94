package hazard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// The plugin check (HazardPlugin) asks B's Connect REST API, before anything is stopped on A,
// whether B can run each selected connector: its class is installed on B (GET
// /connector-plugins, listed once per run; the class may be given by its full name, its simple
// name or its alias, as Connect resolves connector.class), in the version the config asks for
// with connector.plugin.version where B's Connect knows plugin versions (KIP-891, Connect 4.1+),
// and the config it will have on B (Selection.EditConfig: --set, --unset, the name on B)
// validates there (PUT /connector-plugins/{class}/config/validate, which runs the plugin's own
// validate() and Connect's checks without creating anything). B's agents write the connector
// into B's config topic, where no worker validates it: a config B does not take would only
// show as a FAILED connector, after A's was stopped.

// pluginCallsInFlight bounds the validate calls to B at once (the REST client allows as many):
// a worker's REST API is not sized for a fleet's worth of calls at once, and a plugin's
// validate() may dial its external system.
const pluginCallsInFlight = 8

// pluginCallTimeout bounds one call to B's REST API. Connect itself gives up on a validation
// after 90 s; a plugin that dials an unreachable system is refused sooner.
const pluginCallTimeout = 60 * time.Second

// pluginVersionKey is the config key of the requested plugin version (KIP-891).
const pluginVersionKey = "connector.plugin.version"

// checkPlugins finds the HazardPlugin hazards of entries (see above).
func (hc *Checks) checkPlugins(ctx context.Context, entries []*Subject) {
	if hc.b == nil { // an export: no B
		return
	}
	var todo []*Subject
	for _, e := range entries {
		if e.Connector != nil && e.Connector.Problem.IsZero() {
			todo = append(todo, e)
		}
	}
	if len(todo) == 0 {
		return
	}
	if hc.b.REST == nil {
		fleet.Warn(hc.opts.Logger, fleet.Textf("B's connector plugins are not checked: give %s (B's Connect REST API)", fleet.ToConnectURL))
		for _, e := range todo {
			e.add(Hazard{Check: HazardPlugin,
				Message: fleet.Plain("not checked whether B's Connect has the connector's plugin and takes its config: B's Connect REST API was not given"),
				Fix:     fleet.Textf("give %s (B's Connect REST API) so that the plugin is looked up and the config validated on B before anything stops", fleet.ToConnectURL)})
		}
		return
	}
	plugins, bVersion, err := hc.bPlugins(ctx)
	if err != nil {
		for _, e := range todo {
			e.add(Hazard{Check: HazardPlugin, Refuse: true,
				Message: fleet.Textf("cannot list B's connector plugins (GET /connector-plugins): %v", err),
				Fix:     fleet.Textf("check %s and B's Connect workers, then run again", fleet.ToConnectURL)})
		}
		return
	}
	resolved := map[string][]connectrest.Plugin{} // per class as configs give it
	var validate []*Subject
	for _, e := range todo {
		cfg := hc.ConfigOnB(e)
		class, _ := cfg.Get("connector.class")
		if class == "" {
			continue // no class: refused by B's agent at validate_config, as Connect does
		}
		found, ok := resolved[class]
		if !ok {
			found = resolvePlugin(plugins, class)
			resolved[class] = found
		}
		if h, ok := pluginHazard(class, found, cfg, bVersion); ok {
			e.add(h)
			if h.Refuse {
				continue
			}
		}
		validate = append(validate, e)
	}
	hc.validateOnB(ctx, validate)
}

// bPlugins lists B's connector plugins, and says B's Connect version (GET /).
func (hc *Checks) bPlugins(ctx context.Context) (plugins []connectrest.Plugin, bVersion string, err error) {
	ctx, cancel := context.WithTimeout(ctx, pluginCallTimeout)
	defer cancel()
	// With several versions of a plugin installed, Connect 4.1+ lists each.
	plugins, err = hc.b.REST.Plugins(ctx)
	if err != nil {
		return nil, "", err
	}
	root, err := hc.b.REST.Root(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("GET /: %w", err)
	}
	return plugins, root.Version, nil
}

// resolvePlugin returns the plugins of B that class names, as Connect resolves connector.class: the full
// class name, else the simple name, else the simple name without "Connector" (an alias). More
// than one class for a simple name or alias is ambiguous: Connect refuses it too, and so does
// the check (pluginHazard).
func resolvePlugin(plugins []connectrest.Plugin, class string) []connectrest.Plugin {
	var exact, simple []connectrest.Plugin
	for _, p := range plugins {
		if p.Class == class {
			exact = append(exact, p)
			continue
		}
		name := p.Class[strings.LastIndexByte(p.Class, '.')+1:]
		if alias, _ := strings.CutSuffix(name, "Connector"); class == name || (alias != "" && class == alias) {
			simple = append(simple, p)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return simple
}

// pluginHazard is what B's listing says of a connector whose config on B is cfg and whose
// class resolves to found, if anything: no plugin, an ambiguous alias, or (where B's Connect
// version knows KIP-891) no plugin in the requested version.
func pluginHazard(class string, found []connectrest.Plugin, cfg events.Config, bVersion string) (Hazard, bool) {
	classes := map[string]bool{}
	var installed []string
	for _, p := range found {
		classes[p.Class] = true
		if p.Version != "" && !slices.Contains(installed, p.Version) {
			installed = append(installed, p.Version)
		}
	}
	switch {
	case len(classes) == 0:
		return Hazard{Check: HazardPlugin, Key: "connector.class", Refuse: true,
			Message: fleet.Textf("B's Connect has no connector plugin %s (GET /connector-plugins)", class),
			Fix:     fleet.Plain("install the plugin on every worker of B (plugin.path) and restart them, then run again")}, true
	case len(classes) > 1:
		names := make([]string, 0, len(classes))
		for c := range classes {
			names = append(names, c)
		}
		slices.Sort(names)
		return Hazard{Check: HazardPlugin, Key: "connector.class", Refuse: true,
			Message: fleet.Textf("%s names more than one connector plugin on B's Connect (%s)", class, strings.Join(names, ", ")),
			Fix:     fleet.Textf("give the full class name (%s)", fleet.SetValue{Key: "connector.class", Value: fleet.Lit("...")})}, true
	}
	want, _ := cfg.Get(pluginVersionKey)
	want = strings.TrimSpace(want)
	if want == "" || want == "latest" {
		return Hazard{}, false
	}
	name := found[0].Class
	if !knowsPluginVersions(bVersion) {
		return Hazard{Check: HazardPlugin, Key: pluginVersionKey,
			Message: fleet.Textf("B's Connect %s does not know connector.plugin.version (Kafka Connect 4.1+): it runs the %s it has (version %s), whatever the config asks (%s)",
				bVersion, name, strings.Join(installed, ", "), want),
			Fix: fleet.Plain("check that the version B has suits the connector, or upgrade B's Connect")}, true
	}
	if strings.HasPrefix(want, "[") || strings.HasPrefix(want, "(") || len(installed) == 0 {
		// A range, or a plugin that says no version: B's validate checks it against what B has.
		return Hazard{}, false
	}
	if !slices.Contains(installed, want) {
		// A version without brackets is an exact requirement to Connect.
		slices.Sort(installed)
		return Hazard{Check: HazardPlugin, Key: pluginVersionKey, Refuse: true,
			Message: fleet.Textf("B's Connect has %s in version(s) %s, not %s", name, strings.Join(installed, ", "), want),
			Fix:     fleet.Textf("install that version on B's workers, or change the requested version (%s)", fleet.SetValue{Key: pluginVersionKey, Value: fleet.Lit("...")})}, true
	}
	return Hazard{}, false
}

// knowsPluginVersions reports whether a Connect of version v (GET /'s "4.1.0") knows
// connector.plugin.version: 4.1 and later. An unparsable version is taken to know them, so
// that B's validate decides.
func knowsPluginVersions(v string) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return true
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimLeftFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return true
	}
	return major > 4 || (major == 4 && minor >= 1)
}

// validateOnB validates each entry's config on B, pluginCallsInFlight at once, and records
// what B's Connect says of it.
func (hc *Checks) validateOnB(ctx context.Context, entries []*Subject) {
	type found struct {
		e  *Subject
		hs []Hazard
	}
	out := make([]found, len(entries))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(pluginCallsInFlight, len(entries)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = found{e: entries[i], hs: hc.validateOne(ctx, entries[i])}
			}
		}()
	}
	for i := range entries {
		next <- i
	}
	close(next)
	wg.Wait()
	// Recorded here, in the selection's order: Entry.hazard is not safe for concurrent use.
	for _, f := range out {
		for _, h := range f.hs {
			f.e.add(h)
		}
	}
}

// validateOne asks B's Connect to validate e's config as it will be on B.
func (hc *Checks) validateOne(ctx context.Context, e *Subject) []Hazard {
	cfg := hc.ConfigOnB(e)
	class, _ := cfg.Get("connector.class")
	body, err := json.Marshal(cfg)
	if err != nil {
		return []Hazard{{Check: HazardPlugin, Refuse: true, Message: fleet.Textf("encode the config for B's validate: %v", err)}}
	}
	ctx, cancel := context.WithTimeout(ctx, pluginCallTimeout)
	defer cancel()
	// The path names the class as the config does: Connect refuses a path class the
	// config's connector.class does not end with. The values Connect echoes back (secrets
	// included) are not decoded.
	path := "/connector-plugins/" + url.PathEscape(class) + "/config/validate"
	v, err := hc.b.REST.Validate(ctx, class, json.RawMessage(body))
	if err != nil {
		text := err.Error()
		var f *connectrest.Error
		if errors.As(err, &f) {
			text = fmt.Sprintf("%d %s", f.Code, f.Message) // Connect's own answer
		}
		return []Hazard{{Check: HazardPlugin, Refuse: true,
			Message: fleet.Plain(fleet.Scrub(hc.opts.Registry, cfg, fmt.Sprintf("B's Connect could not validate the config (PUT %s): %s", path, text))),
			Fix:     fleet.Plain("run the validate call on B by hand to see why, fix it, then run again")}}
	}
	if v.ErrorCount == 0 {
		return nil
	}
	var hs []Hazard
	for _, c := range v.Configs {
		if len(c.Value.Errors) == 0 {
			continue
		}
		msg := fleet.Plain(fleet.Scrub(hc.opts.Registry, cfg, strings.Join(c.Value.Errors, "; ")))
		if topicMissingOnly(c.Value.Errors) {
			hs = append(hs, Hazard{Check: HazardPlugin, Key: c.Value.Name, Message: msg,
				Fix: fleet.Plain("create the topic on B (or let MirrorMaker 2 mirror it) before B's connector starts")})
			continue
		}
		hs = append(hs, Hazard{Check: HazardPlugin, Key: c.Value.Name, Refuse: true, Message: msg,
			Fix: fleet.Textf("fix the config for B (%s, %s) or B's workers, then run again", fleet.Set, fleet.Unset)})
	}
	if len(hs) == 0 {
		hs = append(hs, Hazard{Check: HazardPlugin, Refuse: true,
			Message: fleet.Textf("B's Connect counts %d error(s) in the config but names no key", v.ErrorCount)})
	}
	slices.SortStableFunc(hs, func(a, b Hazard) int { return strings.Compare(a.Key, b.Key) })
	return hs
}

// topicMissingRE matches a validation error that says a topic does not exist
// ("Topic orders does not exist", "topic 'orders' not found", "Unknown topic or partition"). Up
// to a colon only: "Invalid value x for configuration topic.creation.groups: ... not found"
// speaks of something else.
var topicMissingRE = regexp.MustCompile(`(?i)\btopics?\b[^:]*\b(does not exist|doesn't exist|do not exist|not found)|unknown topic|UnknownTopicOrPartition`)

// topicMissingOnly reports whether every error says only that a topic does not exist (yet): a
// plugin that checks its topics on B sees B as it is before the migration, while MirrorMaker 2
// may still be creating them or Connect creates a source's topics on its first write. It is a
// warning, not a refusal.
func topicMissingOnly(errs []string) bool {
	for _, e := range errs {
		if !topicMissingRE.MatchString(e) {
			return false
		}
	}
	return len(errs) > 0
}
