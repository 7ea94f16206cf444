package sampling

// prefetchRow asks the processor to bring the cache lines of the n
// entries from p (at most 512 bytes of them) into its caches, without
// waiting for them: keptRows.pick calls it on a row two rows before it
// draws from it, so that the row's cache misses overlap the draws in
// between. It reads nothing and cannot fault; p may be nil when n is 0.
//
//go:noescape
func prefetchRow(p *int64, n int)
