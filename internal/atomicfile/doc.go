// Package atomicfile writes files that readers and crashes never see half
// written: the bytes go to a temporary file in the destination's
// directory, which is synced, renamed over the destination and followed by
// a sync of the directory. A crash leaves the old file or the new one,
// never a torn one (plus, at worst, a temporary file named
// "."+base+".tmp…" beside it).
//
// graph uses it for converted datasets and train for checkpoints.
package atomicfile
