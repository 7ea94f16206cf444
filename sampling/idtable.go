package sampling

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// idTable numbers the vertices of one block: a map from global vertex id
// to a position in the block's sources, by open addressing with linear
// probing over a power-of-two number of slots. reset sizes it for the
// block at hand, and it doubles whenever it becomes half full, so its
// memory is proportional to the block, never to the graph. The slots are
// kept between blocks (a smaller block uses and clears a prefix of them),
// and a table is reused (in a numbering) between calls.
type idTable struct {
	keys []int64 // vertex + 1 in a used slot, 0 in a free one
	vals []int32
	mask uint64 // slots in use − 1
	bits uint   // log2(slots in use)
	used int    // keys stored
	max  int    // keys the slots in use hold at most half full
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

// reset empties t and sizes it for about m keys (it grows if more come).
func (t *idTable) reset(m int) {
	size := tableSlots(m)
	if len(t.keys) < size {
		t.keys, t.vals = make([]int64, size), make([]int32, size)
	} else {
		clear(t.keys[:size])
	}
	t.mask = uint64(size - 1)
	t.bits = uint(bits.TrailingZeros(uint(size)))
	t.used, t.max = 0, size/2
}

// home is the first slot probed for v (Fibonacci hashing: the top bits of
// v times 2^64/φ).
func (t *idTable) home(v int64) uint64 {
	return (uint64(v) * 0x9e3779b97f4a7c15) >> (64 - t.bits)
}

// put returns the value of v if v is in t; otherwise it stores v with the
// value x and returns x.
func (t *idTable) put(v int64, x int32) int32 {
	k := v + 1
	i := t.home(v)
	for ; t.keys[i] != 0; i = (i + 1) & t.mask {
		if t.keys[i] == k {
			return t.vals[i]
		}
	}
	if t.used == t.max {
		t.grow()
		return t.put(v, x)
	}
	t.keys[i], t.vals[i] = k, x
	t.used++
	return x
}

// get returns the value of v, or −1 if v is not in t.
func (t *idTable) get(v int64) int32 {
	k := v + 1
	for i := t.home(v); t.keys[i] != 0; i = (i + 1) & t.mask {
		if t.keys[i] == k {
			return t.vals[i]
		}
	}
	return -1
}

// grow doubles the slots in use, keeping the keys.
func (t *idTable) grow() {
	keys, vals := t.keys[:t.mask+1], t.vals[:t.mask+1]
	t.keys, t.vals = nil, nil // fresh arrays: the old ones are read while these fill
	t.reset(2 * t.max)
	for x, k := range keys {
		if k != 0 {
			t.put(k-1, vals[x])
		}
	}
}

// numbering numbers the sources of one block: global vertex id → position
// in the block's sources. It holds either an idTable, of memory
// proportional to the block, or, when the graph is so small that it costs
// no more memory, an array indexed by vertex (−1 where unnumbered), which
// is faster to probe (a table probe misses the cache more: on R-MAT
// scale 20 relabel takes about 1.6× as long with the table as with the
// array). Either way its memory is proportional to the block.
type numbering struct {
	tab   idTable
	pos   []int32 // −1 everywhere between blocks
	dense bool    // this block uses pos
}

// numberingMode forces the table (numberTable) or the array (numberArray)
// for every block; numberAuto (the default) chooses by size. For tests.
var numberingMode = numberAuto

const (
	numberAuto = iota
	numberTable
	numberArray
)

// tableBytesPerSlot is an idTable's memory per slot.
const tableBytesPerSlot = 8 + 4

// reset empties s for a block of about m sources over a graph of n
// vertices: an array of n entries when it is no larger (4n bytes) than the
// table for m would be, else the table.
func (s *numbering) reset(m int, n int64) {
	slots := int64(tableSlots(m))
	s.dense = numberingMode == numberArray || (numberingMode == numberAuto && 4*n <= tableBytesPerSlot*slots)
	if !s.dense {
		s.tab.reset(m)
		return
	}
	if int64(len(s.pos)) < n {
		s.pos = make([]int32, n)
		for v := range s.pos {
			s.pos[v] = -1
		}
	}
}

// put returns the position of v if v is numbered; otherwise it numbers v
// as x and returns x. x must exceed every position given so far, so that
// the result is x exactly when v is new.
func (s *numbering) put(v int64, x int32) int32 {
	if s.dense {
		p := &s.pos[v]
		if *p < 0 {
			*p = x
		}
		return *p
	}
	return s.tab.put(v, x)
}

// array returns the array of positions by vertex (−1: not numbered) if
// the block uses one, else nil: callers may read and write it directly
// instead of calling put and get.
func (s *numbering) array() []int32 {
	if s.dense {
		return s.pos
	}
	return nil
}

// get returns the position of v, or −1 if v is not numbered.
func (s *numbering) get(v int64) int32 {
	if s.dense {
		return s.pos[v]
	}
	return s.tab.get(v)
}

// done ends the block whose numbered vertices are src.
func (s *numbering) done(src []int64) {
	if s.dense {
		for _, v := range src {
			s.pos[v] = -1
		}
	}
}

// numberings holds numberings between calls.
var numberings = sync.Pool{New: func() any { return new(numbering) }}

// forEach calls fn(b, s) for b in [0, k) on up to GOMAXPROCS goroutines,
// each with its own numbering s (from numberings) for the blocks it
// builds. It will panic with fn's panic.
func forEach(k int, fn func(b int, s *numbering)) {
	g := min(k, runtime.GOMAXPROCS(0))
	if g <= 1 {
		s := numberings.Get().(*numbering)
		for b := range k {
			fn(b, s)
		}
		numberings.Put(s)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var pv any
	for range g {
		wg.Go(func() {
			s := numberings.Get().(*numbering)
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { pv = r })
					return // s may hold a block half built: drop it
				}
				numberings.Put(s)
			}()
			for {
				b := int(next.Add(1) - 1)
				if b >= k {
					return
				}
				fn(b, s)
			}
		})
	}
	wg.Wait()
	if pv != nil {
		panic(pv)
	}
}
