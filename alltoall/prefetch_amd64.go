package alltoall

import "unsafe"

// canPrefetch reports whether prefetch issues prefetch instructions.
const canPrefetch = true

// prefetch asks for the cache lines of the n > 0 bytes at p (PREFETCHT0),
// without waiting for them: a prefetch retires at once, so the copies
// after it do not wait behind its misses.
//
//go:noescape
func prefetch(p unsafe.Pointer, n int)
