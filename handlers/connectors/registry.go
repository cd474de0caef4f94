package connectors

import (
	"strings"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// Type is a connector's type as Connect reports it in ConnectorInfo.
type Type string

// Connector types.
const (
	Source Type = "source"
	Sink   Type = "sink"
)

// Error is a validation failure with the HTTP status Connect's REST API would answer and Connect's
// exact text (or, for rules Connect does not have, a sentence naming the entry and the field).
type Error struct {
	Code    int
	Message string
}

// Error returns the message unchanged, so that it can be published as Connect would answer it.
func (e *Error) Error() string { return e.Message }

// badRequest builds a 400 error.
func badRequest(msg string) *Error { return &Error{Code: 400, Message: msg} }

// connectFailure builds a 500 error: Connect maps a ConnectException thrown by a connector's
// alterOffsets to 500, not 400 (docs/connect-internals.md, "Status codes").
func connectFailure(msg string) *Error { return &Error{Code: 500, Message: msg} }

// Class describes one connector class.
type Class struct {
	// Name is the fully qualified class name.
	Name string
	// Aliases are the simple name and the simple name without "Connector" (Connect's PluginUtils
	// aliases). An alias claimed by two classes of a registry resolves to neither, as in Connect.
	Aliases []string
	// Type is source or sink.
	Type Type
	// AltersOffsets is true when the class's own alterOffsets returns true (the built-ins of
	// docs/connect-internals.md, "alterOffsets", only), so the definite KIP-875 success text
	// applies; false selects the "framework-managed ... manually altered" text.
	AltersOffsets bool
	// Validate is the Go twin of the connector's alterOffsets (and, for Debezium and JDBC, which have
	// none, the loader rules of their offsets). config is the connector config; offsets have already
	// passed ValidateSource or ValidateSink. Nil means no extra rules. It returns an *Error.
	Validate func(config map[string]string, offsets []events.OffsetEntry) error
	// PartitionOrder orders a partition map as the connector's tasks build it, because a task looks its
	// offset up by the exact key bytes. Nil means Java HashMap order (offsetstore.JavaHashMapOrder).
	PartitionOrder func(jsonvalue.Map) jsonvalue.Map
	// OffsetOrder orders an offset map as the connector's tasks write it. Lookups never depend on it
	// (the value is parsed); it only makes our record byte-equal to the task's. Nil means Java HashMap
	// order with the default capacity.
	OffsetOrder func(jsonvalue.Map) jsonvalue.Map
	// CheckFlat, when set, returns the check of the entries of the handlers' single pass
	// (flat.go) for config, which judges one entry without boxing its values: true only when
	// Validate accepts the entry; false when it refuses it or when the check cannot tell, and
	// Validate then decides. What the check needs of config is read once, here, not per entry.
	// Only for PerEntry classes.
	CheckFlat func(config map[string]string) FlatCheck
	// CheckFlatKeys, when set, is CheckFlat made for one sequence of partition keys and one of
	// offset keys (each distinct): the check it returns for config, pkeys and okeys is given
	// only entries with those keys in that order, and answers for them as CheckFlat's does.
	// The single pass asks for it once per key sequence, so what the rules need of the keys
	// (which rule applies to which member) is settled once, not per entry.
	CheckFlatKeys func(config map[string]string) func(pkeys, okeys []string) FlatCheck
	// PerEntry is set when Validate judges each entry on its own (its answer for a list is the
	// first failing entry's) and PartitionOrder depends on a partition's keys only: then a
	// request's offsets may take the handlers' single pass (handlers/fastpath.go), which calls
	// Validate one entry at a time.
	PerEntry bool
	// Source cites where the rules come from (repository, file, version).
	Source string
	// Secrets are the config keys the connector's ConfigDef types as PASSWORD (or that carry
	// credentials anyway, like a connection string), hidden in results, plans and logs. The
	// Kafka client's PASSWORD keys apply to every class and are not listed (IsSecret).
	Secrets []string
	// Outside is the state the class keeps outside Connect's topics (outside.go), which a
	// migration checks before anything is stopped.
	Outside Outside
}

// Registry maps class names and aliases to classes. It is immutable after construction and safe for
// concurrent use.
type Registry struct {
	classes []*Class
	byName  map[string]*Class
}

// builtinFamilies lists the constructors of every connector family the registry knows.
func builtinFamilies() [][]Class {
	return [][]Class{
		fileStreamClasses(),
		mirrorClasses(),
		mysqlClasses(),
		postgresClasses(),
		sqlServerClasses(),
		mongoClasses(),
		oracleClasses(),
		jdbcSourceClasses(),
		commonSinkClasses(),
	}
}

// Builtin returns a registry of every class this package describes.
func Builtin() *Registry {
	var all []Class
	for _, family := range builtinFamilies() {
		all = append(all, family...)
	}
	r, _ := build(all)
	return r
}

// build indexes classes by name and alias. A repeated class name keeps the first class and is
// reported; an alias claimed by two classes, or equal to another class's name, is dropped, as
// Connect's PluginUtils only keeps unique aliases.
func build(classes []Class) (*Registry, []string) {
	r := &Registry{byName: make(map[string]*Class, 3*len(classes))}
	var dups []string
	for i := range classes {
		c := classes[i] // copy: the registry never shares mutable state with its caller
		c.Aliases = append([]string(nil), c.Aliases...)
		if _, ok := r.byName[c.Name]; ok {
			dups = append(dups, c.Name)
			continue
		}
		r.classes = append(r.classes, &c)
		r.byName[c.Name] = &c
	}
	owners := map[string][]*Class{}
	for _, c := range r.classes {
		for _, a := range c.Aliases {
			if a != "" && !contains(owners[a], c) {
				owners[a] = append(owners[a], c)
			}
		}
	}
	for alias, cs := range owners {
		if _, isName := r.byName[alias]; isName || len(cs) != 1 {
			continue
		}
		r.byName[alias] = cs[0]
	}
	return r, dups
}

func contains(cs []*Class, c *Class) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// Lookup finds a class by fully qualified name, simple name or alias. The returned class must not be
// modified.
func (r *Registry) Lookup(class string) (*Class, bool) {
	c, ok := r.byName[class]
	return c, ok
}

// Classes returns the registered classes in registration order. They must not be modified.
func (r *Registry) Classes() []*Class {
	return append([]*Class(nil), r.classes...)
}

// TypeOf returns the registry's type for config's connector.class; for an unknown class it guesses as
// Connect's config validation would split them: Sink iff "topics" or "topics.regex" is set (non-blank),
// else Source.
func (r *Registry) TypeOf(config map[string]string) Type {
	if c, ok := r.Lookup(config["connector.class"]); ok {
		return c.Type
	}
	if strings.TrimSpace(config["topics"]) != "" || strings.TrimSpace(config["topics.regex"]) != "" {
		return Sink
	}
	return Source
}

// Success texts of Worker.completeModifyOffsetsCallback (docs/connect-internals.md, "Success messages") for an alter.
const (
	alteredByConnector = "The offsets for this connector have been altered successfully"
	alteredByFramework = "The Connect framework-managed offsets for this connector have been altered successfully. " +
		"However, if this connector manages offsets externally, they will need to be manually altered in the system " +
		"that the connector uses."
)

// SuccessMessage returns the KIP-875 success text Connect gives for an alter
// (docs/connect-internals.md, "Success messages") of class c: the definite text when the class's
// alterOffsets returns true, else (and for a nil class) the framework-managed text.
func SuccessMessage(c *Class) string {
	if c != nil && c.AltersOffsets {
		return alteredByConnector
	}
	return alteredByFramework
}

// simpleAliases returns Connect's aliases for a connector class: the simple name and, when it ends in
// "Connector", the simple name without it (PluginUtils.computeAliases / prunedName).
func simpleAliases(fqcn string) []string {
	simple := fqcn[strings.LastIndexByte(fqcn, '.')+1:]
	aliases := []string{simple}
	if pruned, ok := strings.CutSuffix(simple, "Connector"); ok && pruned != "" {
		aliases = append(aliases, pruned)
	}
	return aliases
}
