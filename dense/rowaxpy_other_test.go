//go:build !amd64

package dense

// hasAVX2Kernel is false off amd64.
func hasAVX2Kernel() bool { return false }

// setAVX2 does nothing off amd64.
func setAVX2(bool) func() { return func() {} }
