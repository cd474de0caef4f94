package source

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// Selection picks connectors by name and edits them on their way to B.
type Selection struct {
	include, exclude []*regexp.Regexp
	renames          []rename
	set              []events.ConfigEntry
	unset            []string
	maps             []valueMap
	keepA            []string
	// reg knows the classes' secret keys, which --map-value leaves alone (nil:
	// connectors.Builtin()).
	reg *connectors.Registry

	// includeExpr and excludeExpr are the expressions as given, for the messages.
	includeExpr, excludeExpr []string
}

type rename struct {
	re   *regexp.Regexp
	repl string
	// flag is the --rename value as given.
	flag string
}

// valueMap is one --map-value FROM=TO: from holds FROM's comma-separated elements, trimmed.
type valueMap struct {
	from []string
	to   string
}

// SelectionFlags are the selection flags as given (each repeatable).
type SelectionFlags struct {
	// Include and Exclude are Go regexps that must match a whole connector name.
	Include, Exclude []string
	// Rename holds RE=REPL pairs: RE matches a whole name, REPL is a regexp replacement
	// ($1, ${name}). The first matching pair renames.
	Rename []string
	// Set holds KEY=VALUE config edits (split at the first '='); Unset holds keys to remove.
	Set, Unset []string
	// MapValue holds FROM=TO pairs (split at the first '='), applied after Set and Unset to
	// every config value but the name, the secrets and the KeepA keys: a value whose
	// comma-separated elements are FROM's (in any order, whitespace around commas ignored)
	// becomes TO, and else each element of a value equal to a one-element FROM becomes TO.
	// The first matching pair wins. A fleet's bootstrap list for A is rewritten to B's with
	// one pair.
	MapValue []string
	// KeepA holds config keys that keep their value, and may point at A on purpose (a
	// MirrorMaker 2 source reading A): MapValue leaves them alone, and the check of settings
	// that point at A only warns about them (pointsat.go).
	KeepA []string
}

// SetRegistry sets the registry that knows the classes' secret keys, which --map-value leaves
// alone (nil: connectors.Builtin()).
func (s *Selection) SetRegistry(reg *connectors.Registry) { s.reg = reg }

// NewSelection compiles f. All problems are returned at once, in flag order.
func NewSelection(f SelectionFlags) (Selection, error) {
	var s Selection
	var errs []error
	compile := func(flag fleet.Setting, expr string) *regexp.Regexp {
		re, err := regexp.Compile(`^(?:` + expr + `)$`)
		if err != nil {
			errs = append(errs, fleet.Errorf("%s %q: %w", flag, expr, err))
		}
		return re
	}
	for _, e := range f.Include {
		s.include = append(s.include, compile(fleet.Include, e))
	}
	for _, e := range f.Exclude {
		s.exclude = append(s.exclude, compile(fleet.Exclude, e))
	}
	s.includeExpr, s.excludeExpr = f.Include, f.Exclude
	for _, r := range f.Rename {
		expr, repl, ok := strings.Cut(r, "=")
		if !ok || expr == "" || repl == "" {
			errs = append(errs, fleet.Errorf("%s %q: want RE=REPLACEMENT", fleet.Rename, r))
			continue
		}
		s.renames = append(s.renames, rename{re: compile(fleet.Rename, expr), repl: repl, flag: r})
	}
	for _, kv := range f.Set {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			errs = append(errs, fleet.Errorf("%s %q: want KEY=VALUE", fleet.Set, kv))
		case k == "name":
			errs = append(errs, fleet.Errorf("%s %q: the name is changed with %s", fleet.Set, kv, fleet.Rename))
		default:
			s.set = append(s.set, events.ConfigEntry{Key: k, Value: v})
		}
	}
	for _, k := range f.Unset {
		switch {
		case k == "" || strings.Contains(k, "="):
			errs = append(errs, fleet.Errorf("%s %q: want a config key", fleet.Unset, k))
		case k == "name" || k == "connector.class":
			errs = append(errs, fleet.Errorf("%s %q: a connector cannot be created without it", fleet.Unset, k))
		default:
			s.unset = append(s.unset, k)
		}
	}
	for _, kv := range f.MapValue {
		from, to, ok := strings.Cut(kv, "=")
		elems := ListElems(from)
		if !ok || len(elems) == 0 || strings.TrimSpace(to) == "" {
			errs = append(errs, fleet.Errorf("%s %q: want FROM=TO", fleet.MapValue, kv))
			continue
		}
		s.maps = append(s.maps, valueMap{from: elems, to: strings.TrimSpace(to)})
	}
	for _, k := range f.KeepA {
		if k == "" || strings.Contains(k, "=") {
			errs = append(errs, fleet.Errorf("%s %q: want a config key", fleet.KeepA, k))
			continue
		}
		s.keepA = append(s.keepA, k)
	}
	if err := errors.Join(errs...); err != nil {
		return Selection{}, err
	}
	return s, nil
}

// Selected reports whether name is selected: it matches an --include (or there is none) and
// no --exclude.
func (s Selection) Selected(name string) bool {
	in := len(s.include) == 0
	for _, re := range s.include {
		if re.MatchString(name) {
			in = true
			break
		}
	}
	if !in {
		return false
	}
	for _, re := range s.exclude {
		if re.MatchString(name) {
			return false
		}
	}
	return true
}

// Unmatched names each --include, --exclude and --rename that does nothing to names (A's
// connectors), in flag order: an --include that matches none of them, an --exclude that
// matches none of those the includes select, a --rename that renames none of the selected
// (no name it matches, or every one renamed by an earlier --rename). Such a flag is almost
// always misspelt, and a misspelt --exclude moves the connector it was meant to keep.
func (s Selection) Unmatched(names []string) []fleet.Text {
	var out []fleet.Text
	for i, re := range s.include {
		if !slices.ContainsFunc(names, re.MatchString) {
			out = append(out, fleet.Textf("%s %q matches no connector of A", fleet.Include, s.includeExpr[i]))
		}
	}
	included := slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		return len(s.include) > 0 && !slices.ContainsFunc(s.include, func(re *regexp.Regexp) bool { return re.MatchString(n) })
	})
	for i, re := range s.exclude {
		if !slices.ContainsFunc(included, re.MatchString) {
			out = append(out, fleet.Textf("%s %q matches no selected connector", fleet.Exclude, s.excludeExpr[i]))
		}
	}
	renamed := make([]bool, len(s.renames))
	for _, n := range names {
		if !s.Selected(n) {
			continue
		}
		if i := slices.IndexFunc(s.renames, func(r rename) bool { return r.re.MatchString(n) }); i >= 0 {
			renamed[i] = true
		}
	}
	for i, r := range s.renames {
		if !renamed[i] {
			out = append(out, fleet.Textf("%s %q renames no selected connector", fleet.Rename, r.flag))
		}
	}
	return out
}

// TargetName is name on B: the first matching --rename applied, else name itself.
func (s Selection) TargetName(name string) string {
	for _, r := range s.renames {
		if r.re.MatchString(name) {
			return r.re.ReplaceAllString(name, r.repl)
		}
	}
	return name
}

// EditConfig returns a copy of cfg with --unset keys removed, --set values applied (replacing
// in place, new keys appended), --map-value applied (see SelectionFlags.MapValue) and "name"
// set to target.
func (s Selection) EditConfig(cfg events.Config, target string) events.Config {
	out := make(events.Config, 0, len(cfg)+len(s.set)+1)
	for _, e := range cfg {
		drop := false
		for _, k := range s.unset {
			if e.Key == k {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, e)
		}
	}
	for _, kv := range append(s.set, events.ConfigEntry{Key: "name", Value: target}) {
		replaced := false
		for i := range out {
			if out[i].Key == kv.Key {
				out[i] = kv
				replaced = true
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	if len(s.maps) == 0 {
		return out
	}
	secret := s.secrets(cfg)
	for i, e := range out {
		if e.Key == "name" || s.Kept(e.Key) || secret(e.Key) {
			continue
		}
		out[i].Value = s.mapValue(e.Value)
	}
	return out
}

// Kept reports whether key was given to --keep-a.
func (s Selection) Kept(key string) bool { return slices.Contains(s.keepA, key) }

// secrets returns whether a key of cfg holds a secret (secret, with the selection's registry).
func (s Selection) secrets(cfg events.Config) func(key string) bool { return fleet.Secret(s.reg, cfg) }

// mapValue applies the first --map-value that matches v as a whole, else each one-element
// --map-value to the elements of v that equal it.
func (s Selection) mapValue(v string) string {
	elems := ListElems(v)
	if len(elems) == 0 {
		return v
	}
	for _, m := range s.maps {
		if sameElems(elems, m.from) {
			return m.to
		}
	}
	changed := false
	for i, e := range elems {
		for _, m := range s.maps {
			if len(m.from) == 1 && e == m.from[0] {
				elems[i], changed = m.to, true
				break
			}
		}
	}
	if !changed {
		return v
	}
	return strings.Join(elems, ",")
}

// ListElems splits a comma-separated value into its trimmed elements; nil when one is empty
// (not a list).
func ListElems(v string) []string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		if parts[i] = strings.TrimSpace(p); parts[i] == "" {
			return nil
		}
	}
	return parts
}

// sameElems reports whether a and b hold the same elements, in any order.
func sameElems(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// SetKeys are the keys the selection sets (--set), in order.
func (s Selection) SetKeys() []string {
	out := make([]string, len(s.set))
	for i, kv := range s.set {
		out[i] = kv.Key
	}
	return out
}

// UnsetKeys are the keys the selection removes (--unset).
func (s Selection) UnsetKeys() []string { return slices.Clone(s.unset) }

// RenameRule is the --rename that names name on B, as given ("" when none matches).
func (s Selection) RenameRule(name string) string {
	for _, r := range s.renames {
		if r.re.MatchString(name) {
			return r.flag
		}
	}
	return ""
}
