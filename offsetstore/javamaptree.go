package offsetstore

import (
	"slices"
	"unicode/utf8"
)

// This file replays java.util.HashMap node by node, tree bins included, for the rare maps
// whose keys pile nine or more into one bucket of a table of 64 or more. Such a bucket becomes
// a red-black tree (HashMap.TreeNode) whose iteration order is no longer insertion order: the
// tree root is moved to the front of the bucket's list and a later key is linked right after
// its tree parent. Ordinary maps never get here (javaHashMapOrder sorts by bucket instead);
// this path exists so that crafted keys cannot make us write bytes a JVM would not.
// The code follows the JDK 17 HashMap (putVal, resize, treeifyBin, TreeNode.treeify,
// putTreeVal, balanceInsertion, rotations, split, moveRootToFront), unchanged up to JDK 25.

const javaUntreeifyThreshold = 6

type javaNode struct {
	hash int32 // HashMap.hash(key): the spread hash as a signed int
	key  string
	idx  int // position in the caller's member list
	next *javaNode

	// Tree bin fields (HashMap.TreeNode); tree is false for a plain list node.
	tree                      bool
	parent, left, right, prev *javaNode
	red                       bool
}

// javaHashMap holds the table sparsely: an initial capacity can be as large as 2^30.
type javaHashMap struct {
	javaTable
	tab  map[uint32]*javaNode
	size int
}

// javaHashMapTreeOrder returns the iteration order, as indices into keys, of a HashMap
// filled by put() with the distinct keys in order (initialCapacity < 0: new HashMap<>()).
func javaHashMapTreeOrder(keys []string, initialCapacity int) []int {
	m := javaHashMap{javaTable: newJavaTable(initialCapacity), tab: map[uint32]*javaNode{}}
	for i, k := range keys {
		m.put(&javaNode{hash: int32(javaSpreadHash(k)), key: k, idx: i})
	}
	buckets := make([]uint32, 0, len(m.tab))
	for b := range m.tab {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	order := make([]int, 0, len(keys))
	for _, b := range buckets {
		for e := m.tab[b]; e != nil; e = e.next {
			order = append(order, e.idx)
		}
	}
	return order
}

func (m *javaHashMap) index(h int32) uint32 {
	return uint32(h) & uint32(m.capacity-1)
}

// put is HashMap.putVal for a key that is not in the map yet.
func (m *javaHashMap) put(x *javaNode) {
	if m.capacity == 0 {
		m.resize()
	}
	i := m.index(x.hash)
	p := m.tab[i]
	switch {
	case p == nil:
		m.tab[i] = x
	case p.tree:
		m.putTreeVal(p, x)
	default:
		for binCount := 0; ; binCount++ {
			if p.next == nil {
				p.next = x
				if binCount >= javaTreeifyThreshold-1 {
					m.treeifyBin(x.hash)
				}
				break
			}
			p = p.next
		}
	}
	m.size++
	if m.size > m.threshold {
		m.resize()
	}
}

func (m *javaHashMap) resize() {
	oldCap := m.capacity
	m.javaTable.resize()
	if oldCap == 0 || m.capacity == oldCap {
		return
	}
	old := m.tab
	m.tab = make(map[uint32]*javaNode, len(old))
	for j, e := range old {
		switch {
		case e.next == nil:
			m.tab[m.index(e.hash)] = e
		case e.tree:
			m.split(e, j, uint32(oldCap))
		default:
			// Keep the list order, split by the new hash bit.
			var loHead, loTail, hiHead, hiTail *javaNode
			for ; e != nil; e = e.next {
				if uint32(e.hash)&uint32(oldCap) == 0 {
					if loTail == nil {
						loHead = e
					} else {
						loTail.next = e
					}
					loTail = e
				} else {
					if hiTail == nil {
						hiHead = e
					} else {
						hiTail.next = e
					}
					hiTail = e
				}
			}
			if loTail != nil {
				loTail.next = nil
				m.tab[j] = loHead
			}
			if hiTail != nil {
				hiTail.next = nil
				m.tab[j+uint32(oldCap)] = hiHead
			}
		}
	}
}

func (m *javaHashMap) treeifyBin(h int32) {
	if m.capacity < javaMinTreeifyCap {
		m.resize()
		return
	}
	i := m.index(h)
	var tl *javaNode
	for e := m.tab[i]; e != nil; e = e.next {
		e.tree = true
		e.prev = tl
		tl = e
	}
	m.treeify(m.tab[i])
}

// treeify builds the tree from the list starting at hd, in list order.
func (m *javaHashMap) treeify(hd *javaNode) {
	var root *javaNode
	for x := hd; x != nil; x = x.next {
		x.left, x.right = nil, nil
		if root == nil {
			x.parent, x.red, root = nil, false, x
			continue
		}
		for p := root; ; {
			dir := javaTreeDir(x, p)
			xp := p
			if dir <= 0 {
				p = p.left
			} else {
				p = p.right
			}
			if p == nil {
				x.parent = xp
				if dir <= 0 {
					xp.left = x
				} else {
					xp.right = x
				}
				root = javaBalanceInsertion(root, x)
				break
			}
		}
	}
	m.moveRootToFront(root)
}

// javaTreeDir compares by hash, then by String.compareTo; distinct strings never tie, so
// HashMap's tieBreakOrder (identity hash codes) is never reached.
func javaTreeDir(x, p *javaNode) int {
	switch {
	case p.hash > x.hash:
		return -1
	case p.hash < x.hash:
		return 1
	}
	return javaCompareStrings(x.key, p.key)
}

// putTreeVal links the new node into the tree and, in the iteration list, right after its
// tree parent.
func (m *javaHashMap) putTreeVal(root, x *javaNode) {
	x.tree = true
	for p := root; ; {
		dir := javaTreeDir(x, p)
		xp := p
		if dir <= 0 {
			p = p.left
		} else {
			p = p.right
		}
		if p == nil {
			xpn := xp.next
			x.next = xpn
			if dir <= 0 {
				xp.left = x
			} else {
				xp.right = x
			}
			xp.next = x
			x.parent, x.prev = xp, xp
			if xpn != nil {
				xpn.prev = x
			}
			m.moveRootToFront(javaBalanceInsertion(root, x))
			return
		}
	}
}

func (m *javaHashMap) moveRootToFront(root *javaNode) {
	i := m.index(root.hash)
	first := m.tab[i]
	if root == first {
		return
	}
	m.tab[i] = root
	rp, rn := root.prev, root.next
	if rn != nil {
		rn.prev = rp
	}
	if rp != nil {
		rp.next = rn
	}
	if first != nil {
		first.prev = root
	}
	root.next, root.prev = first, nil
}

// split divides tree bin b of bucket j between j and j+bit, keeping list order; a half of at
// most six nodes becomes a plain list again, a larger one is re-treeified unless it kept the
// whole bin.
func (m *javaHashMap) split(b *javaNode, j, bit uint32) {
	var loHead, loTail, hiHead, hiTail *javaNode
	lc, hc := 0, 0
	for e := b; e != nil; {
		next := e.next
		e.next = nil
		if uint32(e.hash)&bit == 0 {
			if e.prev = loTail; loTail == nil {
				loHead = e
			} else {
				loTail.next = e
			}
			loTail = e
			lc++
		} else {
			if e.prev = hiTail; hiTail == nil {
				hiHead = e
			} else {
				hiTail.next = e
			}
			hiTail = e
			hc++
		}
		e = next
	}
	if loHead != nil {
		m.tab[j] = loHead
		if lc <= javaUntreeifyThreshold {
			javaUntreeify(loHead)
		} else if hiHead != nil {
			m.treeify(loHead)
		}
	}
	if hiHead != nil {
		m.tab[j+bit] = hiHead
		if hc <= javaUntreeifyThreshold {
			javaUntreeify(hiHead)
		} else if loHead != nil {
			m.treeify(hiHead)
		}
	}
}

func javaUntreeify(hd *javaNode) {
	for e := hd; e != nil; e = e.next {
		e.tree = false
		e.parent, e.left, e.right, e.prev, e.red = nil, nil, nil, nil, false
	}
}

func javaRotateLeft(root, p *javaNode) *javaNode {
	if p == nil || p.right == nil {
		return root
	}
	r := p.right
	p.right = r.left
	if rl := p.right; rl != nil {
		rl.parent = p
	}
	r.parent = p.parent
	switch pp := r.parent; {
	case pp == nil:
		root = r
		r.red = false
	case pp.left == p:
		pp.left = r
	default:
		pp.right = r
	}
	r.left = p
	p.parent = r
	return root
}

func javaRotateRight(root, p *javaNode) *javaNode {
	if p == nil || p.left == nil {
		return root
	}
	l := p.left
	p.left = l.right
	if lr := p.left; lr != nil {
		lr.parent = p
	}
	l.parent = p.parent
	switch pp := l.parent; {
	case pp == nil:
		root = l
		l.red = false
	case pp.right == p:
		pp.right = l
	default:
		pp.left = l
	}
	l.right = p
	p.parent = l
	return root
}

func javaBalanceInsertion(root, x *javaNode) *javaNode {
	x.red = true
	for {
		xp := x.parent
		if xp == nil {
			x.red = false
			return x
		}
		xpp := xp.parent
		if !xp.red || xpp == nil {
			return root
		}
		if xppl := xpp.left; xp == xppl {
			if xppr := xpp.right; xppr != nil && xppr.red {
				xppr.red, xp.red, xpp.red = false, false, true
				x = xpp
				continue
			}
			if x == xp.right {
				x = xp
				root = javaRotateLeft(root, x)
				xp = x.parent
				xpp = nil
				if xp != nil {
					xpp = xp.parent
				}
			}
			if xp != nil {
				xp.red = false
				if xpp != nil {
					xpp.red = true
					root = javaRotateRight(root, xpp)
				}
			}
		} else {
			if xppl != nil && xppl.red {
				xppl.red, xp.red, xpp.red = false, false, true
				x = xpp
				continue
			}
			if x == xp.left {
				x = xp
				root = javaRotateRight(root, x)
				xp = x.parent
				xpp = nil
				if xp != nil {
					xpp = xp.parent
				}
			}
			if xp != nil {
				xp.red = false
				if xpp != nil {
					xpp.red = true
					root = javaRotateLeft(root, xpp)
				}
			}
		}
	}
}

// javaCompareStrings is String.compareTo: lexicographic over UTF-16 code units, which orders
// characters above U+FFFF (surrogates D800-DFFF) before U+E000-U+FFFF, unlike UTF-8 bytes.
func javaCompareStrings(a, b string) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := javaFirstUnit(ra), javaFirstUnit(rb)
			if ua != ub {
				return int(ua) - int(ub)
			}
			// Same high surrogate: compare the low ones.
			return int(0xDC00+(ra-0x10000)&0x3FF) - int(0xDC00+(rb-0x10000)&0x3FF)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// javaFirstUnit is the first UTF-16 code unit of r.
func javaFirstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}
