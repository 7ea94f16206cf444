package prefetch

import "unsafe"

// Enabled reports whether Lines issues prefetch instructions (amd64).
const Enabled = true

// Lines asks for the cache lines of the n > 0 bytes at p (PREFETCHT0),
// without waiting for them: a prefetch retires at once, so the work after
// it does not wait behind its misses as it would behind loads.
//
//go:noescape
func Lines(p unsafe.Pointer, n int)
