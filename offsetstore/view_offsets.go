package offsetstore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"hash/maphash"
	"slices"
	"sync"
	"unsafe"

	"github.com/offsetagent/offsetagent/internal/jsonvalue"
	"github.com/segmentio/kafka-go"
)

// SourceRecord is one live key of an offsets topic: its exact key bytes, latest value (never nil:
// tombstoned keys are dropped) and the topic partition it was read from.
type SourceRecord struct {
	Key, Value []byte
	Partition  int
}

// offsetsView is KafkaOffsetBackingStore's data map plus its connectorPartitions index (docs/connect-internals.md
// §3.4): the latest value per exact key bytes, and the live keys of each connector, so a request
// for one connector never scans the topic.
//
// Its memory holds no pointer per key, so that the collector neither scans nor rehashes millions
// of strings: each live key's bytes and value are copied into the view's arena (1 MiB chunks),
// and each connector's keys are a slice of slots indexed by a 64-bit hash of the key bytes
// (collisions chained through the slots). A key costs its bytes, one 24-byte slot and one hash
// index entry.
type offsetsView struct {
	mu   sync.RWMutex
	seed maphash.Seed
	// byConn maps a connector name to its live keys: one insert per record, and a request
	// reads only its connector's keys.
	byConn map[string]*keySet
	// other holds live keys that are not [string, object|null]: kept, as Connect keeps them,
	// but never listed for a connector.
	other *keySet
	arena arena
}

func newOffsetsView() *offsetsView {
	return &offsetsView{seed: maphash.MakeSeed(), byConn: map[string]*keySet{}, other: newKeySet()}
}

// apply keeps the latest value per key. Keys that are not [string, object|null] are stored but
// not indexed, as Connect does.
func (v *offsetsView) apply(msgs []kafka.Message) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Records of one fetch mostly belong to a few connectors: remember the last one's set.
	var lastName string
	var lastSet *keySet
	for i := range msgs {
		m := &msgs[i]
		if m.Key == nil {
			continue // Connect never writes a null key; a foreign one cannot be looked up
		}
		h := maphash.Bytes(v.seed, m.Key)
		name, ok := keyConnector(m.Key)
		if m.Value == nil {
			v.remove(h, m.Key, name, ok)
			lastSet = nil // remove may have dropped the connector's set
			continue
		}
		if !ok {
			v.other.put(&v.arena, h, m.Key, m.Value, int32(m.Partition))
			continue
		}
		set := lastSet
		if set == nil || name != lastName {
			if set = v.byConn[name]; set == nil {
				set = newKeySet()
				v.byConn[string([]byte(name))] = set // own copy: name aliases the record
			}
			lastName, lastSet = name, set
		}
		set.put(&v.arena, h, m.Key, m.Value, int32(m.Partition))
	}
	if v.arena.dead > arenaChunk && v.arena.dead > v.arena.used/2 {
		v.compact()
	}
}

func (v *offsetsView) remove(h uint64, key []byte, name string, indexed bool) {
	if !indexed {
		v.other.remove(&v.arena, h, key)
		return
	}
	if set := v.byConn[name]; set != nil {
		set.remove(&v.arena, h, key)
		if set.live == 0 {
			delete(v.byConn, name)
		}
	}
}

// compact copies every live key and value into a fresh arena, dropping the bytes of
// overwritten and removed keys.
func (v *offsetsView) compact() {
	old := v.arena
	v.arena = arena{}
	for _, set := range v.byConn {
		set.moveTo(&old, &v.arena)
	}
	v.other.moveTo(&old, &v.arena)
}

func (v *offsetsView) records(connector string) []SourceRecord {
	v.mu.RLock()
	set := v.byConn[connector]
	var out []SourceRecord
	if set != nil {
		out = make([]SourceRecord, 0, set.live)
		for i := range set.slots {
			sl := &set.slots[i]
			if sl.partition < 0 {
				continue // free
			}
			// Copies: the arena is the view's, callers may change theirs.
			out = append(out, SourceRecord{Key: bytes.Clone(v.arena.key(sl.at)), Value: append([]byte{}, v.arena.value(sl.at)...),
				Partition: int(sl.partition)})
		}
	}
	v.mu.RUnlock()
	slices.SortFunc(out, func(a, b SourceRecord) int {
		if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return out
}

// arenaChunk is the size of the view's arena chunks (a record bigger than that gets a chunk of
// its own size).
const arenaChunk = 1 << 20

// arena holds the key and value bytes of the view's live keys, back to back in chunks that the
// collector never scans. Overwritten and removed keys leave dead bytes, which compact drops.
type arena struct {
	chunks     [][]byte
	used, dead int
}

// span is where one key and its value lie in an arena: the value follows the key.
type span struct {
	chunk, off, klen, vlen uint32
}

func (a *arena) put(key, value []byte) span {
	n := len(key) + len(value)
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < n {
		a.chunks = append(a.chunks, make([]byte, 0, max(arenaChunk, n)))
		last++
	}
	c := a.chunks[last]
	sp := span{chunk: uint32(last), off: uint32(len(c)), klen: uint32(len(key)), vlen: uint32(len(value))}
	c = append(c, key...)
	a.chunks[last] = append(c, value...)
	a.used += n
	return sp
}

func (a *arena) key(sp span) []byte {
	return a.chunks[sp.chunk][sp.off : sp.off+sp.klen : sp.off+sp.klen]
}

func (a *arena) value(sp span) []byte {
	start := sp.off + sp.klen
	return a.chunks[sp.chunk][start : start+sp.vlen : start+sp.vlen]
}

// keySet is the live keys of one connector (or the unindexed ones).
type keySet struct {
	// index maps a key's hash to its first slot; slots of equal hashes are chained by next.
	index map[uint64]int32
	slots []keySlot
	// free is the first free slot (chained by next), -1 for none.
	free int32
	live int
	// bytes is the arena bytes of the set's live keys and values.
	bytes int
}

// keySlot is one live key (partition >= 0) or a free slot (partition -1).
type keySlot struct {
	at        span
	partition int32
	next      int32
}

func newKeySet() *keySet { return &keySet{index: map[uint64]int32{}, free: -1} }

// find returns the slot of key and the slot before it in its chain (-1 when first), or -1.
func (s *keySet) find(a *arena, h uint64, key []byte) (at, prev int32) {
	first, ok := s.index[h]
	if !ok {
		return -1, -1
	}
	prev = -1
	for j := first; j >= 0; prev, j = j, s.slots[j].next {
		if bytes.Equal(a.key(s.slots[j].at), key) {
			return j, prev
		}
	}
	return -1, -1
}

func (s *keySet) put(a *arena, h uint64, key, value []byte, partition int32) {
	sp := a.put(key, value)
	n := len(key) + len(value)
	// One index lookup for the chain (a load touches the index at random: each lookup is
	// likely a cache miss).
	first, ok := s.index[h]
	if ok {
		for j := first; j >= 0; j = s.slots[j].next {
			sl := &s.slots[j]
			if bytes.Equal(a.key(sl.at), key) {
				dead := int(sl.at.klen + sl.at.vlen)
				a.dead += dead
				s.bytes += n - dead
				sl.at, sl.partition = sp, partition
				return
			}
		}
	} else {
		first = -1
	}
	sl := keySlot{at: sp, partition: partition, next: first}
	j := s.free
	if j >= 0 {
		s.free = s.slots[j].next
		s.slots[j] = sl
	} else {
		j = int32(len(s.slots))
		s.slots = append(s.slots, sl)
	}
	s.index[h] = j
	s.live++
	s.bytes += n
}

func (s *keySet) remove(a *arena, h uint64, key []byte) {
	j, prev := s.find(a, h, key)
	if j < 0 {
		return
	}
	sl := &s.slots[j]
	switch {
	case prev >= 0:
		s.slots[prev].next = sl.next
	case sl.next >= 0:
		s.index[h] = sl.next
	default:
		delete(s.index, h)
	}
	n := int(sl.at.klen + sl.at.vlen)
	a.dead += n
	s.bytes -= n
	*sl = keySlot{partition: -1, next: s.free}
	s.free = j
	s.live--
}

// moveTo copies the set's live bytes from old into a.
func (s *keySet) moveTo(old, a *arena) {
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.partition >= 0 {
			sl.at = a.put(old.key(sl.at), old.value(sl.at))
		}
	}
}

// keyConnector returns the connector name of an offsets key, [name, partition], following
// OffsetUtils.processPartitionKey: a 2-element JSON array whose first element is a string and
// whose second is an object or null. It scans the bytes without decoding them (loads call it for
// every record), falling back to encoding/json only for a name with escapes. The returned string
// may alias key.
func keyConnector(key []byte) (string, bool) {
	i := jsonvalue.SkipSpace(key, 0)
	if i >= len(key) || key[i] != '[' {
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i+1)
	if i >= len(key) || key[i] != '"' {
		return "", false
	}
	end, escaped := scanString(key, i)
	if end < 0 {
		return "", false
	}
	raw := key[i : end+1]
	i = jsonvalue.SkipSpace(key, end+1)
	if i >= len(key) || key[i] != ',' {
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i+1)
	switch {
	case i < len(key) && key[i] == '{':
		if i = skipObject(key, i); i < 0 {
			return "", false
		}
	case bytes.HasPrefix(key[i:], []byte("null")):
		i += len("null")
	default:
		return "", false
	}
	i = jsonvalue.SkipSpace(key, i)
	if i >= len(key) || key[i] != ']' || jsonvalue.SkipSpace(key, i+1) != len(key) {
		return "", false
	}
	if !escaped {
		inner := raw[1 : len(raw)-1]
		return unsafe.String(unsafe.SliceData(inner), len(inner)), true
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return "", false
	}
	return name, true
}

// scanString returns the index of the closing quote of the JSON string opening at b[i], or -1,
// and whether the string has escapes.
func scanString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}

// skipObject returns the index after the JSON object opening at b[i] (balanced braces and
// brackets, strings honoured), or -1. It does not validate the members: Connect's readers would
// reject a malformed key anyway, and the agent never writes one.
func skipObject(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			end, _ := scanString(b, j)
			if end < 0 {
				return -1
			}
			j = end
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}
