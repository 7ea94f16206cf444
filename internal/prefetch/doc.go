// Package prefetch asks the CPU for cache lines ahead of their use.
//
// A gather of rows scattered over a table larger than the caches (feature
// rows, adjacency rows) waits on memory. Loads issued ahead of the copy
// hold the copies after them until they return; a prefetch instruction
// retires at once, so the misses of the next rows overlap the copies of
// rows already in cache. Go has no prefetch intrinsic, so Lines is
// assembly, on amd64 only (Enabled).
package prefetch
