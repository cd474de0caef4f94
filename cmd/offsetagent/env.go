package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/offsetagent/offsetagent/agent"
)

// The commands' environment: the variables agent.Config reads (its env tags, found by
// reflection, so that no second list can drift from them) and the few the commands read
// themselves; their values read one variable at a time, so that every bad value is reported
// at once by its variable's name (go-envconfig stops at the first and names the Go field);
// and a warning for every OFFSETAGENT_ variable nothing reads, which is most often a
// misspelling that leaves the setting at its default without a word.

// envPrefix starts every variable offsetagent reads.
const envPrefix = "OFFSETAGENT_"

// The variables the commands read besides agent.Config's (and faultVariables, in the
// crash tests' build).
const (
	fromConnectUserInfoVar = "OFFSETAGENT_FROM_CONNECT_USER_INFO"
	toConnectUserInfoVar   = "OFFSETAGENT_TO_CONNECT_USER_INFO"
)

// envField is a field of agent.Config that go-envconfig fills from one variable.
type envField struct {
	variable string
	index    []int // the field's index path in agent.Config
	field    reflect.StructField
}

// configFields returns agent.Config's variables in field order, nested structs (Security)
// included.
func configFields() []envField {
	var out []envField
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			at := append(slices.Clone(index), i)
			name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
			if name = strings.TrimSpace(name); name != "" {
				out = append(out, envField{variable: name, index: at, field: f})
			} else if f.IsExported() && f.Type.Kind() == reflect.Struct {
				walk(f.Type, at)
			}
		}
	}
	walk(reflect.TypeFor[agent.Config](), nil)
	return out
}

// knownVariables returns every variable offsetagent's commands read.
func knownVariables() []string {
	names := append([]string{fromConnectUserInfoVar, toConnectUserInfoVar}, faultVariables()...)
	for _, f := range configFields() {
		names = append(names, f.variable)
	}
	return names
}

// readConfig fills an agent.Config from lookup as go-envconfig does, one field at a time: every
// value that cannot be read is reported, by its variable, in field order, and its field keeps
// its default so that Validate judges the others without a second error for it.
func readConfig(ctx context.Context, lookup envconfig.Lookuper) (agent.Config, error) {
	var cfg agent.Config
	root := reflect.ValueOf(&cfg).Elem()
	var errs []error
	for _, f := range configFields() {
		v, err := readField(ctx, f, lookup)
		if err != nil {
			value, _ := lookup.Lookup(f.variable)
			errs = append(errs, valueError(f, value, err))
			if v, err = readField(ctx, f, without{lookup, f.variable}); err != nil {
				return cfg, fmt.Errorf("%s: default: %w", f.variable, err) // a bad default is a bug in agent.Config
			}
		}
		if err := refusedZero(f, v, lookup); err != nil {
			errs = append(errs, err)
		}
		root.FieldByIndex(f.index).Set(v)
	}
	return cfg, errors.Join(errs...)
}

// refusedZero is the error of a variable set to the zero of a field tagged nonzero (its
// reason): agent.Config's zero value means the default for a caller that leaves the field
// unset, so a variable set to zero would silently be the default, not what it says.
func refusedZero(f envField, v reflect.Value, lookup envconfig.Lookuper) error {
	why := f.field.Tag.Get("nonzero")
	value, set := lookup.Lookup(f.variable)
	if why == "" || !set || !v.IsZero() {
		return nil
	}
	def := "none"
	for _, opt := range strings.Split(f.field.Tag.Get("env"), ",")[1:] {
		if d, ok := strings.CutPrefix(strings.TrimSpace(opt), "default="); ok {
			def = d
		}
	}
	return fmt.Errorf("%s: %q is zero, which it cannot be: %s; unset it for the default (%s)", f.variable, value, why, def)
}

// readField reads the one field f from lookup with go-envconfig, which keeps its rules
// (defaults, lists, decoders): it fills a struct made of that field alone.
func readField(ctx context.Context, f envField, lookup envconfig.Lookuper) (reflect.Value, error) {
	one := reflect.New(reflect.StructOf([]reflect.StructField{{Name: f.field.Name, Type: f.field.Type, Tag: f.field.Tag}}))
	err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: one.Interface(), Lookuper: lookup})
	return one.Elem().Field(0), err
}

// without is a Lookuper that does not see one variable.
type without struct {
	envconfig.Lookuper
	name string
}

func (w without) Lookup(key string) (string, bool) {
	if key == w.name {
		return "", false
	}
	return w.Lookuper.Lookup(key)
}

// valueError words go-envconfig's error for f's value (a number, a duration or a boolean: the
// kinds that can fail, none of which is a secret) by the variable and what it wants.
func valueError(f envField, value string, err error) error {
	switch t := f.field.Type; {
	case t == reflect.TypeFor[time.Duration]():
		return fmt.Errorf("%s: %q is not a duration (e.g. 30s, 5m, 168h)", f.variable, value)
	case t.Kind() == reflect.Bool:
		return fmt.Errorf("%s: %q is not true or false", f.variable, value)
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		if errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("%s: %q is out of range", f.variable, value)
		}
		return fmt.Errorf("%s: %q is not a whole number", f.variable, value)
	}
	if inner := errors.Unwrap(err); inner != nil {
		err = inner // go-envconfig's error starts with the Go field's name
	}
	return fmt.Errorf("%s: %w", f.variable, err)
}

// unknownVariables returns a warning for each OFFSETAGENT_ variable of environ (KEY=VALUE
// entries) that no command reads, in name order, with the known name it most likely
// misspells when one is close. No value is quoted.
func unknownVariables(environ []string) []string {
	known := knownVariables()
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) && !slices.Contains(known, name) && !slices.Contains(unknown, name) && !toolingVariable(name) {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	out := make([]string, 0, len(unknown))
	for _, name := range unknown {
		w := fmt.Sprintf("%s is not a variable offsetagent reads: ignored", name)
		if s := closest(name, known); s != "" {
			w += "; did you mean " + s + "?"
		}
		out = append(out, w)
	}
	return out
}

// toolingVariable reports whether name is read by the repository's own tests, benchmarks and
// real-Kafka fixture (make test, make bench, .ci/run), not by offsetagent: set beside it in
// CI and on developers' machines, it is no mistake of the agent's configuration.
func toolingVariable(name string) bool {
	for _, p := range []string{"OFFSETAGENT_TEST_", "OFFSETAGENT_REQUIRE_", "OFFSETAGENT_BENCH_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains([]string{"OFFSETAGENT_KAFKA_CACHE", "OFFSETAGENT_KAFKA_VERSION", "OFFSETAGENT_JVM_CDS",
		"OFFSETAGENT_POSTGRES_BIN", "OFFSETAGENT_SECURED_AGENT_BIN", "OFFSETAGENT_CRASH_RACE"}, name)
}

// closest returns the name of known nearest to name when it is near enough to be what name
// misspells (at most 3 edits, or one of the two contains the other), else "".
func closest(name string, known []string) string {
	best, bestDist := "", 4
	for _, k := range known {
		d := editDistance(name, k)
		if d >= 4 && (strings.Contains(k, name) || strings.Contains(name, k)) {
			d = 3
		}
		if d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes: the names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
