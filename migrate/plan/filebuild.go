package plan

import (
	"encoding/json"
	"slices"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/migrate/fleet"
	"github.com/offsetagent/offsetagent/migrate/source"
	"github.com/offsetagent/offsetagent/mm2"
)

// FileOptions say what the plan file of a Plan records besides the plan itself.
type FileOptions struct {
	// Registry knows the classes' secret keys (nil: connectors.Builtin()).
	Registry *connectors.Registry
	// Selection is the plan's (for what each edit was made by).
	Selection source.Selection
	// InitialState overrides the state each connector is created in ("" for A's).
	InitialState string
	// ConfigTopic is A's config topic, RecordAt the offset of a connector's live record in it
	// (nil when A is read through REST only).
	ConfigTopic string
	RecordAt    func(name string) (int64, bool)
	// ExistsOnB says whether B has a connector by that name now; nil when B's connectors
	// were not read.
	ExistsOnB map[string]bool
	// Words spell what the file says of a connector (why it is refused) for its reader: the
	// caller's terms (nil: fleet.GoWords).
	Words fleet.Words
}

func (o FileOptions) words() fleet.Words {
	if o.Words == nil {
		return fleet.GoWords
	}
	return o.Words
}

// File is the plan file's connectors of p (the caller fills in the rest of the File).
func (p *Plan) File(o FileOptions) []*FileConnector {
	var out []*FileConnector
	for _, pc := range p.Connectors {
		out = append(out, p.fileConnector(pc, o))
	}
	return out
}

func (p *Plan) fileConnector(pc *Connector, o FileOptions) *FileConnector {
	c := pc.Connector
	secret := fleet.Secret(o.Registry, c.Config)
	secretOnB := func(key string) bool { return secret(key) || fleet.Secret(o.Registry, pc.OnB)(key) }
	fc := &FileConnector{Name: c.Name, Target: pc.Target, Type: string(c.Type), StateOnA: c.State,
		FingerprintOnA: Fingerprint(c.Config, secret), Warnings: slices.Clone(pc.Warnings), Refused: c.Problem.Spell(o.words())}
	if class, ok := c.Config.Get("connector.class"); ok {
		fc.Class = class
	}
	fc.TargetState = c.State
	if o.InitialState != "" {
		fc.TargetState = o.InitialState
	}
	if o.RecordAt != nil {
		if at, ok := o.RecordAt(c.Name); ok {
			fc.ConfigRecordOnA = &RecordAt{Topic: o.ConfigTopic, Offset: at}
			fc.SecretChangeDetected = true
		}
	}
	if o.ExistsOnB != nil {
		exists := o.ExistsOnB[pc.Target]
		fc.ExistsOnB = &exists
	}
	fc.SetConfigOnB(shown(pc.OnB, secretOnB))
	for _, kv := range pc.OnB {
		if secretOnB(kv.Key) {
			fc.SecretKeys = append(fc.SecretKeys, kv.Key)
		}
	}
	for _, kv := range c.Config {
		if secret(kv.Key) && !slices.Contains(fc.SecretKeys, kv.Key) {
			fc.SecretKeys = append(fc.SecretKeys, kv.Key)
		}
	}
	fc.Edits = fileEdits(pc, o, secretOnB)
	if r := pc.Rekey; r != nil {
		fc.Rekey = &FileRekey{Key: r.Key, From: r.From, To: r.To}
	}
	if c.Type == connectors.Sink {
		s := &FileSink{GroupOnA: c.Group, GroupOnB: fleet.SinkGroup(pc.Target, pc.OnB.Map()), MM2Blocked: p.Blocked[c.Group]}
		if pc.Follows != nil {
			for _, src := range pc.Follows.Sources {
				s.FollowsSources = append(s.FollowsSources, src.Name)
			}
		}
		fc.Sink = s
	}
	if len(c.Offsets) > 0 {
		fc.OffsetsNow = &OffsetsNow{}
		for _, off := range c.Offsets {
			pb, _ := json.Marshal(off.Partition)
			ob, _ := json.Marshal(off.Offset)
			fc.OffsetsNow.Partitions = append(fc.OffsetsNow.Partitions, FileOffset{Partition: string(pb), Offset: string(ob)})
		}
	}
	for _, h := range pc.Hazards {
		fc.Hazards = append(fc.Hazards, FileHazard{Check: h.Check, Key: h.Key, Refuse: h.Refuse, Message: h.Message.Spell(o.words()), Fix: h.Fix.Spell(o.words())})
	}
	return fc
}

// shown is cfg as the plan shows it: a secret key's value hidden, a password inside any other
// value masked, placeholders as stored.
func shown(cfg events.Config, secret func(string) bool) []ConfigValue {
	r := cfg.RedactedBy(secret)
	out := make([]ConfigValue, len(r))
	for i, kv := range r {
		out[i] = ConfigValue{Key: kv.Key, Value: kv.Value, Null: kv.Null}
	}
	return out
}

// fileEdits lists every difference of pc's config on B from A's, in the order of the config on
// B, then the keys B's lacks, each with what made it.
func fileEdits(pc *Connector, o FileOptions, secret func(string) bool) []FileEdit {
	c := pc.Connector
	onA := shown(c.Config, secret)
	onB := shown(pc.OnB, secret)
	rawA, rawB := c.Config.Map(), pc.OnB.Map()
	find := func(cfg []ConfigValue, key string) (ConfigValue, bool) {
		for _, kv := range cfg {
			if kv.Key == key {
				return kv, true
			}
		}
		return ConfigValue{}, false
	}
	val := func(kv ConfigValue, ok bool) *string {
		if !ok || kv.Null {
			return nil
		}
		v := kv.Value
		return &v
	}
	rewrites := map[string]bool{}
	for _, r := range pc.Rewrites {
		rewrites[r.Key] = true
	}
	by := func(key string) (string, string) {
		switch {
		case key == "name":
			if o.Selection.TargetName(c.Name) != pc.Target {
				return ByKubernetesName, ""
			}
			return ByRename, o.Selection.RenameRule(c.Name)
		case rewrites[key] && (key == mm2.TopicsKey || key == mm2.TopicsRegexKey):
			return ByMM2Policy, ""
		case rewrites[key]:
			return ByRestoreTopicNames, ""
		case slices.Contains(o.Selection.SetKeys(), key):
			return BySet, ""
		case slices.Contains(o.Selection.UnsetKeys(), key):
			return ByUnset, ""
		}
		return ByMapValue, ""
	}
	var out []FileEdit
	for _, kv := range onB {
		a, okA := find(onA, kv.Key)
		rawVA, hadA := rawA[kv.Key]
		if okA && hadA && rawVA == rawB[kv.Key] && a.Null == kv.Null {
			continue
		}
		b, rule := by(kv.Key)
		out = append(out, FileEdit{Key: kv.Key, From: val(a, okA), To: val(kv, true), By: b, Rule: rule})
	}
	for _, kv := range onA {
		if _, ok := find(onB, kv.Key); !ok {
			b, rule := by(kv.Key)
			out = append(out, FileEdit{Key: kv.Key, From: val(kv, true), By: b, Rule: rule})
		}
	}
	return out
}
