package offsetstore

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"math/bits"
	"slices"
	"sync"

	"github.com/segmentio/kafka-go"
)

// SourceRecord is one live key of an offsets topic: its exact key bytes, latest value (never nil:
// tombstoned keys are dropped) and the topic partition it was read from.
type SourceRecord struct {
	Key, Value []byte
	Partition  int
}

// offsetsView is KafkaOffsetBackingStore's data map plus its connectorPartitions index (docs/connect-internals.md,
// "How Connect reads the topic"): the latest value per exact key bytes, and the live keys of each connector, so a request
// for one connector never scans the topic.
//
// Its memory holds no pointer per key, so that the collector neither scans nor rehashes millions
// of strings: each live key's bytes and value are copied into the view's arena (1 MiB chunks),
// each key has a 28-byte slot, the slots of one connector are chained, and one flat table
// (keyIndex) maps a 64-bit hash of the key bytes to its slot. A load touches the table once per
// record at random, everything else in order.
type offsetsView struct {
	mu   sync.RWMutex
	seed maphash.Seed
	// index maps the hash of a key to its slot.
	index keyIndex
	// slots are every key applied since the last compaction, removed ones (partition -1)
	// included until the next: a connector's chain may still run through them.
	slots slotList
	dead  int // removed slots
	// conns are the connectors' chains, by id; id 0 holds the keys that are not
	// [string, object|null]: kept, as Connect keeps them, but never listed for a connector.
	conns []connKeys
	// byConn maps a connector name to its id; recent remembers the last two connectors of
	// each name hash bucket, so that most records find theirs without a map lookup.
	byConn map[string]int32
	recent [1 << recentBits][2]recentConn
	arena  arena
	// touched is where apply puts what it reads ahead, so that the reads are not dropped.
	touched uint64
}

// keySlot is one key: where its bytes and value lie, the topic partition it was read from (-1
// once removed), its connector and the next slot of the connector's chain (-1 at the end).
type keySlot struct {
	at        span
	partition int32
	conn      int32
	next      int32
}

// connKeys is one connector's chain of slots and its count of live keys.
type connKeys struct {
	name string
	head int32
	live int
}

// recentConn is a connector in offsetsView.recent: its id and, when it fits, its name, so
// that a hit is checked in the bucket's own cache line (a load misses the cache on most
// buckets, and then again on the name's bytes elsewhere).
type recentConn struct {
	id   int32
	size uint8 // the name's length, or recentLong: compare with conns[id].name
	name [recentName]byte
}

const (
	recentName = 27 // a bucket is 64 bytes
	recentLong = 0xff
)

// recentBits is the log2 of the buckets of offsetsView.recent: with two connectors in each,
// a thousand connectors seldom share one (one bucket each, a fifth of them did).
const recentBits = 11

// nameHash is the hash of a connector name that picks its bucket of offsetsView.recent: its
// first and last 8 bytes and its length, mixed by a multiplication (the high bits are the
// best mixed). It is not seeded: a bucket only spares a map lookup, and two names that share
// one still find their ids, a little slower.
func nameHash(name string) uint64 {
	var a, b uint64
	if n := len(name); n >= 8 {
		a, b = le64(name), le64(name[n-8:])
	} else {
		for i := range n {
			a |= uint64(name[i]) << (8 * i)
		}
	}
	return (a ^ bits.RotateLeft64(b, 29) ^ uint64(len(name))) * 0x9e3779b97f4a7c15
}

// le64 reads the first 8 bytes of s as a little-endian number (one load).
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// otherKeys is the id of the keys that are not listed for any connector.
const otherKeys = 0

func newOffsetsView() *offsetsView {
	return &offsetsView{seed: maphash.MakeSeed(), byConn: map[string]int32{}, conns: []connKeys{{head: -1}}}
}

// apply keeps the latest value per key. Keys that are not [string, object|null] are stored but
// not indexed, as Connect does. It may be given records that alias a fetch buffer
// (kafkaio.NewBorrowingLog): it copies whatever it keeps.
func (v *offsetsView) apply(msgs []kafka.Message) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Keys come in no order, so each record's index entry is a cache miss. The records are
	// taken in groups: first every index entry of the group is read (independent loads,
	// which the CPU overlaps), then each record is applied, finding its entry cached.
	var hashes [applyGroup]uint64
	for len(msgs) > 0 {
		group := msgs[:min(len(msgs), applyGroup)]
		msgs = msgs[len(group):]
		for i := range group {
			if group[i].Key != nil {
				hashes[i] = maphash.Bytes(v.seed, group[i].Key)
			}
		}
		// A loop of loads alone: hashing between them (a call each) filled the CPU's window
		// of pending instructions after a few loads, so few misses overlapped.
		var touched uint64
		for i := range group {
			touched += v.index.peek(hashes[i])
		}
		v.touched = touched // keeps the loads
		for i := range group {
			if group[i].Key != nil { // Connect never writes a null key; a foreign one cannot be looked up
				v.applyOne(&group[i], hashes[i])
			}
		}
	}
	if v.arena.dead > arenaChunk && v.arena.dead > v.arena.used/2 || v.dead > 1024 && v.dead > v.slots.n/2 {
		v.compact()
	}
}

// applyGroup is the number of records whose index entries apply reads ahead.
const applyGroup = 32

// applyOne applies record m, whose key hashes to h.
func (v *offsetsView) applyOne(m *kafka.Message, h uint64) {
	pos, found := v.index.probe(h, func(j int32) bool { return bytes.Equal(v.arena.key(v.slots.at(j).at), m.Key) })
	if m.Value == nil {
		if found {
			v.remove(pos)
		}
		return
	}
	if found {
		sl := v.slots.at(int32(uint32(v.index.entries[pos])) - 1)
		v.arena.dead += int(sl.at.klen + sl.at.vlen)
		sl.at, sl.partition = v.arena.put(m.Key, m.Value), int32(m.Partition)
		return
	}
	c := int32(otherKeys)
	if name, ok := keyConnector(m.Key); ok {
		c = v.connID(name)
	}
	j := v.slots.add(keySlot{at: v.arena.put(m.Key, m.Value), partition: int32(m.Partition), conn: c, next: v.conns[c].head})
	v.conns[c].head = j
	v.conns[c].live++
	v.index.insertAt(pos, h, j)
}

// maxReserve bounds the keys expect makes room for: a topic that is not compacted yet may hold
// many records per key, and the table should not be sized by them (16 MiB at most).
const maxReserve = 1 << 20

// expect sizes the index for the initial load of records offsets (kafkaio.Log.OnLoad): the
// keys are at most that many, and growing the table through a load of a million keys rehashed
// every key twice, in fresh memory.
func (v *offsetsView) expect(records int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.index.reserve(int(min(records, maxReserve)))
}

// expectMore makes room in the index for records more keys than it holds (a large write
// about to be applied): the table grows once, before the records come, instead of doubling
// (and rehashing every key, in fresh memory) while they are applied.
func (v *offsetsView) expectMore(records int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.index.reserve(min(v.index.count+records, maxReserve))
}

// connID returns the id of connector name, adding it when new. name may alias a record.
func (v *offsetsView) connID(name string) int32 {
	set := &v.recent[nameHash(name)>>(64-recentBits)]
	for w := range set {
		if r := &set[w]; r.id > 0 && (r.size == recentLong && v.conns[r.id].name == name ||
			r.size != recentLong && int(r.size) == len(name) && string(r.name[:r.size]) == name) {
			return r.id
		}
	}
	id, ok := v.byConn[name]
	if !ok {
		id = int32(len(v.conns))
		name = string([]byte(name)) // own copy: name aliases the record
		v.conns = append(v.conns, connKeys{name: name, head: -1})
		v.byConn[name] = id
	}
	r := recentConn{id: id, size: recentLong}
	if len(name) <= recentName {
		r.size = uint8(copy(r.name[:], name))
	}
	set[1], set[0] = set[0], r
	return id
}

// remove drops the key of the index entry at pos; its slot stays in its connector's chain,
// marked removed, until the next compaction.
func (v *offsetsView) remove(pos int) {
	j := int32(uint32(v.index.entries[pos])) - 1
	v.index.deleteAt(pos)
	sl := v.slots.at(j)
	v.arena.dead += int(sl.at.klen + sl.at.vlen)
	sl.partition = -1
	v.conns[sl.conn].live--
	v.dead++
}

// compact copies every live key and value into a fresh arena and fresh slots, dropping the
// bytes of overwritten and removed keys, removed slots and connectors with no live key.
func (v *offsetsView) compact() {
	old, oldSlots, oldConns := v.arena, v.slots, v.conns
	live := oldSlots.n - v.dead
	v.arena, v.slots, v.dead = arena{}, slotList{}, 0
	v.conns, v.byConn, v.recent = []connKeys{{head: -1}}, map[string]int32{}, [len(v.recent)][2]recentConn{}
	v.index = keyIndex{}
	v.index.resize(bits.Len(uint(live)) + 1) // at most half full
	for id, c := range oldConns {
		if c.live == 0 && id != otherKeys {
			continue
		}
		nc := int32(otherKeys)
		if id != otherKeys {
			nc = int32(len(v.conns))
			v.conns = append(v.conns, connKeys{name: c.name, head: -1})
			v.byConn[c.name] = nc
		}
		for j := c.head; j >= 0; j = oldSlots.at(j).next {
			sl := oldSlots.at(j)
			if sl.partition < 0 {
				continue
			}
			key := old.key(sl.at)
			h := maphash.Bytes(v.seed, key)
			pos, _ := v.index.probe(h, func(int32) bool { return false }) // keys are distinct
			k := v.slots.add(keySlot{at: v.arena.put(key, old.value(sl.at)), partition: sl.partition, conn: nc, next: v.conns[nc].head})
			v.conns[nc].head = k
			v.conns[nc].live++
			v.index.insertAt(pos, h, k)
		}
	}
}

// live returns the live keys of connector, and of the keys listed for none.
func (v *offsetsView) live(connector string) (keys, others int) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if id, ok := v.byConn[connector]; ok {
		keys = v.conns[id].live
	}
	return keys, v.conns[otherKeys].live
}

func (v *offsetsView) records(connector string) []SourceRecord {
	v.mu.RLock()
	var out []SourceRecord
	if id, ok := v.byConn[connector]; ok && v.conns[id].live > 0 {
		out = make([]SourceRecord, 0, v.conns[id].live)
		for j := v.conns[id].head; j >= 0; j = v.slots.at(j).next {
			sl := v.slots.at(j)
			if sl.partition < 0 {
				continue // removed
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

// slotChunk is the number of slots in each chunk of a slotList past the first.
const slotChunk = 1 << 15

// slotList is the view's slots, in chunks: growing it copies no slot (and touches no fresh
// memory twice) once its first chunk is full.
type slotList struct {
	chunks [][]keySlot
	n      int
}

func (l *slotList) at(j int32) *keySlot { return &l.chunks[j/slotChunk][j%slotChunk] }

// add appends sl and returns its index.
func (l *slotList) add(sl keySlot) int32 {
	last := len(l.chunks) - 1
	if last < 0 || len(l.chunks[last]) == slotChunk {
		// The first chunk grows by append (a small view stays small); every later one is
		// allocated whole.
		size := slotChunk
		if last < 0 {
			size = 64
		}
		l.chunks = append(l.chunks, make([]keySlot, 0, size))
		last++
	}
	l.chunks[last] = append(l.chunks[last], sl)
	l.n++
	return int32(l.n - 1)
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
