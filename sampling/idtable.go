package sampling

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// idTable numbers the vertices of one block: a map from global vertex id
// to a position in the block's sources. reset sizes it for the block at
// hand and the range [0, n) of its vertices, and picks one of two forms:
//
//   - when n is at most twice the slots a hashed table would have (n ≤
//     2·tableSlots(m)), a direct array of n entries indexed by vertex,
//     each stamped with the generation of the reset that stored it, so
//     that a reset clears nothing (it starts a new generation) and a
//     lookup is one load. Its 8 bytes per vertex are at most the 16 per
//     slot of the hashed table it replaces.
//   - otherwise, open addressing with linear probing over a power-of-two
//     number of slots, doubled whenever it becomes half full.
//
// Either way its memory is proportional to the block, never to the graph
// alone. The arrays are kept between blocks (a smaller block uses and
// clears a prefix of the slots, or starts a generation of the array), and
// a table is reused (through tables) between calls.
type idTable struct {
	slots []idSlot
	mask  uint64  // slots in use − 1
	bits  uint    // log2(slots in use)
	used  int     // keys stored in the slots (not counted when direct)
	max   int     // keys the slots in use hold at most half full
	src   []int64 // relabel's sources while a block is built
	fresh []int64 // and the ids first given in a row

	direct bool      // the block's keys are in dense, not slots
	dense  []idStamp // dense[v]: the value of v if its gen is gen
	gen    uint32    // the generation of the current block, ≥ 1
}

// idStamp is an entry of an idTable's direct array: a vertex's value and
// the generation in which it was stored.
type idStamp struct {
	gen uint32
	val int32
}

// idSlot is a slot of an idTable: a key and its value side by side, so
// that a probe reads one cache line, not one in each of two arrays.
type idSlot struct {
	key int64 // vertex + 1 in a used slot, 0 in a free one
	val int32
}

// minSlots is the smallest table.
const minSlots = 64

// tableSlots is the number of slots of an idTable for m keys.
func tableSlots(m int) int {
	size := minSlots
	for size < 2*m {
		size <<= 1
	}
	return size
}

// reset empties t and sizes it for about m keys (it grows if more come)
// in [0, n) (n ≤ 0: unknown, any int64 of at least 0).
func (t *idTable) reset(m int, n int64) {
	size := tableSlots(m)
	t.used = 0
	if n > 0 && n <= 2*int64(size) {
		t.direct = true
		if int64(len(t.dense)) < n {
			t.dense = make([]idStamp, n) // stamped 0: no generation's
		}
		t.gen++
		if t.gen == 0 { // wrapped: the stamps of 2^32 resets ago would match
			clear(t.dense)
			t.gen = 1
		}
		return
	}
	t.direct = false
	if len(t.slots) < size {
		t.slots = make([]idSlot, size)
	} else {
		clear(t.slots[:size])
	}
	t.mask = uint64(size - 1)
	t.bits = uint(bits.TrailingZeros(uint(size)))
	t.max = size / 2
}

// home is the first slot probed for v (Fibonacci hashing: the top bits of
// v times 2^64/φ).
func (t *idTable) home(v int64) uint64 {
	return (uint64(v) * 0x9e3779b97f4a7c15) >> (64 - t.bits)
}

// put returns the value of v if v is in t; otherwise it stores v with the
// value x and returns x. v is in [0, n) of the last reset.
func (t *idTable) put(v int64, x int32) int32 {
	if t.direct { // small enough to inline: one load, maybe a store
		e := &t.dense[v]
		if e.gen != t.gen {
			*e = idStamp{gen: t.gen, val: x}
			return x
		}
		return e.val
	}
	return t.putHashed(v, x)
}

// putHashed is put into the slots.
func (t *idTable) putHashed(v int64, x int32) int32 {
	k := v + 1
	i := t.home(v)
	for ; t.slots[i].key != 0; i = (i + 1) & t.mask {
		if t.slots[i].key == k {
			return t.slots[i].val
		}
	}
	if t.used == t.max {
		t.grow()
		return t.putHashed(v, x)
	}
	t.slots[i] = idSlot{key: k, val: x}
	t.used++
	return x
}

// get returns the value of v, or −1 if v is not in t.
func (t *idTable) get(v int64) int32 {
	if t.direct {
		if uint64(v) < uint64(len(t.dense)) && t.dense[v].gen == t.gen {
			return t.dense[v].val
		}
		return -1
	}
	k := v + 1
	for i := t.home(v); t.slots[i].key != 0; i = (i + 1) & t.mask {
		if t.slots[i].key == k {
			return t.slots[i].val
		}
	}
	return -1
}

// grow doubles the slots in use, keeping the keys.
func (t *idTable) grow() {
	old := t.slots[:t.mask+1]
	t.slots = nil // a fresh array: the old one is read while this fills
	t.reset(2*t.max, 0)
	for _, s := range old {
		if s.key != 0 {
			t.put(s.key-1, s.val)
		}
	}
}

// tables holds idTables between calls.
var tables = sync.Pool{New: func() any { return new(idTable) }}

// forEach calls fn(b, t) for b in [0, k) on up to GOMAXPROCS goroutines,
// each with its own idTable t (from tables) for the blocks it builds.
// It will panic with fn's panic.
func forEach(k int, fn func(b int, t *idTable)) {
	g := min(k, runtime.GOMAXPROCS(0))
	if g <= 1 {
		t := tables.Get().(*idTable)
		for b := range k {
			fn(b, t)
		}
		tables.Put(t)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var pv any
	for range g {
		wg.Go(func() {
			t := tables.Get().(*idTable) // reset empties it for each block
			defer tables.Put(t)
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { pv = r })
				}
			}()
			for {
				b := int(next.Add(1) - 1)
				if b >= k {
					return
				}
				fn(b, t)
			}
		})
	}
	wg.Wait()
	if pv != nil {
		panic(pv)
	}
}
