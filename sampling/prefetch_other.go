//go:build !amd64

package sampling

// prefetchRow does nothing off amd64 (see prefetch_amd64.go).
func prefetchRow(p *int64, n int) {}
