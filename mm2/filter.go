package mm2

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/offsetagent/offsetagent/internal/javaregex"
	"github.com/offsetagent/offsetagent/internal/wording"
)

// MirrorMaker 2's name filters, judged as MirrorMaker 2 judges: DefaultGroupFilter (groups,
// groups.exclude) and DefaultTopicFilter (topics, topics.exclude) read each setting as
// Connect's LIST (ConfigDef.parseType: the value trimmed of every character up to U+0020, then
// split on commas with the regex whitespace around them), join the entries with "|" into one
// Java pattern (MirrorUtils.compilePatternList: an empty list matches nothing, and entries are
// not grouped, so "(a, b)" is the pattern (a|b)), and match it against the whole name
// (Matcher.matches()). A name passes when the include setting matches it and the exclude
// setting does not. The patterns are Java's: they are evaluated by internal/javaregex, and
// one it cannot evaluate as Java would, or that Java refuses, leaves the question undecided
// (an error), never answered. mm2/testdata/filter-oracle.json, written by MirrorMaker 2's own
// filter classes (make goldens), proves the whole chain.

// The topic filter's settings besides topics (TopicsKey): DefaultTopicFilter's, and
// topic.filter.class of MirrorSourceConfig and MirrorCheckpointConfig; MM2's defaults.
const (
	TopicsExcludeKey     = "topics.exclude"
	TopicFilterClassKey  = "topic.filter.class"
	DefaultTopics        = ".*"
	DefaultTopicsExclude = `mm2.*\.internal, .*\.replica, __.*`
	// topics.exclude's former name, deprecated by KIP-629 and removed in Kafka 4.0.
	topicsBlacklistKey = "topics.blacklist"
	// legacyTopicsExclude is the default topics.exclude of earlier MirrorMaker 2 releases.
	legacyTopicsExclude = `.*[\-\.]internal, .*\.replica, __.*`
)

// legacyTopicsExcludeRE is legacyTopicsExclude compiled.
var legacyTopicsExcludeRE = javaregex.MustCompile(strings.Join(splitList(legacyTopicsExclude), "|"))

// errEmptyEntry: a LIST value with an empty entry ("a,,b", "a,"). Kafka 4.0 and later refuse
// the value (the connector does not start); earlier versions match the empty name with it.
var errEmptyEntry = errors.New("it has an empty entry (\"a,,b\" or a trailing comma): Kafka 4.0 and later refuse such a value, " +
	"so MirrorMaker 2's connector does not start; earlier versions match the empty name with it")

// listSetting is one of a filter's settings on a connector, compiled.
type listSetting struct {
	key   string // as MM2 reads it
	value string // as set, or MM2's default
	set   bool
	re    *javaregex.Regexp // nil for an empty list, which matches nothing
	err   error             // the value cannot be evaluated
}

func newListSetting(c MM2Connector, key, def string, deprecated ...string) listSetting {
	l := listSetting{key: key, value: def}
	if v, ok := c.setting(key, deprecated...); ok {
		l.value, l.set = v, true
	}
	l.re, l.err = compilePatternList(l.value)
	return l
}

// shown is the setting for a message: its value, or that MM2's default applies.
func (l listSetting) shown() string {
	if l.set {
		return l.value
	}
	return "not set, so MM2's default: " + l.value
}

// matches reports whether the setting's pattern matches name whole.
func (l listSetting) matches(name string) (bool, error) {
	if l.err != nil {
		return false, l.err
	}
	if l.re == nil {
		return false, nil
	}
	return l.re.Matches(name)
}

// compilePatternList compiles a LIST value as MirrorUtils.compilePatternList does; nil for an
// empty list.
func compilePatternList(value string) (*javaregex.Regexp, error) {
	entries := splitList(value)
	if len(entries) == 0 {
		return nil, nil
	}
	if slices.Contains(entries, "") {
		return nil, errEmptyEntry
	}
	return javaregex.Compile(strings.Join(entries, "|"))
}

// nameFilter is a DefaultGroupFilter or DefaultTopicFilter as configured on a connector.
type nameFilter struct{ include, exclude listSetting }

func groupFilter(c MM2Connector) nameFilter {
	return nameFilter{newListSetting(c, GroupsKey, DefaultGroups), newListSetting(c, GroupsExcludeKey, DefaultGroupsExclude, groupsBlacklistKey)}
}

func topicFilter(c MM2Connector) nameFilter {
	return nameFilter{newListSetting(c, TopicsKey, DefaultTopics), newListSetting(c, TopicsExcludeKey, DefaultTopicsExclude, topicsBlacklistKey)}
}

// verdict is what a filter decides about a name: passes, or which setting leaves it out, or
// which setting could not be evaluated (err).
type verdict struct {
	passes bool
	by     *listSetting // the setting that leaves it out, or that could not be evaluated
	err    error
}

func (f *nameFilter) judge(name string) verdict {
	in, err := f.include.matches(name)
	if err != nil {
		return verdict{by: &f.include, err: err}
	}
	if !in {
		return verdict{by: &f.include}
	}
	ex, err := f.exclude.matches(name)
	if err != nil {
		return verdict{by: &f.exclude, err: err}
	}
	if ex {
		return verdict{by: &f.exclude}
	}
	return verdict{passes: true}
}

// undecided is the finding for a setting whose pattern could not be evaluated for name (what,
// "group" or "topic"): the sink is refused rather than left to wait for a checkpoint that may
// never come.
func undecided(p Policy, c *MM2Connector, class string, v verdict, what, name string) Finding {
	l := v.by
	fix := wording.Textf("write %s so that it can be evaluated as Java evaluates it (for example list the %s by name, %s, in a setting without that construct), "+
		"or give %s to move the sink without this check's verdict", l.key, what, regexpQuote(name), wording.AllowReplay)
	var re *javaregex.Error
	if errors.As(v.err, &re) && !re.Unsupported || errors.Is(v.err, errEmptyEntry) {
		fix = wording.Textf("correct %s: MirrorMaker 2's %s does not start with it; %s", l.key, class, fixFor(p, c, class, l.key, "<a valid list>"))
	}
	return Finding{Key: l.key, Blocked: true,
		Message: wording.Textf("%s: cannot tell whether its %s (%s) matches %s %q, as MirrorMaker 2 joins its entries with | into one Java regex: %v",
			c.where(), l.key, l.shown(), what, name, v.err),
		Fix: fix}
}

// splitList splits a Connect LIST value as ConfigDef.parseType does: trimmed of every
// character up to U+0020 (Java's String.trim), then split on commas with any regex whitespace
// ([ \t\n\x0B\f\r]) around them, empty entries kept; an empty value is an empty list.
func splitList(s string) []string {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if s == "" {
		return nil
	}
	return listComma.Split(s, -1)
}

var listComma = regexp.MustCompile(`[ \t\n\x0B\f\r]*,[ \t\n\x0B\f\r]*`)
