package connectors

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// The handlers' single pass over a large request's offsets (handlers/fastraw.go) reads each
// partition and offset map as a list of FlatFields, without boxing values into a
// jsonvalue.Map. A class may check such an entry itself (Class.CheckFlat): a yes must be
// exactly Validate's, a no only means "ask Validate", which then judges the boxed entry.
// The handlers' differential tests (TestSourceFastPathMatchesGeneral, FuzzRawSourceRecords,
// FuzzSourceFastPath) hold the two together: records and errors of both paths must be equal.

// FlatField is one member of a partition or offset map of the single pass's shape: a string
// (Text, its decoded value) or an integer written as Java prints a long (Long set, Text its
// digits).
type FlatField struct {
	Key, Text string
	Long      bool
}

// FlatCheck judges one entry of the single pass by its flat partition and offset members (see
// Class.CheckFlat). It is safe for concurrent use.
type FlatCheck func(partition, offset []FlatField) bool

// flatGet returns the member of fs with key.
func flatGet(fs []FlatField, key string) (FlatField, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f, true
		}
	}
	return FlatField{}, false
}

// flatLong is the value of a Long member (its digits fit: at most 18 of them).
func flatLong(f FlatField) (int64, bool) {
	if !f.Long {
		return 0, false
	}
	n, err := strconv.ParseInt(f.Text, 10, 64)
	return n, err == nil
}

// mirrorFlat is mirrorValidator's CheckFlat; the config plays no part.
func mirrorFlat(onlyZero bool, stringKeys ...string) func(map[string]string) FlatCheck {
	checkPartitionKey := stringKeys[0] != "sourceClusterAlias"
	check := func(p, o []FlatField) bool {
		for _, k := range stringKeys {
			if f, ok := flatGet(p, k); !ok || f.Long {
				return false
			}
		}
		if checkPartitionKey {
			f, ok := flatGet(p, "partition")
			if !ok {
				return false
			}
			n, ok := flatLong(f)
			if !ok || n > 1<<31-1 || int32(n) < 0 {
				return false
			}
		}
		f, ok := flatGet(o, "offset")
		if !ok {
			return false
		}
		n, ok := flatLong(f)
		switch {
		case !ok:
			return false
		case onlyZero:
			return n == 0
		default:
			return n >= 0
		}
	}
	return func(map[string]string) FlatCheck { return check }
}

// fileStreamSourceFlat is validateFileStreamSource's CheckFlat.
func fileStreamSourceFlat(config map[string]string) FlatCheck {
	hasFile := javaNonBlank(config["file"])
	return func(p, o []FlatField) bool {
		if !hasFile {
			return false
		}
		f, ok := flatGet(o, "position")
		if !ok {
			return false
		}
		if n, ok := flatLong(f); !ok || n < 0 {
			return false
		}
		_, ok = flatGet(p, "filename")
		return ok
	}
}

// javaNonBlank reports whether s is not empty once String.trim has stripped U+0000 to U+0020
// from both ends: whether it has a byte above ' ' (every byte of a longer character is).
func javaNonBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > ' ' {
			return true
		}
	}
	return false
}

// checkFlat is validate's CheckFlat, for connectors whose partition and offset rules have
// flat twins (partitionFlat, offsetKind); it refuses every entry of others.
func (d dbzConnector) checkFlat(config map[string]string) FlatCheck {
	name, partition, ok := d.flatRules(config)
	if !ok {
		return refuseFlat
	}
	return func(p, o []FlatField) bool {
		if !flatHasKeySet(p, d.partitions) {
			return false
		}
		for _, f := range p {
			if f.Long {
				return false
			}
		}
		if name != "" {
			if f, ok := flatGet(p, d.nameKey); !ok || f.Text != name {
				return false
			}
		}
		if partition != nil && !partition(p) {
			return false
		}
		// Every member is looked at once: with a key twice, a later member that the boxed
		// rules would not look at may refuse the entry, which only leaves it to Validate.
		for _, f := range o {
			if !d.offsetKind(f.Key).holds(f) || !dbzCommonKind(f.Key).holds(f) {
				return false
			}
		}
		return true
	}
}

// checkFlatKeys is checkFlat made once per key sequence (Class.CheckFlatKeys): the partition's
// key set, where the logical name lies and what each offset member must be are settled from
// the keys, and each entry only has its values looked at.
func (d dbzConnector) checkFlatKeys(config map[string]string) func(pkeys, okeys []string) FlatCheck {
	name, partition, ok := d.flatRules(config)
	if !ok {
		return func([]string, []string) FlatCheck { return refuseFlat }
	}
	return func(pkeys, okeys []string) FlatCheck {
		if !keysHaveSet(pkeys, d.partitions) {
			return refuseFlat
		}
		nameAt := -1
		if name != "" {
			if nameAt = slices.Index(pkeys, d.nameKey); nameAt < 0 {
				return refuseFlat
			}
		}
		// The members with a rule, and their two rules (the connector's, the common one).
		type rule struct {
			at          int
			own, common flatKind
		}
		var rules []rule
		for i, k := range okeys {
			if r := (rule{i, d.offsetKind(k), dbzCommonKind(k)}); r.own != kindAny || r.common != kindAny {
				rules = append(rules, r)
			}
		}
		return func(p, o []FlatField) bool {
			for _, f := range p {
				if f.Long {
					return false
				}
			}
			if nameAt >= 0 && p[nameAt].Text != name {
				return false
			}
			if partition != nil && !partition(p) {
				return false
			}
			for _, r := range rules {
				if f := o[r.at]; !r.own.holds(f) || !r.common.holds(f) {
					return false
				}
			}
			return true
		}
	}
}

// flatRules is what the flat checks need of config: the logical name every partition names
// and the connector's partition rule (nil: none); ok is false when the connector's rules have
// no flat twins.
func (d dbzConnector) flatRules(config map[string]string) (name string, partition func([]FlatField) bool, ok bool) {
	if d.offsetKind == nil || (d.partition != nil && d.partitionFlat == nil) {
		return "", nil, false
	}
	if name = config["topic.prefix"]; name == "" {
		name = config[d.legacyNameConfig]
	}
	if d.partitionFlat != nil {
		partition = d.partitionFlat(config)
	}
	return name, partition, true
}

// refuseFlat is the FlatCheck that leaves every entry to Validate.
func refuseFlat([]FlatField, []FlatField) bool { return false }

// flatHasKeySet is hasKeySet: p's keys (distinct) are exactly one of sets.
func flatHasKeySet(p []FlatField, sets [][]string) bool {
	for _, set := range sets {
		if len(set) != len(p) {
			continue
		}
		all := true
		for _, k := range set {
			if _, ok := flatGet(p, k); !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// keysHaveSet is flatHasKeySet on the keys alone (distinct).
func keysHaveSet(keys []string, sets [][]string) bool {
	for _, set := range sets {
		if len(set) == len(keys) && !slices.ContainsFunc(set, func(k string) bool { return !slices.Contains(keys, k) }) {
			return true
		}
	}
	return false
}

// flatKind is what a member of a flat map must be, by its key.
type flatKind uint8

const (
	kindAny          flatKind = iota
	kindString                // a string
	kindLong                  // an integer (Long)
	kindSnapshot              // the string true, INITIAL, BLOCKING or INCREMENTAL
	kindSQLServerLsn          // a string sqlServerLsn matches
)

// holds reports whether f is of kind k.
func (k flatKind) holds(f FlatField) bool {
	switch k {
	case kindString:
		return !f.Long
	case kindLong:
		return f.Long
	case kindSnapshot:
		return !f.Long && (f.Text == "true" || f.Text == "INITIAL" || f.Text == "BLOCKING" || f.Text == "INCREMENTAL")
	case kindSQLServerLsn:
		return !f.Long && isSQLServerLsn(f.Text)
	}
	return true
}

// dbzCommonKind is dbzCommonOffset's rule for an offset member with key, in flat terms.
func dbzCommonKind(key string) flatKind {
	switch key {
	case "snapshot":
		return kindSnapshot
	case "transaction_id", "incremental_snapshot_primary_key", "incremental_snapshot_maximum_key",
		"incremental_snapshot_collections", "incremental_snapshot_correlation_id":
		return kindString
	}
	if strings.HasPrefix(key, "transaction_data_collection_order_") {
		return kindLong
	}
	return kindAny
}

// sqlServerPartitionFlat is sqlServerPartition's CheckFlat, for config; nil when
// database.names is not set (every partition passes then).
func sqlServerPartitionFlat(config map[string]string) func(p []FlatField) bool {
	names := strings.TrimSpace(config["database.names"])
	if names == "" {
		return nil
	}
	var dbs []string
	for _, n := range strings.Split(names, ",") {
		dbs = append(dbs, strings.TrimSpace(n))
	}
	return func(p []FlatField) bool {
		db, hasDB := flatGet(p, "database")
		if !hasDB {
			return false
		}
		for _, n := range dbs {
			if strings.EqualFold(n, db.Text) {
				return true
			}
		}
		return false
	}
}

// sqlServerOffsetKind is sqlServerOffset's rule for an offset member with key, in flat terms.
func sqlServerOffsetKind(key string) flatKind {
	switch key {
	case "commit_lsn", "change_lsn":
		return kindSQLServerLsn
	case "event_serial_no":
		return kindLong
	}
	return kindAny
}

// isSQLServerLsn is sqlServerLsn.MatchString without the regular expression machinery. A
// Debezium SQL Server request checks two per offset: the 20 hex digits are checked 8 at a time.
func isSQLServerLsn(s string) bool {
	if s == "NULL" {
		return true
	}
	if len(s) != 22 || s[8] != ':' || s[17] != ':' {
		return false
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	le := binary.LittleEndian
	// The last 4 digits, and four '0's above them.
	return hex8(le.Uint64(b[0:8])) && hex8(le.Uint64(b[9:17])) && hex8(uint64(le.Uint32(b[18:22]))|0x30303030<<32)
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hex8 reports whether each of the 8 bytes of x is a hexadecimal digit. For bytes below 0x80,
// adding 0x80-lo sets a byte's high bit when it is at least lo, adding 0x7f-hi when it is
// above hi; no sum carries into the next byte.
func hex8(x uint64) bool {
	if x&highs != 0 {
		return false
	}
	digit := (x + (0x80-'0')*ones) &^ (x + (0x7f-'9')*ones)
	lower := x | 0x20*ones // 'A'-'F' to 'a'-'f'; no other byte lands there
	letter := (lower + (0x80-'a')*ones) &^ (lower + (0x7f-'f')*ones)
	return (digit|letter)&highs == highs
}
