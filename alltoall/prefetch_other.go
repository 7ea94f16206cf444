//go:build !amd64

package alltoall

import "unsafe"

// canPrefetch is false off amd64: gatherRange loads ahead instead.
const canPrefetch = false

// prefetch is not called off amd64.
func prefetch(p unsafe.Pointer, n int) { panic("alltoall: no prefetch here") }
